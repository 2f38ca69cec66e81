"""The composition root: one App per process opens the database and builds every service on it."""

from __future__ import annotations

import logging
from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg_pool import ConnectionPool

from pgrecall.config import Settings
from pgrecall.db import migrate
from pgrecall.db.database import APP_ROLE, Database
from pgrecall.detection.detectors import in_process_backend
from pgrecall.domain.language import DetectBackend, Detection, LanguageCatalog, LanguageDetector, Thresholds
from pgrecall.embeddings import CachedQueryEmbedder, create_embedder
from pgrecall.embeddings.base import Embedder, EmbeddingError
from pgrecall.services.activity import ActivityService
from pgrecall.services.citations import CitationService
from pgrecall.services.document_files import DocumentFiles
from pgrecall.services.documents import DocumentService
from pgrecall.services.duplicates import NearDuplicates
from pgrecall.services.entries import EntryService
from pgrecall.services.highlight import Highlighter
from pgrecall.services.links import LinkService
from pgrecall.services.maintenance.background import BackgroundReembed
from pgrecall.services.maintenance.service import Maintenance
from pgrecall.services.retrieval import RetrievalService
from pgrecall.services.search import SearchService
from pgrecall.services.tokens import TokenService
from pgrecall.store.activity import ActivityStore
from pgrecall.store.catalog import read_catalog
from pgrecall.store.documents import DocumentStore
from pgrecall.store.entries import EntryStore
from pgrecall.store.links import LinkStore
from pgrecall.store.pending import PendingOwners
from pgrecall.store.redetect import RedetectStore

if TYPE_CHECKING:
    from pgrecall.worker.client import WorkerClient

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
        # "settings": the provider PGRECALL_EMBEDDER names, in the shared model worker or (models =
        # in-process) loaded lazily in this process; None: no embedder, every vector stays pending.
        # Query vectors are cached in memory (bounded, never persisted): assistants repeat queries.
        self.worker: WorkerClient | None = None
        self._embedder: Embedder | None = None
        # Background and operator passes may wait as long as a long passage needs; calls on a
        # caller's path are bounded by embedding_total_timeout_s (see _settings_embedder).
        self._maintenance_embedder: Embedder | None = None
        if isinstance(embedder, str):
            self._embedder = CachedQueryEmbedder(self._settings_embedder())
        else:
            self._embedder = self._maintenance_embedder = embedder
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
        self.documents: DocumentService
        self.document_files: DocumentFiles
        self.retrieval: RetrievalService
        self.duplicates: NearDuplicates
        self.citations: CitationService
        self.tokens: TokenService
        self.highlighter: Highlighter
        self.activity: ActivityService
        self.links: LinkService
        self.maintenance: Maintenance
        self.pending_owners: PendingOwners

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
            self.detector = LanguageDetector(self.catalog, self._detect_backend())
            self.store = EntryStore(self.pool)
            self.entries = EntryService(
                self.settings, self.store, self.catalog, self.detector, self._embedder
            )
            self.documents = DocumentService(self.settings, DocumentStore(self.pool), self.entries)
            self.document_files = DocumentFiles(self.documents)
            self.search = SearchService(self.settings, self.pool, self.catalog, self._embedder)
            self.retrieval = RetrievalService(self.search, self.store)
            self.duplicates = NearDuplicates(self.search, self.store)
            self.citations = CitationService(self.store)
            self.tokens = TokenService(self.pool)
            self.highlighter = Highlighter(self.pool)
            self.activity = ActivityService(ActivityStore(self.pool))
            self.links = LinkService(LinkStore(self.pool), self.store)
            self.maintenance = Maintenance(
                self.store, RedetectStore(self.pool), self._maintenance_embedder, self.detector
            )
            # As the login role, not the pool's restricted one: see store/pending.py.
            self.pending_owners = PendingOwners(
                self.db.connect, statement_timeout_ms=self.settings.statement_timeout_ms
            )
        except BaseException:
            self.close()
            raise

    def _settings_embedder(self) -> Embedder:
        if self.settings.models == "in-process":
            # An http provider bounds each call itself; the bundled models compute in this process.
            self._maintenance_embedder = create_embedder(self.settings)
            return self._maintenance_embedder
        from pgrecall.embeddings.factory import expected_identity
        from pgrecall.worker.client import WorkerClient, WorkerEmbedder

        self.worker = WorkerClient(self.settings, grace_s=self.settings.worker_idle_s)
        identity = expected_identity(self.settings)
        self._maintenance_embedder = WorkerEmbedder(self.worker, identity)
        # A caller's write or search gives up on the worker after this long (the entry is stored
        # with its vector pending, the search runs lexical-only); a long passage is then embedded
        # by the background pass, which has no total bound.
        return WorkerEmbedder(self.worker, identity, total_timeout_s=self.settings.embedding_total_timeout_s)

    @property
    def thresholds(self) -> Thresholds:
        """When a detected language is trusted (PGRECALL_DETECT_*)."""
        return Thresholds(
            min_letters=self.settings.detect_min_chars,
            min_confidence=self.settings.detect_min_confidence,
            min_ratio=self.settings.detect_min_ratio,
        )

    def _detect_backend(self) -> DetectBackend:
        if self.settings.models == "in-process":
            return in_process_backend(self.catalog, self.thresholds, self.settings.detector)
        from pgrecall.worker.client import WorkerClient, WorkerDetector

        if self.worker is None:  # no embedder asked for, but detection still runs in the worker
            self.worker = WorkerClient(self.settings, grace_s=self.settings.worker_idle_s)
        # Bounded like the embedding, so one write waits at most twice embedding_total_timeout_s
        # for the models (a detection that times out stores 'simple'; redetect-language fixes it).
        worker = WorkerDetector(self.worker, timeout_s=self.settings.embedding_total_timeout_s)
        codes = self.catalog.supported_codes()
        limits = self.thresholds

        def detect(text: str) -> Detection:
            try:
                return worker.detect(text, codes, limits)
            except EmbeddingError as exc:
                # The write goes on: unstemmed ('simple') rather than lost; redetect-language fixes it.
                log.warning("language detection unavailable, storing as 'simple': %s", exc)
                return Detection(None, None)

        return detect

    def warm_models(self) -> None:
        """Have the worker start loading the embedder now (returns at once).

        The detector is not warmed: it loads per language on the first write that needs it, and a
        warm-up of every language would take the CPU from other windows still starting.
        """
        if self.worker is not None and self._embedder is not None:
            self.worker.warm()

    def background_reembed(
        self, *, on_pending: Callable[[int], None] | None = None, interval_s: float = 30.0
    ) -> BackgroundReembed:
        """The background pass filling pending vectors of every owner (not started)."""
        return BackgroundReembed(
            self.store,
            self._maintenance_embedder,
            self.settings.owner,
            on_pending=on_pending,
            interval_s=interval_s,
            discover=self.pending_owners,
        )

    @property
    def background_embedder(self) -> Embedder | None:
        """The provider background and operator passes use (no total bound on a call)."""
        return self._maintenance_embedder

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
        """Close the pool, release the database and the model worker."""
        if self.pool is not None:
            self.pool.close()
            self.pool = None
        if self.worker is not None:
            self.worker.close()
        self.db.close()
