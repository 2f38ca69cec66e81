"""The passage lane runs below the query lane's OS priority (Linux: nice is per thread)."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Sequence

import pytest

from pgrecall.config import Settings
from pgrecall.worker.models import EmbedderHost
from pgrecall.worker.scheduler import Job, Scheduler


class _RecordingEmbedder:
    """Returns zero vectors and records the nice value of the thread that called it."""

    model = "test:recording"
    dim = 4

    def __init__(self, seen: dict[str, int]) -> None:
        self.seen = seen

    def _nice(self) -> int:
        return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())

    def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        self.seen["queries"] = self._nice()
        return [[1.0, 0.0, 0.0, 0.0] for _ in texts]

    def embed_passages(self, texts: Sequence[str]) -> list[list[float]]:
        self.seen["passages"] = self._nice()
        return [[0.0, 1.0, 0.0, 0.0] for _ in texts]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread nice is Linux behaviour")
def test_passages_run_at_a_lower_priority_than_queries(settings: Settings) -> None:
    seen: dict[str, int] = {}
    host = EmbedderHost(
        lambda: settings,
        ("test:recording", 4),
        factory=lambda _settings: _RecordingEmbedder(seen),  # type: ignore[arg-type,return-value]
    )
    scheduler = Scheduler(host)
    scheduler.start()
    try:
        for kind in ("queries", "passages"):
            job = Job(kind, ["text"])
            scheduler.submit(job)
            assert job.exception(timeout=60) is None
    finally:
        scheduler.stop()
    # Relative to the caller's own niceness: under `nice -n 10` queries run at 10 and passages at the
    # ceiling, 19 (Linux caps nice there).
    if seen["queries"] >= 19:
        pytest.skip("already at the lowest priority: passages cannot go below queries")
    assert seen["passages"] == min(19, seen["queries"] + 10)
