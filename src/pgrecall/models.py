"""Pydantic models of what the MCP tools return (their output schemas)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from pgrecall.store.entries import Entry

SNIPPET_CHARS = 240


def snippet(text: str, limit: int = SNIPPET_CHARS) -> str:
    """The start of a text, cut at a word boundary, with an ellipsis when shortened."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    cut = flat[:limit].rsplit(" ", 1)[0]
    return cut + " …"


class LanguageOut(BaseModel):
    """How an entry is stemmed."""

    regconfig: str = Field(description="PostgreSQL text-search config used to stem the entry, e.g. 'german'.")
    iso: str | None = Field(description="ISO 639-1 code of that language; null for 'simple' (no stemming).")
    how: str = Field(
        description="explicit (the caller gave it), detected (lingua), default ('simple': too short or "
        "unsure), kept (unchanged by this update)."
    )


class EntrySummary(BaseModel):
    """An entry without its full text (list results)."""

    id: str = Field(description="Entry id (UUID).")
    title: str | None = Field(description="Title, if any.")
    snippet: str = Field(description=f"The first ~{SNIPPET_CHARS} characters of the text.")
    kind: str = Field(description="Kind token (note, fact, decision, …).")
    source: str | None = Field(description="Where the entry came from, if recorded.")
    tags: list[str] = Field(description="Tags.")
    language: str = Field(description="PostgreSQL text-search config of the entry.")
    content_hash: str = Field(description="sha256 of the normalized text; cite it to pin this exact text.")
    version: int = Field(description="Starts at 1, +1 on every update.")
    created_at: datetime = Field(description="Creation time (UTC).")
    updated_at: datetime = Field(description="Last change (UTC).")
    deleted_at: datetime | None = Field(description="Set when soft-deleted; restore_entry clears it.")
    vector_pending: bool = Field(
        description="True while the entry has no vector of the active embedding model (found lexically only)."
    )

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
            content_hash=entry.content_hash,
            version=entry.version,
            created_at=entry.created_at,
            updated_at=entry.updated_at,
            deleted_at=entry.deleted_at,
            vector_pending=entry.embedding_model is None or entry.embedding_model != active_model,
        )


class EntryOut(EntrySummary):
    """An entry with its full text and metadata."""

    text: str = Field(description="The full text, exactly as stored.")
    metadata: dict[str, Any] = Field(description="Free-form JSON metadata.")

    @classmethod
    def full(cls, entry: Entry, active_model: str | None) -> EntryOut:
        """Full view of a stored entry."""
        summary = EntrySummary.of(entry, active_model)
        return cls(**summary.model_dump(), text=entry.body, metadata=entry.metadata)


class SimilarEntry(BaseModel):
    """An existing entry that looks like a near-duplicate of the one just written."""

    id: str = Field(description="Entry id.")
    title: str | None = Field(description="Its title.")
    snippet: str = Field(description="Its first characters.")
    content_hash: str = Field(description="Its content hash.")
    overlap: float = Field(
        description="Word 3-shingle Jaccard overlap of the two texts, 0..1 (1 = same words, same order)."
    )
    exact: bool = Field(description="True when the normalized texts are identical (same content_hash).")


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
    by_kind: dict[str, int] = Field(description="Live entries per kind.")
    vectors_by_model: dict[str, int] = Field(
        description="Live entries per stored vector model ('(pending)')."
    )
    pending_vectors: int = Field(description="Live entries without a vector of the active model.")
    embedding_model: str | None = Field(description="Active embedding model.")
    embedding_dim: int | None = Field(description="Its vector dimension.")
    schema_revision: str | None = Field(description="Alembic revision of the database.")


Status = Literal["ok", "no_matches", "empty_store"]
