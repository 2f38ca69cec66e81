"""Background re-embedding: fills pending vectors of the owners a server wrote for, in a thread."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from pgrecall.embeddings.base import Embedder, EmbeddingError
from pgrecall.errors import PgrecallError
from pgrecall.services.maintenance.reembed import reembed_owner
from pgrecall.store.entries import EntryStore

log = logging.getLogger(__name__)


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
        batch_size: int = 32,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.default_owner = default_owner
        self.on_pending = on_pending
        self.interval_s = interval_s
        self.batch_size = batch_size
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        # Owners whose writes left vectors pending. Under row-level security the server
        # cannot list every owner, so it remembers the ones it wrote for.
        self._owners: set[str] = {default_owner}
        self._owners_lock = threading.Lock()
        self.rounds = 0

    def start(self) -> None:
        """Start the worker thread (idempotent)."""
        if self._thread is None and self.embedder is not None:
            self._thread = threading.Thread(target=self._run, name="pgrecall-reembed", daemon=True)
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
        with self._owners_lock:
            owners = sorted(self._owners)
        filled = 0
        pending = 0
        for owner in owners:
            try:
                filled += reembed_owner(
                    self.store, embedder, owner, batch_size=self.batch_size, max_batches=50
                )
                left = self.store.pending_count(owner, embedder.model)
            except EmbeddingError as exc:
                log.warning("background re-embedding paused: %s", exc)
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
        self.rounds += 1
        return filled

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(self.interval_s)
            self._wake.clear()
            if self._stop.is_set():
                break
            try:
                self.run_once()
            except Exception:  # a worker must outlive any single failure
                log.exception("background re-embedding round crashed")
