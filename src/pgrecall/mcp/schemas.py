"""Pydantic models of what the entry tools take and return (their schemas), and the conversions into them.

Services return dataclasses; this module and mcp.retrieval_schemas shape them for the protocol.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from pgrecall.domain.entries import Entry, vector_pending
from pgrecall.domain.text import SNIPPET_CHARS, snippet

if TYPE_CHECKING:
    # Only named in conversions: importing the services would pull the database stack into a
    # server before it answers `initialize` (see mcp.runtime).
    from pgrecall.domain.currency import ChainLink
    from pgrecall.domain.language import Resolved
    from pgrecall.services.duplicates import Similar
    from pgrecall.services.entries import Stats


class LanguageOut(BaseModel):
    """How an entry is stemmed."""

    regconfig: str = Field(description="PostgreSQL text-search config used to stem the entry, e.g. 'german'.")
    iso: str | None = Field(
        description="ISO 639-1 code of that language; null for 'simple' (no stemming) except ja, zh, ko."
    )
    how: str = Field(
        description="explicit, detected, default ('simple': too short or unsure), unsupported ('simple': "
        "not stemmable here), kept (unchanged by this update)."
    )
    detected: str | None = Field(
        default=None,
        description="With 'simple': the language's ISO 639-1 code (unsupported, or ja/zh/ko: bigrams).",
    )
    note: str | None = None

    @classmethod
    def of(cls, resolved: Resolved) -> LanguageOut:
        """How a write chose its language."""
        return cls(
            regconfig=resolved.regconfig,
            iso=resolved.iso,
            how=resolved.how,
            detected=resolved.detected,
            note=resolved.note,
        )


# Fields whose name says it all (id, title, tags, …) carry no description: every word of a schema
# is read into the context of each client that lists the tools.


class EntrySummary(BaseModel):
    """An entry without its full text (list results)."""

    id: str = Field(description="Entry id (UUID).")
    title: str | None
    snippet: str = Field(description=f"The first ~{SNIPPET_CHARS} characters of the text.")
    kind: str = Field(description="Kind token (note, fact, decision, …).")
    source: str | None = Field(description="Where the entry came from, if recorded.")
    tags: list[str]
    language: str = Field(description="PostgreSQL text-search config of the entry.")
    detected_language: str | None = Field(
        default=None,
        description="Stored 'simple': ISO 639-1 code of its unstemmable language.",
    )
    content_hash: str = Field(description="sha256 of the normalized text; cite it to pin this exact text.")
    version: int = Field(description="Starts at 1, +1 on every update.")
    created_at: datetime = Field(description="Creation time (UTC).")
    updated_at: datetime = Field(description="Last change (UTC).")
    deleted_at: datetime | None = Field(description="Set when soft-deleted; restore_entry clears it.")
    vector_pending: bool = Field(description="No vector of the active model yet: found lexically only.")
    expires_at: datetime | None = Field(
        default=None, description="After this the entry is left out of search, list and context by default."
    )
    supersedes: str | None = Field(default=None, description="Id of the earlier entry this one replaces.")

    @classmethod
    def of(cls, entry: Entry, active_model: str | None) -> EntrySummary:
        """Summary of a stored entry."""
        return cls(
            id=str(entry.id),
            title=entry.title,
            snippet=snippet(entry.body),
            kind=entry.kind,
            source=entry.source,
            tags=entry.tags,
            language=entry.language,
            detected_language=entry.detected_language,
            content_hash=entry.content_hash,
            version=entry.version,
            created_at=entry.created_at,
            updated_at=entry.updated_at,
            deleted_at=entry.deleted_at,
            vector_pending=vector_pending(entry, active_model),
            expires_at=entry.expires_at,
            supersedes=str(entry.supersedes) if entry.supersedes is not None else None,
        )


class ChainLinkOut(BaseModel):
    """An entry in a supersedes chain."""

    id: str
    title: str | None
    depth: int = Field(description="Steps from the entry asked about (1 = directly).")
    created_at: datetime
    deleted: bool = Field(description="Soft-deleted: a deleted entry supersedes nothing.")
    expired: bool = Field(description="Past its expires_at.")


class EntryOut(EntrySummary):
    """An entry with its full text and metadata."""

    text: str = Field(description="The full text, exactly as stored.")
    metadata: dict[str, Any] = Field(description="Free-form JSON metadata.")

    @classmethod
    def full(cls, entry: Entry, active_model: str | None) -> EntryOut:
        """Full view of a stored entry."""
        summary = EntrySummary.of(entry, active_model)
        return cls(**summary.model_dump(), text=entry.body, metadata=entry.metadata)


class EntryDetailOut(EntryOut):
    """get_entry: an entry with its full text, metadata and supersedes chain."""

    supersedes_chain: list[ChainLinkOut] = Field(
        description="The older entries this one replaces, nearest first."
    )
    superseded_by: list[ChainLinkOut] = Field(
        description="The newer entries that replace this one, nearest first. A live one among the direct "
        "ones (depth 1) makes this entry superseded."
    )

    @classmethod
    def detail(
        cls, entry: Entry, active_model: str | None, chain: tuple[Sequence[ChainLink], Sequence[ChainLink]]
    ) -> EntryDetailOut:
        """Full view of a stored entry with its supersedes chain."""
        return cls(
            **EntryOut.full(entry, active_model).model_dump(),
            supersedes_chain=[ChainLinkOut(**link.__dict__) for link in chain[0]],
            superseded_by=[ChainLinkOut(**link.__dict__) for link in chain[1]],
        )


class SimilarEntry(BaseModel):
    """An existing entry that looks like a near-duplicate of the one just written."""

    id: str
    title: str | None
    snippet: str
    content_hash: str
    overlap: float = Field(
        description="Word 3-shingle Jaccard overlap of the two texts, 0..1 (1 = same words, same order)."
    )
    exact: bool = Field(description="True when the normalized texts are identical (same content_hash).")

    @classmethod
    def of(cls, similar: Similar) -> SimilarEntry:
        """The protocol form of a near-duplicate notice."""
        return cls(**similar.__dict__)


class AddEntryResult(BaseModel):
    """Result of add_entry."""

    id: str = Field(description="Id of the stored entry (or of the earlier one, on an idempotent replay).")
    content_hash: str = Field(description="sha256 of the normalized text.")
    language: LanguageOut = Field(description="The language the entry is stemmed in.")
    created_at: datetime = Field(description="Creation time (UTC).")
    version: int = Field(description="Entry version (1 for a new entry).")
    vector_pending: bool = Field(
        description="True when the embedder was unavailable: the entry is stored and found lexically; its "
        "vector is filled in the background."
    )
    idempotent_replay: bool = Field(
        description="True when idempotency_key matched an earlier call: nothing new was written."
    )
    similar: list[SimilarEntry] = Field(
        description="Up to 3 existing entries that look like near-duplicates (consider update_entry instead)."
    )
    document_id: str | None = Field(
        default=None,
        description="A long text is stored as a document of chunks (each passage found on its own): its id; "
        "`id` is then its first chunk.",
    )
    chunks: int | None = Field(default=None, description="With document_id: how many chunks.")


class WriteResult(BaseModel):
    """Result of update_entry and restore_entry."""

    entry: EntryOut = Field(description="The entry as stored now.")
    language: LanguageOut = Field(description="The language the entry is stemmed in.")


class DeleteResult(BaseModel):
    """Result of delete_entry."""

    id: str = Field(description="The deleted entry.")
    deleted_at: datetime = Field(description="When it was soft-deleted; restore_entry undoes it.")


class ListResult(BaseModel):
    """One page of list_entries."""

    entries: list[EntrySummary] = Field(description="Entries, newest first.")
    next_cursor: str | None = Field(description="Pass as cursor to get the next page; null on the last page.")


class StatsResult(BaseModel):
    """Result of stats."""

    owner: str = Field(description="The owner these figures are for.")
    entries: int = Field(description="Live entries.")
    deleted: int = Field(description="Soft-deleted entries.")
    by_language: dict[str, int] = Field(description="Live entries per text-search config.")
    unsupported_languages: dict[str, int] = Field(
        description="Live entries stored as 'simple' per ISO code of a language this server cannot stem."
    )
    by_kind: dict[str, int] = Field(description="Live entries per kind.")
    vectors_by_model: dict[str, int] = Field(
        description="Live entries per stored vector model ('(pending)')."
    )
    pending_vectors: int = Field(description="Live entries without a vector of the active model.")
    embedding_model: str | None = Field(description="Active embedding model.")
    embedding_dim: int | None = Field(description="Its vector dimension.")
    schema_revision: str | None = Field(description="Alembic revision of the database.")

    @classmethod
    def of(cls, stats: Stats) -> StatsResult:
        """The protocol form of an owner's figures."""
        return cls(**stats.__dict__)
