"""The composition root: one App per process opens the database and builds every service on it."""

from __future__ import annotations

import logging
from types import TracebackType
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool

from pgrecall.config import Settings
from pgrecall.db import migrate
from pgrecall.db.database import APP_ROLE, Database
from pgrecall.domain.language import LanguageCatalog, LanguageDetector
from pgrecall.embeddings import CachedQueryEmbedder, create_embedder
from pgrecall.embeddings.base import Embedder
from pgrecall.services.citations import CitationService
from pgrecall.services.duplicates import NearDuplicates
from pgrecall.services.entries import EntryService
from pgrecall.services.maintenance.service import Maintenance
from pgrecall.services.retrieval import RetrievalService
from pgrecall.services.search import SearchService
from pgrecall.services.tokens import TokenService
from pgrecall.store.catalog import read_catalog
from pgrecall.store.entries import EntryStore
from pgrecall.store.redetect import RedetectStore

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
        self.duplicates: NearDuplicates
        self.citations: CitationService
        self.tokens: TokenService
        self.maintenance: Maintenance

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
                migrate.require_head(url, embedded=self.settings.embedded)
            self.pool = self.db.make_pool(role=self._role)
            self.catalog = read_catalog(self.pool)
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
            self.duplicates = NearDuplicates(self.search, self.store)
            self.citations = CitationService(self.store)
            self.tokens = TokenService(self.pool)
            self.maintenance = Maintenance(
                self.store, RedetectStore(self.pool), self._embedder, self.detector
            )
        except BaseException:
            self.close()
            raise

    @property
    def embedder(self) -> Embedder | None:
        """The active embedding provider (None: vectors stay pending)."""
        return self._embedder

    @property
    def active_model(self) -> str | None:
        """Model of the active embedder (None: no embedder)."""
        return self._embedder.model if self._embedder is not None else None

    def ping(self) -> None:
        """Raise unless the database answers (health checks)."""
        assert self.pool is not None
        with self.pool.connection(timeout=5) as conn:
            conn.execute("SELECT 1")

    def close(self) -> None:
        """Close the pool and release the database."""
        if self.pool is not None:
            self.pool.close()
            self.pool = None
        self.db.close()
