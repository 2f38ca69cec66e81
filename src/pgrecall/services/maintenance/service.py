"""The maintenance passes operators run over every owner: fill pending vectors, re-detect languages."""

from __future__ import annotations

from collections.abc import Callable

from pgrecall.domain.language import LanguageDetector
from pgrecall.embeddings.base import Embedder
from pgrecall.errors import ConfigurationError
from pgrecall.services.maintenance.redetect import RedetectReport, redetect_languages
from pgrecall.services.maintenance.reembed import reembed_all
from pgrecall.store.entries import EntryStore
from pgrecall.store.redetect import RedetectStore


class Maintenance:
    """Cross-owner passes for operator commands (they run as the login role, not under RLS)."""

    def __init__(
        self,
        store: EntryStore,
        redetect_store: RedetectStore,
        embedder: Embedder | None,
        detector: LanguageDetector,
    ) -> None:
        self.store = store
        self.redetect_store = redetect_store
        self.embedder = embedder
        self.detector = detector

    def _embedder(self) -> Embedder:
        if self.embedder is None:
            raise ConfigurationError("no embedder configured")
        return self.embedder

    def pending_total(self) -> int:
        """Entries of every owner without a vector of the active model."""
        return self.store.pending_total(self._embedder().model)

    def reembed(
        self, *, batch_size: int = 32, on_batch: Callable[[int], None] | None = None
    ) -> dict[str, int]:
        """Fill every pending vector, owner by owner (resumable); owner → vectors filled."""
        return reembed_all(self.store, self._embedder(), batch_size=batch_size, on_batch=on_batch)

    def redetect_count(self, owner: str | None, only_simple: bool, include_explicit: bool = False) -> int:
        """How many entries a re-detection pass would scan."""
        return self.redetect_store.count(owner, only_simple, include_explicit)

    def redetect(
        self,
        *,
        owner: str | None = None,
        only_simple: bool = False,
        include_explicit: bool = False,
        dry_run: bool = False,
        batch_size: int = 200,
        on_batch: Callable[[int], object] | None = None,
    ) -> RedetectReport:
        """Detect stored entries' languages again, explicit choices kept (see redetect_languages)."""
        return redetect_languages(
            self.redetect_store,
            self.detector,
            owner=owner,
            only_simple=only_simple,
            include_explicit=include_explicit,
            dry_run=dry_run,
            batch_size=batch_size,
            on_batch=on_batch,
        )
