"""Entry use cases: validate, resolve the language, hash, embed (or leave pending), store."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pgrecall.config import Settings
from pgrecall.domain.currency import ChainLink, parse_expiry
from pgrecall.domain.entries import (
    Entry,
    EntryChanges,
    EntryFilters,
    NewEntry,
    Page,
    embedding_text,
    vector_pending,
)
from pgrecall.domain.language import SEGMENTED, LanguageCatalog, LanguageDetector, Resolved
from pgrecall.domain.text import content_hash
from pgrecall.domain.validation import (
    MAX_LIST_LIMIT,
    check_body,
    check_cursor,
    check_filters,
    check_idempotency_key,
    check_kind,
    check_limit,
    check_metadata,
    check_source,
    check_tags,
    check_title,
)
from pgrecall.embeddings.base import Embedder, EmbeddingError
from pgrecall.errors import InvalidInputError, NotFoundError
from pgrecall.services.ids import MIN_TYPED_PART, resolve_id
from pgrecall.store.currency import CurrencyStore
from pgrecall.store.entries import EntryStore

log = logging.getLogger(__name__)

_UNSET: Any = object()


@dataclass(frozen=True)
class Stats:
    """An owner's store in figures."""

    owner: str
    entries: int
    deleted: int
    by_language: dict[str, int]
    unsupported_languages: dict[str, int]  # live 'simple' entries by the language we could not stem
    by_kind: dict[str, int]
    vectors_by_model: dict[str, int]
    pending_vectors: int
    embedding_model: str | None
    embedding_dim: int | None
    schema_revision: str | None


@dataclass(frozen=True)
class Written:
    """An entry as written, with how its language was chosen and whether its vector is pending."""

    entry: Entry
    language: Resolved
    vector_pending: bool
    replay: bool = False  # an idempotency key matched an earlier write; nothing new was stored
    # The vector just stored (never returned to callers): the near-duplicate lookup reuses it
    # instead of embedding the same text a second time.
    vector: list[float] | None = None


class EntryService:
    """The write and read paths every front end (CLI, MCP) goes through."""

    def __init__(
        self,
        settings: Settings,
        store: EntryStore,
        catalog: LanguageCatalog,
        detector: LanguageDetector,
        embedder: Embedder | None,
    ) -> None:
        self.settings = settings
        self.store = store
        self.catalog = catalog
        self.detector = detector
        self.embedder = embedder
        self.chains = CurrencyStore(store.pool)

    def _embed(self, title: str | None, body: str) -> list[float] | None:
        if self.embedder is None:
            return None
        try:
            return self.embedder.embed_passages([embedding_text(title, body)])[0]
        except EmbeddingError as exc:
            # The write must not be lost: store it now, the vector is filled by re-embedding.
            log.warning("embedding failed; entry stored with its vector pending", extra={"error": str(exc)})
            return None

    def add(
        self,
        owner: str,
        *,
        text: str,
        title: str | None = None,
        tags: Sequence[str] | None = None,
        source: str | None = None,
        kind: str | None = None,
        metadata: dict[str, Any] | None = None,
        language: str | None = None,
        idempotency_key: str | None = None,
        expires_at: str | datetime | None = None,
        supersedes: str | uuid.UUID | None = None,
    ) -> Written:
        """Validate and store one entry; the vector is pending if the embedder fails.

        The same idempotency_key twice (per owner) stores one entry; the second call gets
        the first entry back, even if its other arguments differ. `expires_at`: an ISO time or
        a duration from now; `supersedes`: the id of an earlier entry this one replaces.
        """
        key = check_idempotency_key(idempotency_key)
        if key is not None:
            earlier = self.store.by_idempotency_key(owner, key)
            if earlier is not None:
                return self._replay(earlier)
        body = check_body(text, self.settings.max_text_chars)
        clean_title = check_title(title)
        expiry = parse_expiry(expires_at, datetime.now(UTC)) if expires_at is not None else None
        replaced = self._check_supersedes(owner, supersedes) if supersedes is not None else None
        resolved = self.detector.resolve(language, f"{clean_title or ''}\n{body}")
        new = NewEntry(
            body=body,
            content_hash=content_hash(body),
            language=resolved.regconfig,
            kind=check_kind(kind),
            source=check_source(source),
            title=clean_title,
            tags=check_tags(tags),
            metadata=check_metadata(metadata),
            idempotency_key=key,
            detected_language=resolved.detected,
            language_how=resolved.how,
            language_confidence=resolved.confidence,
            expires_at=expiry,
            supersedes=replaced,
        )
        vector = self._embed(clean_title, body)
        if vector is not None and self.embedder is not None:
            new = NewEntry(**{**new.__dict__, "embedding": vector, "embedding_model": self.embedder.model})
        entry, created = self.store.create(owner, new)
        if not created:
            return self._replay(entry)
        return Written(entry, resolved, self._pending(entry), vector=vector)

    def _replay(self, entry: Entry) -> Written:
        return Written(**{**self.as_kept(entry).__dict__, "replay": True})

    def as_kept(self, entry: Entry) -> Written:
        """An unchanged stored entry in the shape of a write result."""
        return Written(entry, self._kept(entry), self._pending(entry))

    def _kept(self, entry: Entry) -> Resolved:
        return Resolved(
            entry.language, self.catalog.iso_for(entry.language), "kept", detected=entry.detected_language
        )

    def _pending(self, entry: Entry) -> bool:
        return vector_pending(entry, self.embedder.model if self.embedder is not None else None)

    def resolve_id(self, owner: str, given: str, *, include_deleted: bool = False) -> uuid.UUID:
        """The one entry whose id is `given` or starts or ends with it, typed by hand (4 digits on)."""
        return resolve_id(self.store, owner, given, include_deleted=include_deleted, minimum=MIN_TYPED_PART)

    def _id(self, owner: str, given: str | uuid.UUID, field: str = "id") -> uuid.UUID:
        return resolve_id(self.store, owner, given, field=field)

    def get(self, owner: str, entry_id: str | uuid.UUID, *, include_deleted: bool = False) -> Entry:
        """One entry by id."""
        return self.store.get(owner, self._id(owner, entry_id), include_deleted=include_deleted)

    def update(
        self,
        owner: str,
        entry_id: str | uuid.UUID,
        *,
        text: str | None = None,
        title: str | None = _UNSET,
        tags: Sequence[str] | None = None,
        source: str | None = _UNSET,
        kind: str | None = None,
        metadata: dict[str, Any] | None = None,
        language: str | None = None,
        expected_version: int | None = None,
        expires_at: str | datetime | None = _UNSET,
        supersedes: str | uuid.UUID | None = _UNSET,
    ) -> Written:
        """Change the given fields; text or title changes re-hash and re-embed, language changes re-stem.

        Without `language`, an entry keeps its language, except one stored as 'simple'
        whose text changes: that one is detected again.
        """
        ident = self._id(owner, entry_id)
        current = self.store.get(owner, ident)
        set_expiry = expires_at is not _UNSET
        expiry = None
        if set_expiry and expires_at is not None and expires_at != "":
            expiry = parse_expiry(expires_at, datetime.now(UTC))
        set_replaced = supersedes is not _UNSET
        replaced = None
        if set_replaced and supersedes is not None and supersedes != "":
            replaced = self._check_supersedes(owner, supersedes, entry_id=ident)
        body = check_body(text, self.settings.max_text_chars) if text is not None else None
        set_title = title is not _UNSET
        new_title = check_title(title) if set_title else current.title
        body_changed = body is not None and body != current.body
        text_changed = body_changed or (set_title and new_title != current.title)
        if text_changed and current.document_id is not None:
            # A chunk's text is a span of its document, byte for byte what citations quote.
            raise InvalidInputError(
                "text" if body_changed else "title",
                f"{ident} is a chunk of document {current.document_id}: change the document and "
                "ingest it again (its tags and metadata may be changed here)",
            )
        resolved: Resolved | None = None
        if language is not None and language.strip():
            resolved = self.catalog.resolve_for_entry(language)
        elif body is not None and current.language == "simple":
            resolved = self.detector.detect(f"{new_title or ''}\n{body}")
        vector = self._embed(new_title, body if body is not None else current.body) if text_changed else None
        changes = EntryChanges(
            kind=check_kind(kind) if kind is not None else None,
            source=check_source(source) if source is not _UNSET else None,
            set_source=source is not _UNSET,
            title=new_title,
            set_title=set_title,
            body=body,
            content_hash=content_hash(body) if body is not None else None,
            tags=check_tags(tags) if tags is not None else None,
            metadata=check_metadata(metadata) if metadata is not None else None,
            language=resolved.regconfig if resolved is not None else None,
            detected_language=resolved.detected if resolved is not None else None,
            language_how=resolved.how if resolved is not None else None,
            language_confidence=resolved.confidence if resolved is not None else None,
            reset_embedding=text_changed,
            embedding=vector,
            embedding_model=self.embedder.model if vector is not None and self.embedder is not None else None,
            expires_at=expiry,
            set_expires_at=set_expiry,
            supersedes=replaced,
            set_supersedes=set_replaced,
        )
        entry = self.store.update(owner, ident, changes, expected_version=expected_version)
        final = resolved or self._kept(entry)
        return Written(entry, final, self._pending(entry))

    def _check_supersedes(
        self, owner: str, value: str | uuid.UUID, *, entry_id: uuid.UUID | None = None
    ) -> uuid.UUID:
        """The id an entry may supersede: the owner's (deleted ones too), not itself, no loop."""
        target = self._id(owner, value, "supersedes")
        if target == entry_id:
            raise InvalidInputError("supersedes", "an entry cannot supersede itself")
        try:
            self.store.get(owner, target, include_deleted=True)
        except NotFoundError:
            raise NotFoundError(f"supersedes: no entry {target}") from None
        if entry_id is not None and any(
            link.id == str(entry_id) for link in self.chains.replaced(owner, target)
        ):
            raise InvalidInputError(
                "supersedes", f"{target} already supersedes {entry_id} (directly or through others): a loop"
            )
        return target

    def chain(self, owner: str, entry_id: str | uuid.UUID) -> tuple[list[ChainLink], list[ChainLink]]:
        """The entries this one supersedes and those that supersede it, nearest first."""
        ident = self._id(owner, entry_id)
        return self.chains.replaced(owner, ident), self.chains.replaced_by(owner, ident)

    def delete(self, owner: str, entry_id: str | uuid.UUID) -> Entry:
        """Soft delete (restorable)."""
        return self.store.soft_delete(owner, self._id(owner, entry_id))

    def restore(self, owner: str, entry_id: str | uuid.UUID) -> Entry:
        """Undo a soft delete."""
        return self.store.restore(owner, self._id(owner, entry_id))

    def list(self, owner: str, filters: EntryFilters, *, limit: int = 20, cursor: str | None = None) -> Page:
        """A page of entries, newest first."""
        check_limit(limit, "limit", MAX_LIST_LIMIT)
        clean_cursor = check_cursor(cursor)
        return self.store.list(owner, check_filters(filters, self.catalog), limit=limit, cursor=clean_cursor)

    def stats(self, owner: str) -> Stats:
        """Counts by language and kind, pending vectors, embedding model, schema revision."""
        counts = self.store.counts(owner)
        model = self.embedder.model if self.embedder is not None else None
        live = counts["state"].get("live", 0)
        return Stats(
            owner=owner,
            entries=live,
            deleted=counts["state"].get("deleted", 0),
            by_language=counts["language"],
            # Chinese, Japanese and Korean are stored as 'simple' too, but found by their words.
            unsupported_languages={k: n for k, n in counts["unsupported"].items() if k not in SEGMENTED},
            by_kind=counts["kind"],
            vectors_by_model=counts["vector_model"],
            pending_vectors=self.store.pending_count(owner, model) if model else live,
            embedding_model=model,
            embedding_dim=self.embedder.dim if self.embedder is not None else None,
            schema_revision=self.store.schema_revision(),
        )
