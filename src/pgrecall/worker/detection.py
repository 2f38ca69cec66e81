"""Language detection in a process of its own, beside the worker's embedding lanes.

Lingua holds the GIL for the whole 7-17 s of building a high-accuracy detector (and while it
detects), which would freeze every thread of the worker (no `status` reply, no query accepted). So
detection runs in a one-process pool, one request at a time; a pool whose process died is replaced
on the next request.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import TYPE_CHECKING, Any

from pgrecall.domain.language import Thresholds
from pgrecall.worker.models import IDLE, LOADING, READY

if TYPE_CHECKING:
    from pgrecall.config import DetectorKind

log = logging.getLogger(__name__)

# In the detection process: one detector per (kind, codes, thresholds), built on first use.
_detectors: dict[tuple[str, tuple[str, ...], Thresholds], Any] = {}
# What the detection process may hold resident at any time, in MiB as the models count it: 250 MB of
# 10^6 bytes (docs/languages.md, "Memory"). A load makes room for itself under it.
RESIDENT_LIMIT_MB = 250e6 / 2**20


def limit_resident_memory() -> None:
    """In the detection process: loads of the compact detector's models make room under the limit."""
    from pgrecall.detection.short_text import lingua_models

    lingua_models().resident_mb = RESIDENT_LIMIT_MB


def _start(parent: int) -> None:
    """In the detection process: its resident limit, and an exit once the worker is gone, however it
    died (kill -9 included)."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(0)

    limit_resident_memory()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s detect[%(process)d] %(message)s")
    threading.Thread(target=watch, name="watch-worker", daemon=True).start()


def _detect(
    kind: DetectorKind, codes: tuple[str, ...], thresholds: Thresholds, texts: list[str]
) -> list[list[Any]]:
    """In the detection process: [iso, confidence] per text (an empty list just builds the detector)."""
    detector = _detectors.get((kind, codes, thresholds))
    if detector is None:
        from pgrecall.detection.detectors import make_detector

        started = time.perf_counter()
        detector = _detectors[kind, codes, thresholds] = make_detector(kind, codes, thresholds)
        log.info("detector for %d languages built in %.2f s", len(codes), time.perf_counter() - started)
    return [[found.iso, found.confidence] for found in map(detector.detect, texts)]


class DetectPool:
    """The detection process, and the load state of each language set for `status`.

    `kind` gives the detector to use (the worker's settings): the parent reads it, so that the
    detection process never imports pgrecall.config, whose pydantic would stay resident beside the
    models for nothing. It is read once, on the first request, as the detection process did before.
    """

    def __init__(self, kind: Callable[[], DetectorKind]) -> None:
        self._read_kind = kind
        self._kind: DetectorKind | None = None
        self._lock = threading.Lock()
        self._pool: ProcessPoolExecutor | None = None
        self._states: dict[str, str] = {}

    def submit(self, codes: tuple[str, ...], thresholds: Thresholds, texts: list[str]) -> Future[Any]:
        """Queue a detection; a detector not yet built is reported 'loading' from now on."""
        key = ",".join(codes)
        if self._kind is None:
            self._kind = self._read_kind()  # outside the lock: settings may take a while to read
        kind = self._kind
        with self._lock:
            if self._states.get(key) != READY:
                self._states[key] = LOADING
            for _ in range(2):
                if self._pool is None:
                    # spawn: a fork of the threaded worker could copy a lock some thread holds.
                    context = multiprocessing.get_context("spawn")
                    self._pool = ProcessPoolExecutor(1, context, _start, (os.getpid(),))
                pool = self._pool
                try:
                    future = pool.submit(_detect, kind, codes, thresholds, texts)
                    break
                except BrokenProcessPool:  # its process died since the last request: a fresh one
                    self._reset(pool)
            else:
                raise BrokenProcessPool("the detection process could not be started")
        future.add_done_callback(lambda done: self._finished(key, pool, done))
        return future

    def _finished(self, key: str, pool: ProcessPoolExecutor, future: Future[Any]) -> None:
        if future.cancelled():
            return
        error = future.exception()
        with self._lock:
            if isinstance(error, BrokenProcessPool):
                log.warning("detection process died: %s", error)
                self._reset(pool)
                self._states[key] = f"failed: detection process died ({error})"
            else:
                self._states[key] = READY if error is None else f"failed: {type(error).__name__}: {error}"

    def _reset(self, pool: ProcessPoolExecutor) -> None:
        # Call with the lock held: a fresh process, which has built nothing yet, on next use.
        if self._pool is pool:
            self._pool = None
            self._states = {k: (LOADING if v == LOADING else IDLE) for k, v in self._states.items()}

    def states(self) -> dict[str, str]:
        """Load state per language set (its sorted codes, comma-separated)."""
        with self._lock:
            return dict(self._states)

    def summary(self) -> str:
        """One state for status: loading if any set is loading, else ready/failed/idle."""
        states = self.states()
        for wanted in (LOADING, READY):
            if wanted in states.values():
                return wanted
        return next(iter(states.values()), IDLE)

    def stop(self) -> None:
        """Drop queued work and end the process, even one building a detector."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            for process in list((getattr(pool, "_processes", None) or {}).values()):
                process.kill()
            pool.shutdown(wait=True, cancel_futures=True)
