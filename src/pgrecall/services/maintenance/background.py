"""Background re-embedding: fills pending vectors of every owner, in a thread.

Owners come from two places: the ones this server wrote for (poked after each write that left a
vector pending) and, at start and then every `discover_interval_s`, a cross-owner listing of the
owners with pending vectors (so vectors left pending by an outage are filled after a restart even
for owners that never write again). Each round is bounded (batches per owner), resumable (it reads
only rows still pending) and runs in its own thread, never on a caller's path.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from pgrecall.embeddings.base import Embedder, EmbeddingError
from pgrecall.errors import PgrecallError
from pgrecall.services.maintenance.reembed import reembed_owner
from pgrecall.store.entries import EntryStore

log = logging.getLogger(__name__)

# Lists owners with pending vectors of a model, in pages: (model, after=, limit=) -> owners.
Discover = Callable[..., list[str]]


class BackgroundReembed:
    """Fills pending vectors in the background (a thread: the store is synchronous)."""

    def __init__(
        self,
        store: EntryStore,
        embedder: Embedder | None,
        default_owner: str,
        *,
        on_pending: Callable[[int], None] | None = None,
        interval_s: float = 30.0,
        retry_s: float = 2.0,
        batch_size: int = 32,
        discover: Discover | None = None,
        discover_interval_s: float = 600.0,
        max_batches: int = 50,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.default_owner = default_owner
        self.on_pending = on_pending
        self.interval_s = interval_s
        # After a round the embedder cut short, the next comes sooner, doubling up to interval_s: a
        # brief outage heals in seconds, a long one is not polled more than before.
        self.retry_s = retry_s
        self._cut_short = 0  # rounds in a row the embedder cut short
        self.batch_size = batch_size
        self.max_batches = max_batches
        self.discover = discover
        self.discover_interval_s = discover_interval_s
        self._next_discovery = 0.0  # the first round looks for every owner's pending vectors
        self._discovered_after = ""
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        # Owners whose writes left vectors pending, plus those `discover` found (under row-level
        # security the server's own statements cannot list other owners).
        self._owners: set[str] = {default_owner}
        self._owners_lock = threading.Lock()
        self.rounds = 0

    @property
    def next_round_s(self) -> float:
        """How long the thread waits for the next round unless a write pokes it sooner."""
        if self._cut_short == 0:
            return self.interval_s
        return min(self.interval_s, self.retry_s * 2.0 ** (self._cut_short - 1))

    def start(self) -> None:
        """Start the worker thread (idempotent)."""
        if self._thread is None and self.embedder is not None:
            self._thread = threading.Thread(target=self._run, name="pgrecall-reembed", daemon=True)
            # The first round runs at once: vectors left pending before a restart need no new write.
            self._wake.set()
            self._thread.start()

    def poke(self, owner: str) -> None:
        """A write of `owner` left a vector pending: run a round soon rather than at the next interval."""
        with self._owners_lock:
            self._owners.add(owner)
        self._wake.set()

    def stop(self, timeout: float = 10.0) -> None:
        """Stop after the current batch."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def run_once(self) -> int:
        """One round: fill pending vectors of known owners, report what is left; returns vectors filled."""
        embedder = self.embedder
        if embedder is None:
            return 0
        self._discover(embedder.model)
        with self._owners_lock:
            owners = sorted(self._owners)
        filled = 0
        pending = 0
        for owner in owners:
            if self._stop.is_set():
                return filled
            try:
                filled += reembed_owner(
                    self.store, embedder, owner, batch_size=self.batch_size, max_batches=self.max_batches
                )
                left = self.store.pending_count(owner, embedder.model)
            except EmbeddingError as exc:
                log.warning("background re-embedding paused: %s", exc)
                self._cut_short += 1
                return filled
            except PgrecallError as exc:
                log.warning("background re-embedding failed: %s", exc)
                continue
            except Exception as exc:  # the database may be restarting; the next round retries
                log.warning("background re-embedding round failed: %s", exc)
                continue
            pending += left
            if left == 0 and owner != self.default_owner:
                with self._owners_lock:
                    self._owners.discard(owner)
        if self.on_pending is not None:
            self.on_pending(pending)
        self._cut_short = 0
        self.rounds += 1
        return filled

    def _discover(self, model: str) -> None:
        """Add owners with pending vectors (one bounded page per due discovery) to the known ones."""
        if self.discover is None or time.monotonic() < self._next_discovery:
            return
        page = 1000
        try:
            found = self.discover(model, after=self._discovered_after, limit=page)
        except Exception as exc:  # the database may be restarting; known owners still get their round
            log.warning("listing owners with pending vectors failed: %s", exc)
            return
        # A full page: more owners follow, so the next round continues after the last one.
        self._discovered_after = found[-1] if len(found) == page else ""
        if not self._discovered_after:
            self._next_discovery = time.monotonic() + self.discover_interval_s
        if found:
            log.info("pending vectors found for %d owner(s)", len(found))
        with self._owners_lock:
            self._owners.update(found)

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(self.next_round_s)
            self._wake.clear()
            if self._stop.is_set():
                break
            try:
                self.run_once()
            except Exception:  # a worker must outlive any single failure
                log.exception("background re-embedding round crashed")
