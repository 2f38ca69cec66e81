"""Wiring: one App per process holds the database, pool, language tools, embedder and services."""

from __future__ import annotations

import logging
from types import TracebackType
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool

from pgrecall import schema
from pgrecall.config import Settings
from pgrecall.db import APP_ROLE, Database
from pgrecall.embeddings import CachedQueryEmbedder, create_embedder
from pgrecall.embeddings.base import Embedder
from pgrecall.language import LanguageCatalog, LanguageDetector
from pgrecall.retrieval_service import RetrievalService
from pgrecall.search import SearchService
from pgrecall.service import EntryService
from pgrecall.store.entries import EntryStore

log = logging.getLogger(__name__)


class App:
    """Everything a front end needs, opened together and closed together."""

    def __init__(
        self,
        settings: Settings,
        *,
        embedder: Embedder | str | None = "settings",
        check_schema: bool = True,
        restricted: bool = False,
    ) -> None:
        self.settings = settings
        self.db = Database(settings)
        # "settings": the provider PGRECALL_EMBEDDER names (it loads lazily, on first use);
        # None: no embedder at all, every vector stays pending.
        # Query vectors are cached in memory (bounded, never persisted): assistants repeat queries.
        self._embedder: Embedder | None = (
            CachedQueryEmbedder(create_embedder(settings)) if isinstance(embedder, str) else embedder
        )
        self._check_schema = check_schema
        # restricted: run as the row-level-security role (the MCP server); else as the login
        # role (operator commands that work across owners).
        self._role = APP_ROLE if restricted else None
        self.pool: ConnectionPool[psycopg.Connection[dict[str, Any]]] | None = None
        # Set by open():
        self.catalog: LanguageCatalog
        self.detector: LanguageDetector
        self.store: EntryStore
        self.entries: EntryService
        self.search: SearchService
        self.retrieval: RetrievalService

    def __enter__(self) -> App:
        self.open()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def open(self) -> None:
        """Reach the database, check the schema, build the services."""
        url = self.db.open()
        try:
            if self._check_schema:
                schema.require_head(url, embedded=self.settings.embedded)
            self.pool = self.db.make_pool(role=self._role)
            with self.pool.connection() as conn:
                self.catalog = LanguageCatalog.from_connection(conn)
            self.detector = LanguageDetector(
                self.catalog,
                min_letters=self.settings.detect_min_chars,
                min_confidence=self.settings.detect_min_confidence,
                min_ratio=self.settings.detect_min_ratio,
                high_accuracy=self.settings.detect_high_accuracy,
            )
            self.store = EntryStore(self.pool)
            self.entries = EntryService(
                self.settings, self.store, self.catalog, self.detector, self._embedder
            )
            self.search = SearchService(self.settings, self.pool, self.catalog, self._embedder)
            self.retrieval = RetrievalService(self.search, self.store)
        except BaseException:
            self.close()
            raise

    @property
    def embedder(self) -> Embedder | None:
        """The active embedding provider (None: vectors stay pending)."""
        return self._embedder

    def stats(self, owner: str) -> dict[str, Any]:
        """Counts by language and kind, pending vectors, embedding model, schema revision."""
        counts = self.store.counts(owner)
        model = self._embedder.model if self._embedder is not None else None
        return {
            "owner": owner,
            "entries": counts["state"].get("live", 0),
            "deleted": counts["state"].get("deleted", 0),
            "by_language": counts["language"],
            "by_kind": counts["kind"],
            "vectors_by_model": counts["vector_model"],
            "pending_vectors": self.store.pending_count(owner, model)
            if model
            else counts["state"].get("live", 0),
            "embedding_model": model,
            "embedding_dim": self._embedder.dim if self._embedder is not None else None,
            "schema_revision": self.store.schema_revision(),
        }

    def close(self) -> None:
        """Close the pool and release the database."""
        if self.pool is not None:
            self.pool.close()
            self.pool = None
        self.db.close()
