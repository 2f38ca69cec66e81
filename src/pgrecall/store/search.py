"""The hybrid search: parameters, the statement for them (store/search_sql.py), typed rows back."""

from __future__ import annotations

import math
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from typing import Any

import psycopg
from psycopg import sql
from psycopg_pool import ConnectionPool

from pgrecall.domain.entries import EntryFilters
from pgrecall.domain.text import code_words
from pgrecall.store.entries import as_vector
from pgrecall.store.filters import compile_filters, has_filters
from pgrecall.store.search_sql import (
    FRAGMENTS,
    MAX_QUERY_TERMS,
    SQL_IS_CITUS,
    SQL_SEARCH,
    SQL_SET_KNOBS,
)

# The statement's own CTEs up to `stemmed`, then the languages it stems the whole query in (what the
# language probe kept). No search runs it: the probe's tests and benchmarks/language_probe.py do.
SQL_STEMMED_LANGUAGES = sql.SQL(
    SQL_SEARCH.split("stops AS MATERIALIZED")[0].rstrip().rstrip(",")
    + "\nSELECT DISTINCT cfg::text AS cfg FROM stemmed"
).format(**FRAGMENTS)

__all__ = [
    "HNSW_DIMS",
    "MAX_QUERY_TERMS",
    "SQL_SEARCH",
    "SQL_SET_KNOBS",
    "SQL_STEMMED_LANGUAGES",
    "FusionEvidence",
    "SearchParams",
    "SearchRow",
    "SearchRows",
    "SearchStore",
    "Tuning",
    "as_vector",
    "bind",
    "build_statement",
    "has_filters",
    "knobs",
    "to_rows",
]

# A vector of another dimension than these has no HNSW index (migration 0001) and is
# searched by exact scan, still correct.
HNSW_DIMS = frozenset({384, 512, 768, 1024, 1536})


@dataclass(frozen=True)
class FusionEvidence:
    """What sets convex fusion's weights for a question (Tuning.weight_from)."""

    words: int  # the length prior's count
    code_words: list[str]  # words written as code; any of them caps the cosine's weight

    @classmethod
    def of(cls, query: str) -> FusionEvidence:
        return cls(words=len(query.split()), code_words=code_words(query))


@dataclass(frozen=True)
class Tuning:
    """Knobs of the statement; the defaults are what the benchmarks measured."""

    rrf_k: int = 60
    n_vec: int = 50  # rows each branch hands to fusion
    n_lex: int = 50
    # HNSW list from large_store on. A parallel HNSW build is not deterministic (each graph differs a
    # little). With 16 links (migration 0013), 100k recall@10 at 400 was 0.985 / 0.9825 / 0.981 over
    # three builds. With 24 (migration 0014), on the bench's 100k store (200 queries, raw walk): 200 →
    # 0.991, 250 → 0.9945 (p50 2.31 / p95 4.37 ms), 300 → 0.9965, where 16 links at 400 gave 0.9885
    # (3.30 / 5.32 ms) on the same vectors; 250 keeps a margin over 0.98 for the builds' spread.
    ef_search: int = 250
    # Below large_store. pgvector prices a walk by m × ef_search against the store's size: with 24 links,
    # 200 made the planner prefer an exact scan for a plain `ORDER BY … LIMIT` at 10k (~25 ms against a
    # ~2 ms walk); 150 prices as 16 links at 200 did. Recall@10 at 150: 1.0 at 10k, 0.994 at 50k.
    ef_search_small: int = 150
    large_store: int = 50_000  # live entries of the owner
    # From huge_store on. On the bench's 1M store (8 000 real parents, 200 queries, raw walk): 250 →
    # 0.9425, 400 → 0.9745, 600 → 0.995, 800 → 0.997. From 300k on, a walk of 24 × 600 is under 5 % of
    # the store, as 24 × 250 is 6 % at 100k, where the planner keeps the walk; recall at 250 between
    # 100k (0.99) and 300k is not measured.
    ef_search_huge: int = 600
    huge_store: int = 300_000
    max_scan_tuples: int = 20_000  # iterative-scan ceiling for selective filters
    budget: int = 1_000  # lexical candidates: postings of the rarest terms (100k: 500 loses 30% nDCG on CISI)
    # Hard ceiling when even the rarest term alone is over budget: the GIN bitmap then hands over its
    # first `cap` holders in table order, an arbitrary sample either way, so no more than the budget.
    cap: int = 1_000
    k1: float = 1.2
    b: float = 0.75
    # Convex fusion: the cosine's weight w (the BM25 part has 1 − w) falls with the query's length,
    # w = base / (1 + length_factor · ln(1 + words)), within 0.1..0.9: one dense vector sums up a
    # short question well, while every further word adds BM25 evidence. Tuned with the lexical part
    # the statement fuses (BM25 over its list's mean ± 3 sd): frozen by docs/fusion-normalisation.md
    # on half-split collections before a collection built afterwards confirmed it.
    vector_weight_base: float = 1.3
    vector_weight_length_factor: float = 0.3
    # ... and at most this when the question names code (domain.text.code_words: max_connections,
    # Mail::POP3Client, join()): the model reads an identifier as fragments, the words find it.
    # Chosen on postgresql-doc; python-doc, built afterwards, refuted it until dotted names were
    # indexed by their parts (migration 0019), then confirmed it (docs/fusion-code.md).
    vector_weight_code: float = 0.4
    # Lexical, in a store of several languages: the query is searched only in languages whose
    # vocabulary holds this share of the query words the best-covered language holds, and their BM25
    # counts share^power. Chosen on debian-mixed (benchmarks/collections): lexical nDCG@10 0.800 with
    # neither, 0.837 with power 2 (per-language BM25 reference 0.832); one language: no effect.
    language_cover_ratio: float = 0.25
    language_cover_power: float = 2.0
    # A query of more distinct words than this picks its languages by its longest this many words
    # before it is stemmed whole: the stemming work then grows with the languages the query can be
    # in, not with every language the store holds.
    language_probe_words: int = 8
    # The probe keeps a language whose vocabulary holds this share of the probe words the best one
    # holds. Stricter than cover_ratio: in the bench's 17-language 100k store a long English question
    # found a quarter of its longest words in ~7.5 vocabularies (loan words, English fragments) and
    # was stemmed, looked up and scored in all of them; at half it is ~3, hybrid p95 15.4 → 13.4 ms,
    # the same nDCG@10 (benchmarks/language_probe.json). cover_ratio still decides among the kept ones.
    language_probe_ratio: float = 0.5
    body_chars: int = 20_000  # body prefix fetched per hit, for the snippet

    def vector_weight(self, query: str) -> float:
        """Convex fusion's cosine weight for this query (see vector_weight_base)."""
        return self.weight_from(FusionEvidence.of(query))

    def weight_from(self, evidence: FusionEvidence) -> float:
        """Convex fusion's cosine weight for a question with this evidence."""
        weight = self.vector_weight_base / (
            1.0 + self.vector_weight_length_factor * math.log1p(evidence.words)
        )
        if evidence.code_words:
            weight = min(weight, self.vector_weight_code)
        return min(0.9, max(0.1, weight))


@dataclass(frozen=True)
class SearchParams:
    """Everything the statement needs; the service fills it from validated input."""

    owner: str
    query: str
    top_k: int
    vector: Sequence[float] | None = None
    model: str | None = None
    dim: int | None = None
    use_vector: bool = True
    use_lexical: bool = True
    filters: EntryFilters = field(default_factory=EntryFilters)
    min_similarity: float | None = None
    recency_half_life_days: float | None = None
    tuning: Tuning = field(default_factory=Tuning)
    # "convex" needs the model's cosine scale (typical unrelated, typical related cosine); without
    # it, or without a query vector, the statement fuses by rrf (see fusion_used).
    fusion: str = "rrf"
    cos_scale: tuple[float, float] | None = None
    # Grouped by document: top_k documents (a note counts as its own), each with at most this many
    # of its best chunks; None: top_k hits.
    per_document: int | None = None

    @cached_property
    def evidence(self) -> FusionEvidence:
        """What sets this search's convex weights, read from its query once."""
        return FusionEvidence.of(self.query)

    def vector_weight(self) -> float:
        """Convex fusion's cosine weight for this search's query (Tuning.weight_from)."""
        return self.tuning.weight_from(self.evidence)

    def fusion_used(self) -> str:
        """The fusion the statement applies: convex only with a query vector and the model's scale."""
        scale = self.cos_scale
        convex = self.fusion == "convex" and scale is not None and scale[1] - scale[0] > 1e-6
        return "convex" if convex and self.use_vector and self.vector is not None else "rrf"


@dataclass(frozen=True)
class SearchRow:
    """One fused hit as the statement returns it (never with a vector)."""

    id: uuid.UUID
    fused: float
    vec_rank: int | None
    cos_sim: float | None
    vec_rrf: float
    lex_rank: int | None
    lex_score: float | None
    lex_rrf: float
    vec_part: float
    lex_part: float
    lex_cfg: str | None
    lex_imputed: bool  # lex_part is the cosine: the entry is in another language than the query
    matched: list[str]
    recency_rrf: float
    title: str | None
    body: str
    tags: list[str]
    language: str
    content_hash: str
    kind: str
    source: str | None
    created_at: datetime
    updated_at: datetime
    # A document's chunk: where it sits (None for a note).
    document_id: uuid.UUID | None = None
    ordinal: int | None = None
    section_path: list[str] | None = None
    document_title: str | None = None
    document_version: str | None = None


@dataclass(frozen=True)
class SearchRows:
    """The statement's answer: hits plus the counts that explain an empty one."""

    rows: list[SearchRow]
    live_entries: int
    query_terms: int
    lexical_candidates: int
    vector_candidates: int
    # Each branch's scale: the best cosine and the median one of the vector candidates,
    # the best BM25 score of the lexical ones (None when the branch found nothing).
    best_cos: float | None = None
    mid_cos: float | None = None
    best_lex: float | None = None
    # The lexical list's BM25 mean and population standard deviation: convex fusion rescales BM25
    # from mean ± 3 sd (None when the branch found nothing).
    lex_mean: float | None = None
    lex_sd: float | None = None
    # Distinct candidates of both branches (before the top_k cut).
    fused_candidates: int = 0


def build_statement(params: SearchParams) -> sql.Composed:
    """The search statement for these filters and this vector dimension."""
    filters, _ = compile_filters(params.filters)
    # Without a vector the branch is gated off by `qvec IS NOT NULL`; any dimension
    # keeps the text valid, and an indexed one keeps the plan shape.
    dim = params.dim if params.dim is not None and params.vector is not None else 384
    # The branch limit is a literal too: a generic plan that must assume `LIMIT $n` means
    # 10% of the table prices the HNSW walk out, and falls back to an exact scan.
    n_vec = sql.Literal(int(params.tuning.n_vec))
    return sql.SQL(SQL_SEARCH).format(dim=sql.Literal(int(dim)), filters=filters, n_vec=n_vec, **FRAGMENTS)


def bind(params: SearchParams) -> dict[str, Any]:
    """Bound parameters of the statement."""
    f, t = params.filters, params.tuning
    use_vec = params.use_vector and params.vector is not None
    convex = params.fusion_used() == "convex"
    lo, hi = params.cos_scale if convex and params.cos_scale is not None else (0.0, 1.0)
    w_vec = params.vector_weight()
    return {
        "owner": params.owner,
        "query": params.query,
        "lexical": params.use_lexical,
        "language": f.language,
        "max_terms": MAX_QUERY_TERMS,
        "budget": t.budget,
        "cap": t.cap,
        "k1": t.k1,
        "b": t.b,
        "n_lex": t.n_lex,
        "qvec": as_vector(params.vector) if use_vec else None,
        "model": params.model,
        "n_vec": t.n_vec,
        "min_sim": params.min_similarity if params.min_similarity is not None else -2.0,
        "half_life": params.recency_half_life_days,
        "k": float(t.rrf_k),
        "convex": convex,
        "w_vec": w_vec,
        "cover_ratio": t.language_cover_ratio,
        "cover_power": t.language_cover_power,
        "probe_words": t.language_probe_words,
        "probe_ratio": t.language_probe_ratio,
        "cos_lo": lo,
        "cos_hi": hi,
        "first_place": min(w_vec, 1.0 - w_vec) if convex else 1.0 / (t.rrf_k + 1.0),
        "top_k": params.top_k,
        "per_document": params.per_document,
        "body_chars": t.body_chars,
        **compile_filters(f)[1],
    }


def knobs(
    tuning: Tuning, filtered: bool, owner: str = "default", distributed: bool = False
) -> dict[str, Any]:
    """Values for SQL_SET_KNOBS: ef_search never below the branch limit.

    Citus cannot plan the statement generically (its router needs the owner's value): custom there.
    """
    return {
        "owner": owner,
        "ef_search": max(tuning.ef_search, tuning.n_vec),
        "ef_search_small": max(tuning.ef_search_small, tuning.n_vec),
        "large_store": tuning.large_store,
        "ef_search_huge": max(tuning.ef_search_huge, tuning.n_vec),
        "huge_store": tuning.huge_store,
        "max_scan_tuples": str(tuning.max_scan_tuples),
        "plan_cache_mode": "force_custom_plan" if filtered or distributed else "force_generic_plan",
    }


class SearchStore:
    """Runs the search statement over a psycopg connection pool."""

    def __init__(self, pool: ConnectionPool[psycopg.Connection[dict[str, Any]]]) -> None:
        self.pool = pool
        self._distributed: bool | None = None

    def distributed(self) -> bool:
        """True when the database is a Citus coordinator (asked once)."""
        if self._distributed is None:
            with self.pool.connection() as conn:
                row = conn.execute(SQL_IS_CITUS).fetchone()
            self._distributed = bool(row and row["citus"])
        return self._distributed

    def search(self, params: SearchParams) -> SearchRows:
        """One transaction: set the HNSW knobs locally, then the one search statement."""
        statement = build_statement(params)
        with self.pool.connection() as conn, conn.transaction():
            # pgrecall.owner scopes row-level security to this transaction (see store/scope.py).
            settings = knobs(params.tuning, has_filters(params.filters), params.owner, self.distributed())
            conn.execute(SQL_SET_KNOBS, settings)
            rows = conn.execute(statement, bind(params)).fetchall()
        return to_rows(rows)

    def statement(self, params: SearchParams) -> tuple[str, dict[str, Any]]:
        """The statement as PostgreSQL receives it (identifiers composed) and its bound parameters."""
        with self.pool.connection() as conn:
            return build_statement(params).as_string(conn), bind(params)

    def explain(self, params: SearchParams) -> str:
        """EXPLAIN (ANALYZE, BUFFERS) of the statement, inside a search's own transaction and knobs."""
        statement = sql.SQL("EXPLAIN (ANALYZE, BUFFERS) ") + build_statement(params)
        with self.pool.connection() as conn, conn.transaction():
            settings = knobs(params.tuning, has_filters(params.filters), params.owner, self.distributed())
            conn.execute(SQL_SET_KNOBS, settings)
            rows = conn.execute(statement, bind(params)).fetchall()
        return "\n".join(str(next(iter(r.values()))) for r in rows)


def to_rows(rows: list[dict[str, Any]]) -> SearchRows:
    """Typed rows from the statement's dict rows."""
    first = rows[0] if rows else {}
    hits = [
        SearchRow(
            id=r["id"],
            fused=float(r["fused"]),
            vec_rank=r["vec_rank"],
            cos_sim=float(r["cos_sim"]) if r["cos_sim"] is not None else None,
            vec_rrf=float(r["vec_rrf"]),
            lex_rank=r["lex_rank"],
            lex_score=float(r["lex_score"]) if r["lex_score"] is not None else None,
            lex_rrf=float(r["lex_rrf"]),
            vec_part=float(r["vec_part"]),
            lex_part=float(r["lex_part"]),
            lex_cfg=r["lex_cfg"],
            lex_imputed=bool(r["lex_imputed"]),
            matched=list(r["matched"] or []),
            recency_rrf=float(r["recency_rrf"]),
            title=r["title"],
            body=r["body"],
            tags=list(r["tags"]),
            language=r["language"],
            content_hash=r["content_hash"],
            kind=r["kind"],
            source=r["source"],
            created_at=r["created_at"],
            updated_at=r["updated_at"],
            document_id=r["document_id"],
            ordinal=r["ordinal"],
            section_path=r["section_path"],
            document_title=r["document_title"],
            document_version=r["document_version"],
        )
        for r in rows
        if r["id"] is not None
    ]
    return SearchRows(
        rows=hits,
        live_entries=int(first.get("live_entries") or 0),
        query_terms=int(first.get("query_terms") or 0),
        lexical_candidates=int(first.get("lexical_candidates") or 0),
        vector_candidates=int(first.get("vector_candidates") or 0),
        fused_candidates=int(first.get("fused_candidates") or 0),
        best_cos=_float_or_none(first.get("best_cos")),
        mid_cos=_float_or_none(first.get("mid_cos")),
        best_lex=_float_or_none(first.get("best_lex")),
        lex_mean=_float_or_none(first.get("lex_mean")),
        lex_sd=_float_or_none(first.get("lex_sd")),
    )


def _float_or_none(value: Any) -> float | None:
    return float(value) if value is not None else None
