"""Hybrid search use case: validate, embed the query (or degrade to lexical), run the statement, explain."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Literal

import psycopg
from psycopg_pool import ConnectionPool

from pgrecall.config import Settings
from pgrecall.domain.entries import EntryFilters, Status
from pgrecall.domain.language import LanguageCatalog
from pgrecall.domain.ranking import check_fusion
from pgrecall.domain.relevance import BranchScale, relevance
from pgrecall.domain.text import make_snippet
from pgrecall.domain.validation import (
    Mode,
    check_filters,
    check_half_life,
    check_min_relevance,
    check_min_similarity,
    check_mode,
    check_query,
    check_top_k,
)
from pgrecall.embeddings.base import Embedder, EmbeddingError, unavailable_reason
from pgrecall.embeddings.cache import CachedQueryEmbedder
from pgrecall.embeddings.calibration import ModelScale, ScaleCache
from pgrecall.errors import InvalidInputError
from pgrecall.store.search import (
    FusionEvidence,
    SearchParams,
    SearchRow,
    SearchRows,
    SearchStore,
    Tuning,
)

log = logging.getLogger(__name__)

Branch = Literal["vector", "lexical"]
EMBEDDER_LOADING = "embedder loading"


@dataclass(frozen=True)
class SearchOptions:
    """How to search, besides the text: mode, filters (checked once, here) and a cosine floor."""

    mode: str = "hybrid"
    filters: EntryFilters = field(default_factory=EntryFilters)
    min_similarity: float | None = None
    # Hits whose relevance (domain/relevance.py) is below this are left out; None keeps all.
    min_relevance: float | None = None
    # Opt-in recency: the half-life in days of the recency term (store/search_sql.py); None: off.
    recency_half_life_days: float | None = None
    # convex or rrf; None: the configured default (PGRECALL_FUSION).
    fusion: str | None = None
    # Grouped by document: top_k documents, each with at most this many chunks (SearchParams).
    per_document: int | None = None


@dataclass(frozen=True)
class ScoreBreakdown:
    """Why a hit ranks where it does: each branch's rank and score, and its share of the fused score."""

    vector_rank: int | None
    cosine_similarity: float | None
    vector_rrf: float
    lexical_rank: int | None
    lexical_score: float | None
    lexical_rrf: float
    fused: float
    regconfig: str | None
    matched_terms: list[str]
    # Each branch's part of `fused` under the fusion this search used (the rrf terms in rrf).
    vector_share: float = 0.0
    lexical_share: float = 0.0
    # Convex: lexical_share is the hit's cosine on the model's scale, not its BM25 (an entry in
    # another language than the query's words; store/search_sql.py).
    lexical_imputed: bool = False
    # Relative to the best hit of each branch in this search (domain/relevance.py).
    vector_relevance: float | None = None
    lexical_relevance: float | None = None
    absolute_relevance: float | None = None
    relevance: float = 0.0
    # The recency term added to the fused score (0 unless recency_half_life_days is set).
    recency: float = 0.0


@dataclass(frozen=True)
class DocumentPlace:
    """Where a chunk sits: its document (id, title, source, version), section path and ordinal."""

    id: str
    title: str | None
    source: str | None
    version: str | None
    section_path: list[str]
    ordinal: int


@dataclass(frozen=True)
class SearchHit:
    """One search result (never with a vector)."""

    rank: int
    id: str
    title: str | None
    snippet: str
    tags: list[str]
    kind: str
    source: str | None
    language: str
    content_hash: str
    created_at: datetime
    updated_at: datetime
    score: float
    breakdown: ScoreBreakdown
    document: DocumentPlace | None = None


@dataclass(frozen=True)
class SearchTimings:
    """Where the time went, in milliseconds (embed_ms None when no vector was computed)."""

    embed_ms: float | None
    sql_ms: float
    total_ms: float
    # How long this search waited for a loading embedder (cold start); None: it was ready.
    embedder_wait_ms: float | None = None


@dataclass(frozen=True)
class SearchResult:
    """Result of a search: hits, which branches ran, and why it was degraded if it was."""

    status: Status
    mode: Mode
    branches: list[Branch]
    degraded: bool
    degraded_reason: str | None
    hits: list[SearchHit]
    query_terms: int
    lexical_candidates: int
    vector_candidates: int
    embedding_model: str | None
    timings: SearchTimings
    # Hits the relevance floor (min_relevance) left out of this result.
    below_relevance: int = 0
    # The fusion applied (convex falls back to rrf without a query vector or the model's scale)
    # and, for convex, the weights of the cosine and the BM25 parts, and the lexical list's BM25
    # mean and standard deviation that rescaled BM25 (None without a lexical list).
    fusion: str = "rrf"
    fusion_weights: dict[str, float] | None = None
    fusion_scale: dict[str, float] | None = None
    # What set the convex weights: the question's words (the length prior) and the code words it
    # names (which cap the cosine's weight).
    fusion_evidence: FusionEvidence | None = None
    # Distinct candidates both branches found, and how many the statement ranked (≤ its top_k).
    total_candidates: int = 0
    ranked: int = 0


@dataclass(frozen=True)
class _Plan:
    """What a search runs: the statement's parameters and how the question's vector came about."""

    params: SearchParams
    model_scale: ModelScale | None
    options: SearchOptions
    mode: Mode
    embed_ms: float | None
    reason: str | None
    waited_ms: float | None


class SearchService:
    """Hybrid search over one owner's entries; plain Python around the one SQL statement."""

    def __init__(
        self,
        settings: Settings,
        pool: ConnectionPool[psycopg.Connection[dict[str, Any]]],
        catalog: LanguageCatalog,
        embedder: Embedder | None,
        *,
        tuning: Tuning | None = None,
    ) -> None:
        self.settings = settings
        self.store = SearchStore(pool)
        self.catalog = catalog
        self.embedder = embedder
        self.tuning = tuning or Tuning()
        # A model without a shipped scale (an HTTP endpoint) is measured once, within the bound of
        # one embedding call, and kept in the home.
        self.scales = ScaleCache(
            settings.home / "cache" / "calibration", timeout_s=settings.embedding_total_timeout_s
        )

    def check(self, options: SearchOptions) -> SearchOptions:
        """Options with mode, filters and cosine floor validated (language resolved to its regconfig)."""
        if options.filters.include_deleted:
            raise InvalidInputError("include_deleted", "search covers live entries only; use list_entries")
        return SearchOptions(
            mode=check_mode(options.mode),
            filters=check_filters(options.filters, self.catalog),
            min_similarity=check_min_similarity(options.min_similarity),
            min_relevance=check_min_relevance(options.min_relevance),
            recency_half_life_days=check_half_life(options.recency_half_life_days),
            fusion=check_fusion(options.fusion if options.fusion is not None else self.settings.fusion),
            per_document=options.per_document,
        )

    def search(
        self,
        owner: str,
        query: str,
        *,
        top_k: int = 10,
        options: SearchOptions | None = None,
        checked: bool = False,
        query_vector: Sequence[float] | None = None,
    ) -> SearchResult:
        """Search `owner`'s live entries; filters apply inside both branches, before fusion.

        `checked`: the options already went through check() (retrieval checks them once for
        several searches). `query_vector`: a vector already at hand for this text (the entry's
        own, for the near-duplicate lookup), so nothing is embedded again.
        """
        started = time.perf_counter()
        clean = check_query(query)
        plan = self._plan(owner, clean, top_k, options, checked, query_vector)
        params, model_scale, opts, want = plan.params, plan.model_scale, plan.options, plan.mode
        vector, embed_ms, reason, waited_ms = params.vector, plan.embed_ms, plan.reason, plan.waited_ms
        use_lexical = params.use_lexical
        fusion = params.fusion_used()
        sql_started = time.perf_counter()
        found = self.store.search(params)
        sql_ms = (time.perf_counter() - sql_started) * 1000
        scale = BranchScale(found.vector_candidates, found.best_cos, found.mid_cos, found.best_lex)
        ranked = [self._hit(row, scale, model_scale) for row in found.rows]
        floor = opts.min_relevance
        kept = [hit for hit in ranked if floor is None or hit.breakdown.relevance >= floor]
        hits = [replace(hit, rank=i) for i, hit in enumerate(kept, start=1)]
        status: Status = "empty_store" if found.live_entries == 0 else ("ok" if hits else "no_matches")
        branches: list[Branch] = []
        if vector is not None:
            branches.append("vector")
        if use_lexical:
            branches.append("lexical")
        return SearchResult(
            status=status,
            mode=want,
            branches=branches,
            degraded=reason is not None,
            degraded_reason=reason,
            hits=hits,
            query_terms=found.query_terms,
            lexical_candidates=found.lexical_candidates,
            vector_candidates=found.vector_candidates,
            embedding_model=params.model,
            below_relevance=len(ranked) - len(kept),
            total_candidates=found.fused_candidates,
            ranked=len(ranked),
            fusion=fusion,
            fusion_weights=_weights(params.vector_weight()) if fusion == "convex" else None,
            fusion_scale=_lexical_scale(found) if fusion == "convex" else None,
            fusion_evidence=params.evidence if fusion == "convex" else None,
            timings=SearchTimings(
                embed_ms=round(embed_ms, 3) if embed_ms is not None else None,
                sql_ms=round(sql_ms, 3),
                total_ms=round((time.perf_counter() - started) * 1000, 3),
                embedder_wait_ms=round(waited_ms, 3) if waited_ms is not None else None,
            ),
        )

    def _plan(
        self,
        owner: str,
        clean: str,
        top_k: int,
        options: SearchOptions | None,
        checked: bool,
        query_vector: Sequence[float] | None,
    ) -> _Plan:
        """The statement's parameters for this question (embedding it unless lexical or given)."""
        check_top_k(top_k)
        opts = options or SearchOptions()
        if not checked:
            opts = self.check(opts)
        want = check_mode(opts.mode)
        vector: list[float] | None
        embed_ms: float | None
        reason: str | None
        waited_ms: float | None = None
        if query_vector is not None:
            vector, embed_ms, reason = list(query_vector), None, None
        elif want != "lexical":
            vector, embed_ms, reason, waited_ms = self._embed(owner, clean)
        else:
            vector, embed_ms, reason = None, None, None
        params = SearchParams(
            owner=owner,
            query=clean,
            top_k=top_k,
            vector=vector,
            model=self.embedder.model if (vector is not None and self.embedder is not None) else None,
            dim=len(vector) if vector is not None else None,
            use_vector=vector is not None,
            use_lexical=want != "vector" or vector is None,
            filters=opts.filters,
            min_similarity=opts.min_similarity,
            recency_half_life_days=opts.recency_half_life_days,
            tuning=self.tuning,
            fusion=opts.fusion or "rrf",
            per_document=opts.per_document,
        )
        # The model's scale is for a question against passages: not for a passage's own vector
        # (the near-duplicate lookup), whose cosines to other passages run higher.
        model_scale = self.model_scale() if vector is not None and query_vector is None else None
        if model_scale is not None:
            params = replace(params, cos_scale=(model_scale.unrelated, model_scale.related))
        return _Plan(params, model_scale, opts, want, embed_ms, reason, waited_ms)

    def statement(
        self, owner: str, query: str, *, top_k: int = 10, options: SearchOptions | None = None
    ) -> tuple[str, dict[str, Any], SearchParams]:
        """The exact statement search() would run for this question, and its bound parameters."""
        plan = self._plan(owner, check_query(query), top_k, options, False, None)
        text, bound = self.store.statement(plan.params)
        return text, bound, plan.params

    def explain(
        self, owner: str, query: str, *, top_k: int = 10, options: SearchOptions | None = None
    ) -> str:
        """EXPLAIN (ANALYZE, BUFFERS) of that statement, run with the search's own settings."""
        plan = self._plan(owner, check_query(query), top_k, options, False, None)
        return self.store.explain(plan.params)

    def _embed(
        self, owner: str, query: str
    ) -> tuple[list[float] | None, float | None, str | None, float | None]:
        """(vector, embed ms, degraded reason, ms waited for a loading embedder)."""
        if self.embedder is None:
            return None, None, "no embedding provider is configured: lexical search only", None
        waited_ms: float | None = None
        ready = getattr(self.embedder, "ready", None)
        if ready is not None and not ready():
            # The model is still loading in the worker (a cold start): a paraphrase has no words in
            # common with what it should find, so wait a little for the vector branch before
            # answering from the lexical branch alone, and say how long.
            wait_started = time.perf_counter()
            waiter = getattr(self.embedder, "wait_ready", None)
            loaded = waiter is not None and bool(waiter(self.settings.embedder_wait_s))
            waited_ms = (time.perf_counter() - wait_started) * 1000
            if not loaded:
                state = getattr(self.embedder, "load_state", lambda: "loading")()
                if str(state).startswith("failed"):
                    # The state's detail (socket paths, exception text) goes to the log, not the caller.
                    log.warning("embedder failed to load; lexical-only search", extra={"error": str(state)})
                    return None, None, "embedder unavailable (failed to load): lexical search only", waited_ms
                return None, None, EMBEDDER_LOADING, waited_ms
        started = time.perf_counter()
        try:
            vector = self._query_vector(owner, query)
        except EmbeddingError as exc:
            # A search must still answer: the lexical branch alone, flagged as degraded.
            log.warning("query embedding failed; lexical-only search", extra={"error": str(exc)})
            return None, None, f"{unavailable_reason(exc)}: lexical search only", waited_ms
        return vector, (time.perf_counter() - started) * 1000, None, waited_ms

    def _query_vector(self, owner: str, query: str) -> list[float]:
        """The query's vector, from `owner`'s part of the query cache when the embedder has one."""
        assert self.embedder is not None
        if isinstance(self.embedder, CachedQueryEmbedder):
            return self.embedder.embed_owner_queries(owner, [query])[0]
        return self.embedder.embed_queries([query])[0]

    def model_scale(self) -> ModelScale | None:
        """The embedder's cosine scale (measured now if it is neither bundled nor kept); None without."""
        return self.scales.get(self.embedder) if self.embedder is not None else None

    @staticmethod
    def _hit(row: SearchRow, scale: BranchScale, model_scale: ModelScale | None) -> SearchHit:
        absolute = model_scale.absolute(row.cos_sim) if model_scale and row.cos_sim is not None else None
        judged = relevance(row.cos_sim, row.lex_score, scale, absolute)
        return SearchHit(
            rank=0,
            id=str(row.id),
            title=row.title,
            snippet=make_snippet(row.body, row.matched),
            tags=row.tags,
            kind=row.kind,
            source=row.source,
            language=row.language,
            content_hash=row.content_hash,
            created_at=row.created_at,
            updated_at=row.updated_at,
            score=row.fused,
            breakdown=ScoreBreakdown(
                vector_rank=row.vec_rank,
                cosine_similarity=row.cos_sim,
                vector_rrf=row.vec_rrf,
                lexical_rank=row.lex_rank,
                lexical_score=row.lex_score,
                lexical_rrf=row.lex_rrf,
                fused=row.fused,
                vector_share=row.vec_part,
                lexical_share=row.lex_part,
                lexical_imputed=row.lex_imputed,
                regconfig=row.lex_cfg,
                matched_terms=row.matched,
                vector_relevance=_rounded(judged.vector),
                lexical_relevance=_rounded(judged.lexical),
                absolute_relevance=_rounded(judged.absolute),
                recency=row.recency_rrf,
                relevance=round(judged.overall, 4),
            ),
            document=_place(row),
        )


def _place(row: SearchRow) -> DocumentPlace | None:
    if row.document_id is None or row.ordinal is None:
        return None
    return DocumentPlace(
        id=str(row.document_id),
        title=row.document_title,
        source=row.source,
        version=row.document_version,
        section_path=list(row.section_path or []),
        ordinal=row.ordinal,
    )


def _weights(vector: float) -> dict[str, float]:
    return {"vector": round(vector, 6), "lexical": round(1.0 - vector, 6)}


def _lexical_scale(found: SearchRows) -> dict[str, float] | None:
    if found.lex_mean is None or found.lex_sd is None:
        return None
    return {"lexical_mean": round(found.lex_mean, 6), "lexical_sd": round(found.lex_sd, 6)}


def _rounded(value: float | None) -> float | None:
    return round(value, 4) if value is not None else None
