"""What a running server holds: the open App, metrics, and the background re-embedding worker."""

from __future__ import annotations

import logging
import threading
import uuid
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool

from pgrecall.app import App
from pgrecall.embeddings.base import EmbeddingError
from pgrecall.errors import PgrecallError
from pgrecall.models import SimilarEntry, snippet
from pgrecall.observability import Metrics
from pgrecall.overlap import overlap
from pgrecall.reembed import reembed_owner
from pgrecall.search import MAX_QUERY_CHARS
from pgrecall.store.entries import Entry

log = logging.getLogger(__name__)


class ReembedWorker:
    """Fills pending vectors of the server's owner in the background (a thread: the store is sync)."""

    def __init__(self, app: App, metrics: Metrics, *, interval_s: float = 30.0, batch_size: int = 32) -> None:
        self.app = app
        self.metrics = metrics
        self.interval_s = interval_s
        self.batch_size = batch_size
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        # Owners whose writes left vectors pending. Under row-level security the server
        # cannot list every owner, so it remembers the ones it wrote for.
        self._owners: set[str] = {app.settings.owner}
        self._owners_lock = threading.Lock()
        self.rounds = 0

    def start(self) -> None:
        """Start the worker thread (idempotent)."""
        if self._thread is None and self.app.embedder is not None:
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
        """One round: fill pending vectors of the known owners, refresh the gauge; returns vectors filled."""
        embedder = self.app.embedder
        if embedder is None:
            return 0
        with self._owners_lock:
            owners = sorted(self._owners)
        filled = 0
        pending = 0
        for owner in owners:
            try:
                filled += reembed_owner(
                    self.app.store, embedder, owner, batch_size=self.batch_size, max_batches=50
                )
                left = self.app.store.pending_count(owner, embedder.model)
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
            if left == 0 and owner != self.app.settings.owner:
                with self._owners_lock:
                    self._owners.discard(owner)
        self.metrics.pending_vectors.set(pending)
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


NEAR_DUPLICATE_OVERLAP = 0.5


def _similar(entry: Entry, score: float, *, exact: bool) -> SimilarEntry:
    return SimilarEntry(
        id=str(entry.id),
        title=entry.title,
        snippet=snippet(entry.body),
        content_hash=entry.content_hash,
        overlap=round(score, 4),
        exact=exact,
    )


class Runtime:
    """The server's state: opened once per process, shared by every MCP session."""

    def __init__(self, app: App, *, reembed_interval_s: float = 30.0) -> None:
        self.app = app
        self.metrics = Metrics()
        self.reembed = ReembedWorker(app, self.metrics, interval_s=reembed_interval_s)

    @property
    def pool(self) -> ConnectionPool[psycopg.Connection[dict[str, Any]]]:
        """The open connection pool."""
        assert self.app.pool is not None
        return self.app.pool

    @property
    def active_model(self) -> str | None:
        """Model of the active embedder (None: no embedder)."""
        return self.app.embedder.model if self.app.embedder is not None else None

    def ping(self) -> None:
        """Raise unless the database answers (health checks)."""
        assert self.app.pool is not None
        with self.app.pool.connection(timeout=5) as conn:
            conn.execute("SELECT 1")

    def candidates_like(self, entry: Entry) -> list[Entry]:
        """Entries a search with this entry's text ranks highest (near-duplicate candidates)."""
        query = " ".join(entry.body.split())[:MAX_QUERY_CHARS].strip()
        if not query:
            return []
        try:
            result = self.app.search.search(entry.owner, query, top_k=5)
        except PgrecallError as exc:  # the notice is a courtesy; the write already succeeded
            log.warning("near-duplicate lookup failed: %s", exc)
            return []
        ids = [uuid.UUID(hit.id) for hit in result.hits if hit.id != str(entry.id)]
        found = self.app.store.many(entry.owner, ids)
        return [found[i] for i in ids if i in found]

    def similar_entries(self, entry: Entry, limit: int = 3) -> list[SimilarEntry]:
        """Existing entries that look like near-duplicates of `entry` (same hash, or shingle overlap ≥ 0.5).

        Candidates come from the exact hash and from a hybrid search with the entry's own text;
        the verdict is text overlap, not a cosine threshold (cosine bands differ by model).
        """
        owner = entry.owner
        found: dict[str, SimilarEntry] = {}
        for other in self.app.store.by_hash(owner, entry.content_hash, limit + 1):
            if other.id != entry.id:
                found[str(other.id)] = _similar(other, 1.0, exact=True)
        for other in self.candidates_like(entry):
            if str(other.id) in found or other.id == entry.id:
                continue
            score = overlap(entry.body, other.body)
            if score >= NEAR_DUPLICATE_OVERLAP:
                found[str(other.id)] = _similar(other, score, exact=other.content_hash == entry.content_hash)
        ranked = sorted(found.values(), key=lambda s: (-s.overlap, s.id))
        return ranked[:limit]
