"""What an entry is: the stored entry, a new one, a change to one, a page of them, and their filters."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

Status = Literal["ok", "no_matches", "empty_store", "warning", "out_of_scope"]
"""Outcome of a search: something found, nothing matched, or the owner has no live entries; warning:
found, with something to know first (build_context: two versions of one document both answer)."""


@dataclass(frozen=True)
class Entry:
    """One stored entry as read back (never with its vector)."""

    id: uuid.UUID
    owner: str
    kind: str
    source: str | None
    title: str | None
    body: str
    tags: list[str]
    metadata: dict[str, Any]
    language: str
    content_hash: str
    version: int
    created_at: datetime
    updated_at: datetime
    deleted_at: datetime | None
    embedding_model: str | None
    embedding_dim: int | None
    # ISO code of a language recognised but not stemmable here (the entry is then 'simple').
    detected_language: str | None = None
    # After this the entry is left out of search, list and context by default.
    expires_at: datetime | None = None
    # An earlier entry this one replaces (left out by default while this one is live).
    supersedes: uuid.UUID | None = None
    # How the language was chosen (explicit, detected, default, unsupported); None: not recorded.
    language_how: str | None = None
    language_confidence: float | None = None
    # A chunk of a document: the document, its place in it and its section path (None: a note).
    document_id: uuid.UUID | None = None
    ordinal: int | None = None
    section_path: list[str] | None = None

    @property
    def deleted(self) -> bool:
        """True once soft-deleted."""
        return self.deleted_at is not None


def vector_pending(entry: Entry, active_model: str | None) -> bool:
    """True while the entry has no vector of the active embedding model (it is found lexically only).

    With no embedder configured every entry is pending: none can be found by meaning.
    """
    return active_model is None or entry.embedding_model != active_model


def embedding_text(title: str | None, body: str) -> str:
    """What gets embedded for an entry: its title and body."""
    return f"{title}\n\n{body}" if title else body


@dataclass(frozen=True)
class NewEntry:
    """A validated entry ready to insert."""

    body: str
    content_hash: str
    language: str
    kind: str = "note"
    source: str | None = None
    title: str | None = None
    tags: Sequence[str] = ()
    metadata: dict[str, Any] = field(default_factory=dict)
    embedding: Sequence[float] | None = None
    embedding_model: str | None = None
    idempotency_key: str | None = None
    detected_language: str | None = None  # see Entry.detected_language
    language_how: str | None = None  # see Entry.language_how
    language_confidence: float | None = None
    expires_at: datetime | None = None
    supersedes: uuid.UUID | None = None
    document_id: uuid.UUID | None = None  # see Entry.document_id
    ordinal: int | None = None
    section_path: Sequence[str] | None = None


@dataclass(frozen=True)
class EntryChanges:
    """A validated partial update; None means 'leave as is' (see set_* for clearing)."""

    kind: str | None = None
    source: str | None = None
    set_source: bool = False
    title: str | None = None
    set_title: bool = False
    body: str | None = None
    content_hash: str | None = None
    tags: Sequence[str] | None = None
    metadata: dict[str, Any] | None = None
    language: str | None = None
    detected_language: str | None = None  # written together with `language`, never alone
    language_how: str | None = None  # so are these two
    language_confidence: float | None = None
    reset_embedding: bool = False
    embedding: Sequence[float] | None = None
    embedding_model: str | None = None
    expires_at: datetime | None = None
    set_expires_at: bool = False
    supersedes: uuid.UUID | None = None
    set_supersedes: bool = False


@dataclass(frozen=True)
class EntryFilters:
    """Filters of list and search (all optional); `language` is a regconfig name once checked.

    kind, source, source_prefix and the tags match whatever the case (folded in the store).

    Search covers live entries only, so `include_deleted` is for listing.
    """

    kind: str | None = None
    source: str | None = None
    source_prefix: str | None = None
    language: str | None = None
    tags_all: Sequence[str] | None = None
    tags_any: Sequence[str] | None = None
    created_after: datetime | None = None
    created_before: datetime | None = None
    updated_after: datetime | None = None
    updated_before: datetime | None = None
    # Chunks of one document (its id), or of documents with this version label.
    document: str | None = None
    version: str | None = None
    include_deleted: bool = False
    # Superseded (a live entry replaces it) and expired entries are left out unless asked for.
    include_superseded: bool = False
    include_expired: bool = False


@dataclass(frozen=True)
class Page:
    """One page of a listing and the cursor of the next (None at the end)."""

    entries: list[Entry]
    next_cursor: str | None
