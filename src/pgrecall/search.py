"""Hybrid search use case: validate, embed the query (or degrade to lexical), run the statement, explain."""

from __future__ import annotations

import logging
import re
import time
import unicodedata
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Literal

import psycopg
from psycopg_pool import ConnectionPool
from pydantic import BaseModel, Field

from pgrecall.config import Settings
from pgrecall.embeddings.base import Embedder, EmbeddingError
from pgrecall.errors import InvalidInputError
from pgrecall.language import LanguageCatalog
from pgrecall.models import SNIPPET_CHARS, Status, snippet
from pgrecall.store.search import SearchFilters, SearchParams, SearchRow, SearchStore, Tuning
from pgrecall.validation import check_kind, check_limit, check_source, check_tags

log = logging.getLogger(__name__)

MAX_QUERY_CHARS = 1000
MAX_TOP_K = 20
Mode = Literal["hybrid", "vector", "lexical"]
MODES: tuple[str, ...] = ("hybrid", "vector", "lexical")
# Accent folding for snippet anchoring: Snowball stems drop diacritics ('häuser' →
# 'haus'), so 'haus' is looked up in a folded copy of the text. One character maps to
# one character, so positions in the copy are positions in the text.
_FOLD = {
    cp: unicodedata.normalize("NFKD", chr(cp))[0]
    for cp in range(0xC0, 0x250)
    if len(unicodedata.normalize("NFKD", chr(cp))) > 1
}
_FOLD.update({ord("ё"): "е", ord("Ё"): "Е"})


class ScoreBreakdown(BaseModel):
    """Why a hit ranks where it does: each branch's rank and score, and its share of the fused score."""

    vector_rank: int | None = Field(description="Rank in the vector branch (1 = nearest); null if not in it.")
    cosine_similarity: float | None = Field(description="Cosine similarity of query and entry vectors.")
    vector_rrf: float = Field(description="Vector branch share of the fused score: 1 / (k + vector_rank).")
    lexical_rank: int | None = Field(
        description="Rank in the lexical branch (1 = best BM25); null if not in it."
    )
    lexical_score: float | None = Field(description="BM25 score of the entry for the query's terms.")
    lexical_rrf: float = Field(description="Lexical branch share of the fused score: 1 / (k + lexical_rank).")
    fused: float = Field(description="vector_rrf + lexical_rrf (Reciprocal Rank Fusion), the ranking score.")
    regconfig: str | None = Field(description="Text-search config whose stemmed query matched the entry.")
    matched_terms: list[str] = Field(description="Stemmed query terms (lexemes) found in the entry.")


class SearchHit(BaseModel):
    """One search result (never with a vector)."""

    rank: int = Field(description="1-based position in the results.")
    id: str = Field(description="Entry id (UUID).")
    title: str | None = Field(description="Title, if any.")
    snippet: str = Field(
        description=f"~{SNIPPET_CHARS} characters around the first matched term, else the start."
    )
    tags: list[str] = Field(description="Tags.")
    kind: str = Field(description="Kind token.")
    source: str | None = Field(description="Where the entry came from, if recorded.")
    language: str = Field(description="Text-search config of the entry.")
    content_hash: str = Field(description="sha256 of the normalized text; cite it to pin this exact text.")
    created_at: datetime = Field(description="Creation time (UTC).")
    updated_at: datetime = Field(description="Last change (UTC).")
    score: float = Field(description="Fused RRF score (higher is better).")
    breakdown: ScoreBreakdown = Field(description="How the score was made.")


class SearchTimings(BaseModel):
    """Where the time went, in milliseconds."""

    embed_ms: float | None = Field(description="Embedding the query; null when no vector was computed.")
    sql_ms: float = Field(description="The search statement (one round trip).")
    total_ms: float = Field(description="The whole call.")


class SearchResult(BaseModel):
    """Result of a search."""

    status: Status = Field(
        description="ok; no_matches (nothing matched); empty_store (the owner has no live entries)."
    )
    mode: Mode = Field(description="The mode asked for.")
    branches: list[Literal["vector", "lexical"]] = Field(description="Branches that actually ran.")
    degraded: bool = Field(description="True when the vector branch could not run (embedder unavailable).")
    degraded_reason: str | None = Field(description="Why the search was degraded, if it was.")
    hits: list[SearchHit] = Field(description="Results, best first.")
    query_terms: int = Field(description="Stemmed query terms used, over all languages searched.")
    lexical_candidates: int = Field(description="Entries the lexical branch scored.")
    vector_candidates: int = Field(description="Entries the vector branch returned.")
    embedding_model: str | None = Field(description="Model of the query vector, if one was used.")
    timings: SearchTimings = Field(description="Timings.")


def check_query(query: str) -> str:
    """The query trimmed; non-empty, at most 1000 characters, no NUL."""
    if not isinstance(query, str):
        raise InvalidInputError("query", "must be a string")
    if "\x00" in query:
        raise InvalidInputError("query", "must not contain NUL (U+0000) characters")
    clean = " ".join(query.split())
    if not clean:
        raise InvalidInputError("query", "must not be empty or only whitespace")
    if len(clean) > MAX_QUERY_CHARS:
        raise InvalidInputError("query", f"is {len(clean)} characters; the limit is {MAX_QUERY_CHARS}")
    return clean


def check_mode(mode: str) -> Mode:
    """One of hybrid, vector, lexical."""
    if mode not in MODES:
        raise InvalidInputError("mode", f"must be one of {', '.join(MODES)}, got {mode!r}")
    return mode  # type: ignore[return-value]


def _check_range(after: datetime | None, before: datetime | None, field: str) -> None:
    for name, value in ((f"{field}_after", after), (f"{field}_before", before)):
        if value is not None and not isinstance(value, datetime):
            raise InvalidInputError(name, "must be a date-time")
    if after is not None and before is not None and after >= before:
        raise InvalidInputError(f"{field}_after", f"must be earlier than {field}_before")


def make_snippet(body: str, terms: Sequence[str], limit: int = SNIPPET_CHARS) -> str:
    """~limit characters around the first word that starts with a matched lexeme, else the start."""
    words = [re.escape(t) for t in sorted(terms, key=len, reverse=True) if len(t) >= 2]
    if not words:
        return snippet(body, limit)
    pattern = re.compile(r"(?<!\w)(?:" + "|".join(words) + ")", re.IGNORECASE)
    match = pattern.search(body) or pattern.search(body.translate(_FOLD))
    if match is None or match.start() < limit // 3:
        return snippet(body, limit)
    start = body.rfind(" ", 0, match.start() - limit // 4) + 1
    return "… " + snippet(body[start:], limit)


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

    def search(
        self,
        owner: str,
        query: str,
        *,
        top_k: int = 10,
        mode: str = "hybrid",
        kind: str | None = None,
        source: str | None = None,
        tags_all: Sequence[str] | None = None,
        tags_any: Sequence[str] | None = None,
        language: str | None = None,
        created_after: datetime | None = None,
        created_before: datetime | None = None,
        updated_after: datetime | None = None,
        updated_before: datetime | None = None,
        min_similarity: float | None = None,
    ) -> SearchResult:
        """Search `owner`'s live entries; filters apply inside both branches, before fusion."""
        started = time.perf_counter()
        clean = check_query(query)
        check_limit(top_k, "top_k", MAX_TOP_K)
        want = check_mode(mode)
        _check_range(created_after, created_before, "created")
        _check_range(updated_after, updated_before, "updated")
        if min_similarity is not None and (
            isinstance(min_similarity, bool)
            or not isinstance(min_similarity, (int, float))
            or not -1.0 <= min_similarity <= 1.0
        ):
            raise InvalidInputError(
                "min_similarity", f"must be a number from -1 to 1, got {min_similarity!r}"
            )
        filters = SearchFilters(
            kind=check_kind(kind) if kind is not None else None,
            source=check_source(source),
            language=self.catalog.resolve_explicit(language).regconfig
            if language and language.strip()
            else None,
            tags_all=check_tags(tags_all, "tags_all") or None,
            tags_any=check_tags(tags_any, "tags_any") or None,
            created_after=created_after,
            created_before=created_before,
            updated_after=updated_after,
            updated_before=updated_before,
        )
        vector, embed_ms, reason = self._embed(clean) if want != "lexical" else (None, None, None)
        use_lexical = want != "vector" or vector is None
        params = SearchParams(
            owner=owner,
            query=clean,
            top_k=top_k,
            vector=vector,
            model=self.embedder.model if (vector is not None and self.embedder) else None,
            dim=len(vector) if vector is not None else None,
            use_vector=vector is not None,
            use_lexical=use_lexical,
            filters=filters,
            min_similarity=float(min_similarity) if min_similarity is not None else None,
            tuning=self.tuning,
        )
        sql_started = time.perf_counter()
        found = self.store.search(params)
        sql_ms = (time.perf_counter() - sql_started) * 1000
        hits = [self._hit(i, row) for i, row in enumerate(found.rows, start=1)]
        status: Status = "empty_store" if found.live_entries == 0 else ("ok" if hits else "no_matches")
        branches: list[Literal["vector", "lexical"]] = []
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
            timings=SearchTimings(
                embed_ms=round(embed_ms, 3) if embed_ms is not None else None,
                sql_ms=round(sql_ms, 3),
                total_ms=round((time.perf_counter() - started) * 1000, 3),
            ),
        )

    def _embed(self, query: str) -> tuple[list[float] | None, float | None, str | None]:
        if self.embedder is None:
            return None, None, "no embedding provider is configured: lexical search only"
        started = time.perf_counter()
        try:
            vector = self.embedder.embed_queries([query])[0]
        except EmbeddingError as exc:
            # A search must still answer: the lexical branch alone, flagged as degraded.
            log.warning("query embedding failed; lexical-only search", extra={"error": str(exc)})
            return None, None, f"embedding failed ({exc}): lexical search only"
        return vector, (time.perf_counter() - started) * 1000, None

    @staticmethod
    def _hit(rank: int, row: SearchRow) -> SearchHit:
        return SearchHit(
            rank=rank,
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
                regconfig=row.lex_cfg,
                matched_terms=row.matched,
            ),
        )
