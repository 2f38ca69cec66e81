"""Pydantic models of what search, build_context and verify_citations return, and the conversions."""

from __future__ import annotations

from dataclasses import asdict
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field

from pgrecall.domain.entries import Status
from pgrecall.domain.text import snippet

if TYPE_CHECKING:
    # Only named in conversions: importing the services would pull the database stack into a
    # server before it answers `initialize` (see mcp.runtime).
    from pgrecall.services.retrieval import Ranked
    from pgrecall.services.search import ScoreBreakdown as ScoreBreakdownData


class ScoreBreakdown(BaseModel):
    """Why a hit ranks where it does: each branch's rank and score, and its share of the fused score."""

    vector_rank: int | None = Field(description="Rank in the vector branch (1 = nearest); null if not in it.")
    cosine_similarity: float | None = Field(
        description="Cosine similarity of query and entry vectors (also for hits found by words only)."
    )
    vector_rrf: float = Field(
        description="The vector rank's RRF term, 1 / (60 + vector_rank); 0 if not in it."
    )
    lexical_rank: int | None = Field(
        description="Rank in the lexical branch (1 = best BM25); null if not in it."
    )
    lexical_score: float | None = Field(description="BM25 score of the entry for the query's terms.")
    lexical_rrf: float = Field(
        description="The lexical rank's RRF term, 1 / (60 + lexical_rank); 0 if not in it."
    )
    vector_share: float = Field(
        description="The vector branch's part of `fused`: in convex fusion the vector weight × the cosine on "
        "the model's scale (0 = typical unrelated text, 1 = typical answer); in rrf, vector_rrf."
    )
    lexical_share: float = Field(
        description="The lexical branch's part of `fused`: in convex fusion the lexical weight × BM25 "
        "rescaled over the lexical list (see fusion_scale); in rrf, lexical_rrf."
    )
    lexical_imputed: bool = Field(
        default=False,
        description="True when lexical_share is the cosine on the model's scale, not BM25: the entry is "
        "in another language than the query's words, which cannot match it.",
    )
    fused: float = Field(description="vector_share + lexical_share + recency: the ranking score.")
    recency: float = Field(
        description="Recency term: 0.5^(age in days / recency_half_life_days) × what a first place in one "
        "branch gives (1/61 in rrf, the smaller weight in convex); 0 when recency is off."
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
        description="The square root of the higher of vector_relevance and lexical_relevance, at most "
        "absolute_relevance: what min_relevance compares."
    )

    @classmethod
    def of(cls, data: ScoreBreakdownData) -> ScoreBreakdown:
        """The protocol form of a score breakdown."""
        return cls(**data.__dict__)


class DocumentPlaceOut(BaseModel):
    """Where a chunk sits in its document."""

    id: str = Field(description="Document id; get_document shows its outline.")
    title: str | None
    source: str | None
    version: str | None
    section_path: list[str] = Field(description="Chapter › section › subsection.")
    ordinal: int = Field(description="Position of the chunk in the document (0-based).")


class Hit(BaseModel):
    """One search result."""

    rank: int = Field(description="1-based position.")
    id: str = Field(description="Entry id; get_entry returns the full text.")
    title: str | None
    snippet: str = Field(description="A short excerpt around the matched words (or the start).")
    tags: list[str]
    kind: str
    source: str | None = Field(description="Where the entry came from.")
    language: str = Field(description="Text-search config of the entry.")
    content_hash: str = Field(description="Cite it; pass it in pinned_hashes to get this exact entry back.")
    score: float = Field(
        description="Fused score (see fusion; only comparable within one result list; 0 for a pin "
        "the query did not match)."
    )
    pinned: bool = Field(description="True when it is here because its hash was pinned.")
    document: DocumentPlaceOut | None = Field(
        default=None, description="For a document's chunk: its document, section and place; null for a note."
    )
    more_chunks: list[str] | None = Field(
        default=None,
        description="group_by=document: ids of up to 2 more chunks of this document, best first.",
    )
    breakdown: ScoreBreakdown | None = Field(
        description="Per-branch ranks and scores (only with explain=true)."
    )


class SearchOut(BaseModel):
    """Result of search."""

    status: Status = Field(
        description="ok; no_matches; empty_store (no entries yet); out_of_scope (nothing in the store "
        "is relevant to selected_text: no hits but pins)."
    )
    reason: str | None = Field(default=None, description="Why there are no hits, when there are none.")
    request_id: str = Field(description="Id of this call in the server logs.")
    degraded: bool = Field(description="True when only the lexical branch could run (embedder unavailable).")
    degraded_reason: str | None = Field(description="Why, when degraded.")
    used: str = Field(
        description="What was searched: query; selection; or 'selection; query ignored' (a usable "
        "selected_text is searched alone)."
    )
    selection_ignored: str | None = Field(description="Why selected_text was not used, if it was given.")
    hits: list[Hit] = Field(description="Results, best first; never more than top_k.")
    below_relevance: int = Field(description="Hits left out by min_relevance.")
    fusion: str = Field(
        description="How the branches were merged: convex (weighted cosine on the model's scale + "
        "BM25 rescaled over its list's mean ± 3 sd) or rrf (Reciprocal Rank Fusion: without a query "
        "vector, when an http model's scale could not be measured, or when configured)."
    )
    fusion_weights: dict[str, float] | None = Field(
        description="Convex fusion's weights of the vector and lexical parts; null in rrf."
    )
    fusion_scale: dict[str, float] | None = Field(
        description="Convex fusion's lexical scale: lexical_mean and lexical_sd, the BM25 mean and "
        "population standard deviation of the lexical list; a hit's lexical part is the lexical weight × "
        "max(0, (BM25 − mean + 3 sd) / (6 sd)). Null in rrf or without lexical hits."
    )
    fusion_evidence: dict[str, Any] | None = Field(
        description="What set convex fusion's weights: words, the question's word count (the vector "
        "weight falls with it), and code_words, the identifiers it names (snake_case, a::path, "
        "call()), any of which caps the vector weight (docs/search.md). Null in rrf."
    )
    embedder_wait_ms: float | None = Field(
        description="Milliseconds this search waited for the embedder to finish loading (a cold start); "
        "null when it was ready."
    )
    missing_pins: list[str] = Field(description="Pinned hashes that match no live entry (not an error).")
    applied: dict[str, Any] = Field(
        description="What ran: mode, top_k, filters set, min_relevance, min_score, recency_half_life_days, "
        "fusion, diversify."
    )
    total_candidates: int = Field(description="Distinct entries both branches found before any cut.")
    sources: list[str] = Field(description="The results' sources, first-seen order.")
    trace: list[dict[str, Any]] | None = Field(
        default=None,
        description="trace=true: per stage (vector, lexical, fusion, ranked, relevance_floor, dedup with "
        "`collapsed` ids and the id each collapsed into, mmr, top_k) its candidates and ms.",
    )
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
    linked: dict[str, str] | None = Field(
        default=None,
        description="expand_related: not found by the search but linked to a cited entry: that entry's "
        "label, the relation, and its direction (out: the cited entry links to this one; in: this one "
        "links to it).",
    )
    document: DocumentPlaceOut | None = Field(
        default=None, description="For a document's chunk: its document, section and place; null for a note."
    )
    neighbour: bool = Field(default=False, description="expand_neighbours: next to a cited chunk.")
    weight: float = Field(
        default=0.0, description="The fused score it ranked by (0: a pin not found, a link, a neighbour)."
    )
    tags: list[str] | None = None
    kind: str | None = None
    metadata: dict[str, Any] | None = None


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

    status: Status = Field(
        description="ok; warning (see warnings); no_matches; empty_store; out_of_scope (nothing "
        "relevant to selected_text)."
    )
    reason: str | None = Field(default=None, description="Why nothing was cited, when nothing was.")
    request_id: str = Field(description="Id of this call in the server logs.")
    warnings: list[str] | None = Field(
        default=None, description="E.g. two versions of one document both cited: they may disagree."
    )
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
    applied: dict[str, Any] = Field(
        description="What ran: mode, top_k, filters set, min_relevance, min_score, recency_half_life_days, "
        "fusion, diversify, token_budget."
    )
    total_candidates: int = Field(description="Distinct entries both branches found before any cut.")
    sources: list[str] = Field(description="The results' sources, first-seen order.")
    trace: list[dict[str, Any]] | None = Field(
        default=None,
        description="trace=true: per stage (vector, lexical, fusion, ranked, relevance_floor, dedup with "
        "`collapsed` ids and the id each collapsed into, mmr, top_k, pack; per section) its candidates "
        "and ms.",
    )


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


def hit_out(rank: int, ranked: Ranked, explain: bool, more: list[Ranked] | None = None) -> Hit:
    """One ranked slot as a search result (the breakdown only when explaining)."""
    entry, hit = ranked.entry, ranked.hit
    return Hit(
        rank=rank,
        id=str(entry.id),
        title=entry.title,
        snippet=hit.snippet if hit is not None else snippet(entry.body),
        tags=entry.tags,
        kind=entry.kind,
        source=entry.source,
        language=entry.language,
        content_hash=entry.content_hash,
        score=ranked.score,
        pinned=ranked.pinned,
        breakdown=ScoreBreakdown.of(hit.breakdown) if (explain and hit is not None) else None,
        document=DocumentPlaceOut(**asdict(hit.document)) if hit is not None and hit.document else None,
        more_chunks=[str(r.entry.id) for r in more] if more is not None else None,
    )
