"""Running the queries through the search service, scoring runs with ir-measures, and the bm25s reference.

Two passes per mode, both through SearchService.search (validation, query embedding, parameters, the
one SQL statement):
- the product pass: the service exactly as the MCP tool calls it (top_k = 10, default tuning); it
  gives nDCG@10, RR@10 and the latency;
- the depth pass, for Recall@100: the tool caps top_k at 20 and each branch hands 50 rows to fusion,
  so the same service runs with branch limits of 100 (Tuning.n_vec/n_lex/ef_search) and a store whose
  statement LIMIT is 100. Same SQL text, same parameters otherwise.
"""

from __future__ import annotations

import logging
import math
import re
import time
import unicodedata
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool

from pgrecall.config import Settings
from pgrecall.domain.language import CJK_RUN, CONFIG_TO_ISO, ISO_TO_CONFIG, SEGMENTED, LanguageCatalog
from pgrecall.domain.validation import MAX_QUERY_CHARS
from pgrecall.embeddings.base import Embedder
from pgrecall.embeddings.cache import CachedQueryEmbedder
from pgrecall.evaluation.loader import progress_bar
from pgrecall.services.search import SearchOptions, SearchResult, SearchService
from pgrecall.store.search import SearchParams, SearchRows, SearchStore, Tuning

TOP_K = 10
DEPTH = 100
# Reported names are ir-measures' own (nDCG@10, R@100, RR@10 = MRR@10).
MEASURE_NAMES = ("nDCG@10", "R@100", "RR@10")
# A query with no hit still counts (as 0): pytrec_eval skips queries absent from a run.
NO_HIT = "__no_hit__"
# Stop-word lists bm25s ships (its _infer_stopwords), by ISO 639-1 code.
BM25S_STOPWORDS = frozenset(
    {"en", "de", "nl", "fr", "es", "pt", "it", "ru", "sv", "no", "zh", "tr", "ko", "da"}
)


def clip_query(text: str) -> str:
    """The query as the service accepts it: whitespace folded, cut at a word boundary to the length limit."""
    flat = " ".join(text.split())
    if len(flat) <= MAX_QUERY_CHARS:
        return flat
    cut = flat[:MAX_QUERY_CHARS]
    return cut.rsplit(" ", 1)[0] if " " in cut else cut


class DepthStore(SearchStore):
    """The search store with a deeper statement LIMIT: the rest of the statement and its binds unchanged."""

    def __init__(self, pool: ConnectionPool[psycopg.Connection[dict[str, Any]]], depth: int) -> None:
        super().__init__(pool)
        self.depth = depth

    def search(self, params: SearchParams) -> SearchRows:
        """The same statement with top_k = depth."""
        return super().search(replace(params, top_k=self.depth))


def depth_tuning(base: Tuning, depth: int) -> Tuning:
    """The service's tuning with each branch handing at least `depth` rows to fusion."""
    return replace(
        base, n_vec=max(base.n_vec, depth), n_lex=max(base.n_lex, depth), ef_search=max(base.ef_search, depth)
    )


def depth_service(
    settings: Settings,
    pool: ConnectionPool[psycopg.Connection[dict[str, Any]]],
    catalog: LanguageCatalog,
    embedder: Embedder,
    base: Tuning,
    depth: int = DEPTH,
) -> SearchService:
    """A SearchService whose rankings go `depth` deep (query vectors cached in memory across modes)."""
    service = SearchService(
        settings, pool, catalog, CachedQueryEmbedder(embedder), tuning=depth_tuning(base, depth)
    )
    service.store = DepthStore(pool, depth)
    return service


@dataclass
class ModeRun:
    """One mode's rankings (BEIR ids) and timings."""

    mode: str
    top: dict[str, list[str]] = field(default_factory=dict)
    deep: dict[str, list[str]] = field(default_factory=dict)
    wall_ms: list[float] = field(default_factory=list)
    embed_ms: list[float] = field(default_factory=list)
    sql_ms: list[float] = field(default_factory=list)
    degraded: int = 0
    empty: int = 0
    fusions: Counter[str] = field(default_factory=Counter)


def _ids(result: SearchResult, beir_of: Mapping[str, str]) -> list[str]:
    return [beir_of[hit.id] for hit in result.hits]


# Evaluated systems that are a search mode with a fusion other than the configured one.
FUSION_VARIANTS = {"hybrid_rrf": ("hybrid", "rrf")}


def mode_and_fusion(system: str) -> tuple[str, str | None]:
    """The search mode and fusion (None: the configured one) an evaluated system name stands for."""
    return FUSION_VARIANTS.get(system, (system, None))


def run_mode(
    system: str,
    service: SearchService,
    deep: SearchService,
    owner: str,
    queries: Mapping[str, str],
    beir_of: Mapping[str, str],
    progress: bool = True,
) -> ModeRun:
    """Every query through the product pass (timed) and the depth pass."""
    run = ModeRun(system)
    mode, fusion = mode_and_fusion(system)
    options = SearchOptions(mode=mode, fusion=fusion)
    first = next(iter(queries.values()))
    # Untimed warm-up: loads the model and the connection, which the first user query of a
    # long-running server does not pay.
    service.search(owner, first, top_k=TOP_K, options=options)
    with progress_bar(progress, iterable=queries.items(), desc=f"search {system}", unit="query") as bar:
        for qid, text in bar:
            started = time.perf_counter()
            result = service.search(owner, text, top_k=TOP_K, options=options)
            run.fusions[result.fusion] += 1
            run.wall_ms.append((time.perf_counter() - started) * 1000)
            run.top[qid] = _ids(result, beir_of)
            if result.timings.embed_ms is not None:
                run.embed_ms.append(result.timings.embed_ms)
            run.sql_ms.append(result.timings.sql_ms)
            run.degraded += int(result.degraded)
            run.empty += int(not result.hits)
            run.deep[qid] = _ids(deep.search(owner, text, top_k=TOP_K, options=options), beir_of)
    return run


def _percentile(values: Sequence[float], q: float) -> float:
    # Nearest-rank percentile: a value that was actually measured.
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]


def latency(run: ModeRun) -> dict[str, Any]:
    """Mean / p50 / p95 / max of the whole service call, and the mean of its parts, in ms."""
    wall = run.wall_ms
    out: dict[str, Any] = {
        "queries": len(wall),
        "mean_ms": round(sum(wall) / len(wall), 2),
        "p50_ms": round(_percentile(wall, 50), 2),
        "p95_ms": round(_percentile(wall, 95), 2),
        "max_ms": round(max(wall), 2),
        "sql_mean_ms": round(sum(run.sql_ms) / len(run.sql_ms), 2),
        "embed_mean_ms": round(sum(run.embed_ms) / len(run.embed_ms), 2) if run.embed_ms else None,
    }
    return out


def score(
    run: Mapping[str, Sequence[str]], qrels: Mapping[str, Mapping[str, int]]
) -> tuple[dict[str, float], dict[str, dict[str, float]]]:
    """ir-measures nDCG@10, R@100, RR@10 of a ranked run: the mean, and per query."""
    import ir_measures  # type: ignore[import-untyped,import-not-found,unused-ignore]

    measures = [ir_measures.parse_measure(name) for name in MEASURE_NAMES]
    judged = [ir_measures.Qrel(q, d, int(rel)) for q, docs in qrels.items() for d, rel in docs.items()]
    scored = []
    for qid in qrels:
        ranked = list(run.get(qid) or []) or [NO_HIT]
        # Scores from ranks: the evaluator re-sorts by score, and equal scores would be
        # re-ordered by document id.
        scored += [ir_measures.ScoredDoc(qid, did, float(len(ranked) - i)) for i, did in enumerate(ranked)]
    mean = {str(m): float(v) for m, v in ir_measures.calc_aggregate(measures, judged, scored).items()}
    per_query: dict[str, dict[str, float]] = {}
    for item in ir_measures.iter_calc(measures, judged, scored):
        per_query.setdefault(item.query_id, {})[str(item.measure)] = round(float(item.value), 4)
    return {name: mean[name] for name in MEASURE_NAMES}, per_query


@dataclass(frozen=True)
class Bm25Settings:
    """How the bm25s reference tokenizes and scores."""

    language: str  # the corpus' majority text-search config
    stemmer: str | None  # PyStemmer (Snowball) algorithm
    stopwords: str | tuple[str, ...] | None  # bm25s stop-word list (ISO code), or the words themselves
    method: str = "lucene"
    k1: float = 1.5
    b: float = 0.75
    token_pattern: str = r"(?u)\b\w\w+\b"  # noqa: S105 - a regular expression, not a secret
    lower: bool = True
    text: str = "title + two newlines + text, the same string that is embedded (title and body are indexed)"


def bm25_settings(languages: Mapping[str, int]) -> Bm25Settings:
    """bm25s settings for the corpus' majority language: its Snowball stemmer and bm25s stop words, if any."""
    import Stemmer  # type: ignore[import-untyped,import-not-found,unused-ignore]

    majority = max(languages.items(), key=lambda kv: kv[1])[0] if languages else "simple"
    iso = CONFIG_TO_ISO.get(majority)
    # PostgreSQL's Snowball configs and PyStemmer's algorithms share their names.
    stemmer = majority if majority in Stemmer.algorithms() else None
    return Bm25Settings(majority, stemmer, iso if iso in BM25S_STOPWORDS else None)


def bm25_run(
    doc_ids: Sequence[str],
    texts: Sequence[str],
    queries: Mapping[str, str],
    cfg: Bm25Settings,
    depth: int = DEPTH,
) -> tuple[dict[str, list[str]], float]:
    """bm25s top `depth` per query (documents scoring 0 left out) and the mean ms per query."""
    import bm25s  # type: ignore[import-untyped,import-not-found,unused-ignore]
    import Stemmer  # type: ignore[import-untyped,import-not-found,unused-ignore]

    # bm25s sets its logger to DEBUG; its index-building chatter is not ours to print.
    logging.getLogger("bm25s").setLevel(logging.WARNING)
    stemmer = Stemmer.Stemmer(cfg.stemmer) if cfg.stemmer else None

    def tokenize(items: list[str]) -> Any:
        return bm25s.tokenize(
            items,
            lower=cfg.lower,
            token_pattern=cfg.token_pattern,
            stopwords=cfg.stopwords,
            stemmer=stemmer,
            show_progress=False,
        )

    retriever = bm25s.BM25(method=cfg.method, k1=cfg.k1, b=cfg.b)
    retriever.index(tokenize(list(texts)), show_progress=False)
    qids = list(queries)
    started = time.perf_counter()
    docs, scores = retriever.retrieve(
        tokenize([queries[q] for q in qids]), k=min(depth, len(doc_ids)), show_progress=False, n_threads=1
    )
    per_query_ms = (time.perf_counter() - started) * 1000 / max(1, len(qids))
    run = {
        qid: [doc_ids[int(d)] for d, s in zip(docs[i], scores[i], strict=True) if s > 0]
        for i, qid in enumerate(qids)
    }
    return run, per_query_ms


def cjk_bigram_tokens(text: str, token_pattern: str, stopwords: frozenset[str]) -> list[str]:
    """Lucene CJKAnalyzer's rule: widths folded, every Han/kana/Hangul run as overlapping bigrams (a lone
    character as itself), other words lower-cased, English stop words dropped, nothing stemmed."""
    tokens: list[str] = []
    folded = unicodedata.normalize("NFKC", text)
    at = 0
    for run in [*CJK_RUN.finditer(folded), None]:
        end = run.start() if run is not None else len(folded)
        words = re.findall(token_pattern, folded[at:end].lower())
        tokens += [w for w in words if w not in stopwords]
        if run is not None:
            chars = run.group()
            tokens += [chars] if len(chars) == 1 else [chars[i : i + 2] for i in range(len(chars) - 1)]
            at = run.end()
    return tokens


def stemmed_tokens(items: list[str], iso: str, cfg: Bm25Settings) -> list[list[str]]:
    """Texts of one stemmable language as the bm25s reference tokenizes them: its Snowball stemmer
    and bm25s stop words where they exist."""
    import bm25s  # type: ignore[import-untyped,import-not-found,unused-ignore]
    import Stemmer  # type: ignore[import-untyped,import-not-found,unused-ignore]

    config = ISO_TO_CONFIG.get(iso)
    stemmer = Stemmer.Stemmer(config) if config in Stemmer.algorithms() else None
    stopwords = iso if iso in BM25S_STOPWORDS else None
    return list(
        bm25s.tokenize(
            items,
            lower=cfg.lower,
            token_pattern=cfg.token_pattern,
            stopwords=stopwords,
            stemmer=stemmer,
            return_ids=False,
            show_progress=False,
        )
    )


def bm25_by_language_run(
    doc_ids: Sequence[str],
    texts: Sequence[str],
    doc_languages: Sequence[str],
    queries: Mapping[str, str],
    query_languages: Mapping[str, str],
    cfg: Bm25Settings,
    depth: int = DEPTH,
) -> tuple[dict[str, list[str]], float]:
    """bm25s over documents each stemmed in its own language (ISO codes given), each query in its own.

    The reference for a store that mixes languages: one index, one vocabulary, every text tokenized
    with its language's Snowball stemmer and bm25s stop words; Chinese, Japanese and Korean texts as
    character bigrams (cjk_bigram_tokens). A query without a language is stemmed as the corpus'
    majority language.
    """
    import bm25s  # type: ignore[import-untyped,import-not-found,unused-ignore]

    logging.getLogger("bm25s").setLevel(logging.WARNING)
    majority = Counter(doc_languages).most_common(1)[0][0]

    def tokenize(items: list[str], iso: str) -> list[list[str]]:
        if iso in SEGMENTED:
            english = frozenset(bm25s.stopwords.STOPWORDS_EN)
            return [cjk_bigram_tokens(text, cfg.token_pattern, english) for text in items]
        return stemmed_tokens(items, iso, cfg)

    def by_language(items: list[str], languages: list[str]) -> list[list[str]]:
        out: list[list[str]] = [[] for _ in items]
        for iso in set(languages):
            positions = [i for i, lang in enumerate(languages) if lang == iso]
            for i, tokens in zip(positions, tokenize([items[i] for i in positions], iso), strict=True):
                out[i] = tokens
        return out

    retriever = bm25s.BM25(method=cfg.method, k1=cfg.k1, b=cfg.b)
    retriever.index(by_language(list(texts), list(doc_languages)), show_progress=False)
    qids = list(queries)
    query_tokens = by_language([queries[q] for q in qids], [query_languages.get(q, majority) for q in qids])
    started = time.perf_counter()
    run: dict[str, list[str]] = {}
    for qid, tokens in zip(qids, query_tokens, strict=True):
        if not tokens:
            run[qid] = []
            continue
        k = min(depth, len(doc_ids))
        docs, scores = retriever.retrieve([tokens], k=k, show_progress=False, n_threads=1)
        run[qid] = [doc_ids[int(d)] for d, sc in zip(docs[0], scores[0], strict=True) if sc > 0]
    per_query_ms = (time.perf_counter() - started) * 1000 / max(1, len(qids))
    return run, per_query_ms


def describe(cfg: Bm25Settings) -> dict[str, Any]:
    """The bm25s settings as JSON."""
    return asdict(cfg)
