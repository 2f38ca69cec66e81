"""Pydantic models of what the MCP tools take and return (their schemas), and the conversions into them.

Services return dataclasses; this is the only module that shapes them for the protocol.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field

from pgrecall.domain.entries import Entry, Status, vector_pending
from pgrecall.domain.text import SNIPPET_CHARS, snippet

if TYPE_CHECKING:
    # Only named in conversions: importing the services would pull the database stack into a
    # server before it answers `initialize` (see mcp.runtime).
    from pgrecall.domain.language import Resolved
    from pgrecall.services.duplicates import Similar
    from pgrecall.services.entries import Stats
    from pgrecall.services.retrieval import Ranked
    from pgrecall.services.search import ScoreBreakdown as ScoreBreakdownData


class LanguageOut(BaseModel):
    """How an entry is stemmed."""

    regconfig: str = Field(description="PostgreSQL text-search config used to stem the entry, e.g. 'german'.")
    iso: str | None = Field(description="ISO 639-1 code of that language; null for 'simple' (no stemming).")
    how: str = Field(
        description="explicit, detected, default ('simple': too short or unsure), unsupported ('simple': "
        "not stemmable here), kept (unchanged by this update)."
    )
    detected: str | None = Field(
        default=None, description="With how=unsupported: the language's ISO 639-1 code."
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


class ScoreBreakdown(BaseModel):
    """Why a hit ranks where it does: each branch's rank and score, and its share of the fused score."""

    vector_rank: int | None = Field(description="Rank in the vector branch (1 = nearest); null if not in it.")
    cosine_similarity: float | None = Field(
        description="Cosine similarity of query and entry vectors (also for hits found by words only)."
    )
    vector_rrf: float = Field(description="Vector branch share of the fused score: 1 / (k + vector_rank).")
    lexical_rank: int | None = Field(
        description="Rank in the lexical branch (1 = best BM25); null if not in it."
    )
    lexical_score: float | None = Field(description="BM25 score of the entry for the query's terms.")
    lexical_rrf: float = Field(description="Lexical branch share of the fused score: 1 / (k + lexical_rank).")
    fused: float = Field(
        description="vector_rrf + lexical_rrf (Reciprocal Rank Fusion) + recency: the ranking score."
    )
    recency: float = Field(
        description="Recency term: 0.5^(age in days / recency_half_life_days) / 61; 0 when recency is off."
    )
    regconfig: str | None = Field(description="Text-search config whose stemmed query matched the entry.")
    matched_terms: list[str] = Field(description="Stemmed query terms (lexemes) found in the entry.")
    vector_relevance: float | None = Field(
        description="(cosine − median cosine of the vector candidates) / (best − median), 0..1."
    )
    lexical_relevance: float | None = Field(
        description="BM25 score / the best BM25 score of the search, 0..1."
    )
    absolute_relevance: float | None = Field(
        description="The cosine on the model's own scale: 0 = as similar as a typical unrelated text, "
        "1 = as a typical answer; null without a cosine."
    )
    relevance: float = Field(
        description="The higher of vector_relevance and lexical_relevance, at most absolute_relevance: "
        "what min_relevance compares."
    )

    @classmethod
    def of(cls, data: ScoreBreakdownData) -> ScoreBreakdown:
        """The protocol form of a score breakdown."""
        return cls(**data.__dict__)


class Hit(BaseModel):
    """One search result."""

    rank: int = Field(description="1-based position.")
    id: str = Field(description="Entry id; get_entry returns the full text.")
    title: str | None
    snippet: str = Field(description="A short excerpt around the matched words (or the start).")
    tags: list[str]
    source: str | None = Field(description="Where the entry came from.")
    language: str = Field(description="Text-search config of the entry.")
    content_hash: str = Field(description="Cite it; pass it in pinned_hashes to get this exact entry back.")
    score: float = Field(
        description="Fused RRF score (only comparable within one result list; 0 for a pin "
        "the query did not match)."
    )
    pinned: bool = Field(description="True when it is here because its hash was pinned.")
    breakdown: ScoreBreakdown | None = Field(
        description="Per-branch ranks and scores (only with explain=true)."
    )


class SearchOut(BaseModel):
    """Result of search."""

    status: Status = Field(description="ok; no_matches; empty_store (no entries yet).")
    request_id: str = Field(description="Id of this call in the server logs.")
    degraded: bool = Field(description="True when only the lexical branch could run (embedder unavailable).")
    degraded_reason: str | None = Field(description="Why, when degraded.")
    used: str = Field(description="What was searched: query, selection or query+selection.")
    selection_ignored: str | None = Field(description="Why selected_text was not used, if it was given.")
    hits: list[Hit] = Field(description="Results, best first; never more than top_k.")
    below_relevance: int = Field(description="Hits left out by min_relevance.")
    missing_pins: list[str] = Field(description="Pinned hashes that match no live entry (not an error).")
    timings: dict[str, float] = Field(
        description="Milliseconds: sql_ms (database), search_ms (embedding the query plus database), "
        "total_ms (the whole call)."
    )


class CitationOut(BaseModel):
    """A citation for one context block."""

    label: str = Field(description="The block label in the context, e.g. S1; cite it as [S1].")
    id: str
    content_hash: str = Field(description="Hash of the exact text used; verify_citations checks it later.")
    source: str | None
    title: str | None
    snippet: str = Field(description="Short excerpt.")
    section: str | None = Field(description="Section the block belongs to (when sections were asked for).")
    pinned: bool = Field(description="True when included because its hash was pinned.")


class DroppedOut(BaseModel):
    """A ranked entry left out of the context."""

    id: str = Field(description="Entry id (get_entry returns it whole).")
    content_hash: str
    title: str | None
    tokens: int = Field(description="Estimated tokens of its block.")
    reason: str = Field(description="'larger than token_budget' or 'budget exhausted'.")
    section: str | None = Field(description="The section it was ranked for.")


class ContextOut(BaseModel):
    """Result of build_context."""

    status: Status = Field(description="ok; no_matches; empty_store.")
    request_id: str = Field(description="Id of this call in the server logs.")
    context: str = Field(
        description="Blocks '[S1] Title — source' + the stored text, unmodified, best first."
    )
    citations: list[CitationOut] = Field(description="One per block, in order.")
    by_section: dict[str, list[str]] | None = Field(
        description="Labels per section, when sections were given."
    )
    total_tokens: int = Field(
        description="Estimated tokens of `context` (max(words×1.33, chars/4)) ≤ budget."
    )
    dropped: list[DroppedOut] = Field(description="Ranked entries that did not fit (never cut mid-text).")
    missing_pins: list[str] = Field(description="Pinned hashes matching no live entry.")
    below_relevance: int = Field(
        description="Ranked entries left out as not relevant enough (min_relevance)."
    )
    degraded: bool = Field(description="True when only the lexical branch could run.")


class CitationIn(BaseModel):
    """A citation to check."""

    content_hash: str = Field(description="The content_hash that was cited.")
    id: str | None = Field(default=None, description="The entry id, if known (else looked up by hash).")
    label: str | None = Field(default=None, description="Your label for it (echoed back).")


class CitationCheckOut(BaseModel):
    """The verdict on one citation."""

    label: str | None = Field(description="The label you gave.")
    id: str | None = Field(description="The entry checked.")
    content_hash: str = Field(description="The cited hash.")
    status: Literal["valid", "changed", "deleted", "missing"] = Field(
        description="valid: the stored text still hashes to it; changed: edited since (see current_hash); "
        "deleted: soft-deleted; missing: no such entry."
    )
    current_hash: str | None = Field(description="Hash of the stored text now, when not valid.")


class VerifyOut(BaseModel):
    """Result of verify_citations."""

    request_id: str = Field(description="Id of this call in the server logs.")
    all_valid: bool = Field(description="True when every citation still holds.")
    results: list[CitationCheckOut] = Field(description="One per citation, in the given order.")


# The query's embedding time is not reported alone: at 0.03 ms for a cached vector against
# 70-120 ms for a model call, it would say exactly when the vector came from the cache.
PUBLIC_TIMINGS = ("sql_ms", "search_ms")


def timings_out(timings: dict[str, float], total_ms: float) -> dict[str, float]:
    """The timings a search result shows: database, search and whole call, never embedding alone."""
    out = {name: timings[name] for name in PUBLIC_TIMINGS if name in timings}
    out["total_ms"] = round(total_ms, 3)
    return out


def hit_out(rank: int, ranked: Ranked, explain: bool) -> Hit:
    """One ranked slot as a search result (the breakdown only when explaining)."""
    entry, hit = ranked.entry, ranked.hit
    return Hit(
        rank=rank,
        id=str(entry.id),
        title=entry.title,
        snippet=hit.snippet if hit is not None else snippet(entry.body),
        tags=entry.tags,
        source=entry.source,
        language=entry.language,
        content_hash=entry.content_hash,
        score=ranked.score,
        pinned=ranked.pinned,
        breakdown=ScoreBreakdown.of(hit.breakdown) if (explain and hit is not None) else None,
    )
