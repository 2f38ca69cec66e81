"""`pgrecall eval --documents DIR`: long documents stored as chunks against one entry per document.

Per collection (evaluation/documents_dataset.py), two throw-away databases on the configured server
(evaluation/documents_ingest.py):

- chunked: every document goes through DocumentService.ingest (parse, chunk at settings.chunk_chars,
  embed each chunk), as `pgrecall ingest` stores it;
- whole: every document's normalized text goes through EntryService.add as ONE entry (the
  behaviour before documents; max_text_chars is raised for the run so that no document is refused;
  the embedder represents a long text by the average of its 512-token windows).

Each query runs in every mode through SearchService.search with top_k = 20 (the tool's maximum).
Document level: in the store of chunks, a second search grouped by document (as
`search(group_by="document")`: top_k documents, each ranked by its best chunk), in the store of one
entry per document its top_k entries, scored with ir-measures against the document judgements; the
first top_k chunk hits mapped to their documents (the reading before grouped search, which may name
fewer than ten documents) are reported beside it. Passage level: the first 10 chunk hits judged by
DocumentCollection.passage_relevant (known-item nDCG@10). A bm25s reference (each text stemmed in its
own language, as `pgrecall eval`'s per-language reference) ranks the SAME chunks, read back from the
store, and the whole documents.

Ingest throughput counts chunks per second and pages per minute, a page being 3 000 characters of
normalized text. Passage vectors come from the on-disk vector cache (evaluation/vectors.py) when an
earlier run embedded the same text; the throughput then also gives a cold-cache estimate from the
embedding time measured per text.
"""

from __future__ import annotations

import os
import platform
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pgrecall.config import Settings
from pgrecall.domain.validation import MAX_TOP_K
from pgrecall.embeddings import create_embedder
from pgrecall.embeddings.base import Embedder
from pgrecall.evaluation import runner
from pgrecall.evaluation.documents_dataset import DocumentCollection, load_document_collection
from pgrecall.evaluation.documents_ingest import (
    MAX_ENTRY_CHARS,
    OWNER,
    PAGE_CHARS,
    CachingPassageEmbedder,
    Unit,
    eval_store,
    ingest_chunked,
    ingest_whole,
)
from pgrecall.evaluation.loader import progress_bar
from pgrecall.evaluation.pipeline import _server_facts, _versions, parse_modes
from pgrecall.evaluation.vectors import VectorCache
from pgrecall.services.retrieval import PER_DOCUMENT
from pgrecall.services.search import SearchOptions, SearchService

DOCUMENT_MARGIN = 0.10  # issue #36: chunked nDCG@10 >= one entry per document + 0.10 (document level)
# bm25s ranks this many chunks per query: enough to fill ten distinct documents behind the best.
BM25_CHUNK_DEPTH = 1000


def spread(items: Sequence[Any], limit: int | None) -> list[Any]:
    """`limit` items evenly spaced over `items` (all of them without a limit), order kept.

    Evenly spaced rather than the first N: the collections are sorted by language and manual, and a
    subset should hold some of each.
    """
    if limit is None or limit >= len(items):
        return list(items)
    return [items[(i * len(items)) // limit] for i in range(limit)]


def select(
    collection: DocumentCollection, limit_documents: int | None, limit_queries: int | None
) -> tuple[list[str], dict[str, str], dict[str, dict[str, int]]]:
    """Document ids, queries (clipped as the service takes them) and judgements of the run.

    With fewer documents, only queries with a judged document among them are kept.
    """
    doc_ids = [d.id for d in spread(collection.documents, limit_documents)]
    kept = set(doc_ids)
    judged = [
        q
        for q in collection.queries
        if any(d in kept and r > 0 for d, r in collection.qrels.get(q, {}).items())
    ]
    qids = spread(judged, limit_queries)
    queries = {q: runner.clip_query(collection.queries[q].text) for q in qids}
    qrels = {q: {d: r for d, r in collection.qrels[q].items() if d in kept} for q in qids}
    return doc_ids, queries, qrels


@dataclass
class SystemRun:
    """One system's rankings: documents per query, and (chunked) the first chunks per query."""

    documents: dict[str, list[str]] = field(default_factory=dict)
    chunks: dict[str, list[Unit]] = field(default_factory=dict)
    # Chunked, grouped: the documents as the first chunk hits name them (the reading before the
    # statement grouped by document), kept beside `documents` for comparison.
    first_chunk_documents: dict[str, list[str]] = field(default_factory=dict)
    wall_ms: list[float] = field(default_factory=list)
    degraded: int = 0


def first_documents(units: Sequence[Unit]) -> list[str]:
    """The documents of ranked units, each at its first occurrence."""
    return list(dict.fromkeys(u.doc_id for u in units))


def run_system(
    system: str,
    search: SearchService,
    queries: Mapping[str, str],
    units: Mapping[str, Unit],
    progress: bool,
    grouped: bool = False,
) -> SystemRun:
    """Every query through the service at top_k = MAX_TOP_K in one mode (and fusion).

    `grouped` (a store of chunks): the document ranking is a second search grouped by document, as
    `search(group_by="document")` answers, top_k documents each by its best chunk; the first
    chunk hits, the passage ranking, may name fewer documents than the one-entry store ranks.
    """
    mode, fusion = runner.mode_and_fusion(system)
    options = SearchOptions(mode=mode, fusion=fusion)
    by_document = replace(options, per_document=PER_DOCUMENT)
    run = SystemRun()
    # Untimed warm-up: the model load and the first connection are not a query's cost.
    search.search(OWNER, next(iter(queries.values())), top_k=MAX_TOP_K, options=options)
    with progress_bar(progress, total=len(queries), desc=f"search {system}", unit="query") as bar:
        for qid, text in queries.items():
            started = time.perf_counter()
            result = search.search(OWNER, text, top_k=MAX_TOP_K, options=options)
            run.wall_ms.append((time.perf_counter() - started) * 1000)
            run.degraded += int(result.degraded)
            ranked = [units[h.id] for h in result.hits if h.id in units]
            run.documents[qid] = first_documents(ranked)
            run.chunks[qid] = ranked[:10]
            if grouped:
                run.first_chunk_documents[qid] = run.documents[qid]
                groups = search.search(OWNER, text, top_k=MAX_TOP_K, options=by_document)
                # Hits come in fused order: a document's first hit is its best, so first
                # occurrence is the order of the groups.
                run.documents[qid] = first_documents([units[h.id] for h in groups.hits if h.id in units])
            bar.update(1)
    return run


def bm25_system(
    units: Mapping[str, Unit],
    queries: Mapping[str, str],
    query_languages: Mapping[str, str],
    depth: int,
) -> SystemRun:
    """bm25s over the stored units, each stemmed in its document's language."""
    ids = list(units)
    cfg = runner.Bm25Settings("per text", "per text", "per text")
    ranked, ms = runner.bm25_by_language_run(
        ids,
        [units[i].indexed for i in ids],
        [units[i].language for i in ids],
        queries,
        query_languages,
        cfg,
        depth=depth,
    )
    run = SystemRun(wall_ms=[ms])
    for qid, hits in ranked.items():
        chosen = [units[i] for i in hits]
        run.documents[qid] = first_documents(chosen)
        run.chunks[qid] = chosen[:10]
    return run


def score_run(
    run: SystemRun,
    collection: DocumentCollection,
    qrels: Mapping[str, Mapping[str, int]],
    passages: bool,
) -> dict[str, Any]:
    """One system's document-level (and, for chunks, passage-level) figures and its latency."""
    docs, per_query = runner.score(run.documents, qrels)
    out: dict[str, Any] = {
        "document": {"nDCG@10": round(docs["nDCG@10"], 4), "RR@10": round(docs["RR@10"], 4)},
        "per_query_document_nDCG@10": {q: per_query[q]["nDCG@10"] for q in qrels},
    }
    if run.first_chunk_documents:
        first, first_per_query = runner.score(run.first_chunk_documents, qrels)
        out["document_first_chunks"] = {
            "nDCG@10": round(first["nDCG@10"], 4),
            "RR@10": round(first["RR@10"], 4),
        }
        out["per_query_document_first_chunks_nDCG@10"] = {q: first_per_query[q]["nDCG@10"] for q in qrels}
    if passages:
        values = {
            q: collection.passage_ndcg_at_10(
                q, [(u.doc_id, u.text, u.section_path) for u in run.chunks.get(q, [])]
            )
            for q in qrels
        }
        out["passage"] = {"nDCG@10": round(sum(values.values()) / len(values), 4)}
        out["per_query_passage_nDCG@10"] = {q: round(v, 4) for q, v in values.items()}
    if run.wall_ms and len(run.wall_ms) > 1:
        ordered = sorted(run.wall_ms)
        out["latency"] = {
            "mean_ms": round(sum(ordered) / len(ordered), 2),
            "p95_ms": round(ordered[max(0, -(-95 * len(ordered) // 100) - 1)], 2),
        }
        out["degraded_queries"] = run.degraded
    elif run.wall_ms:
        out["latency"] = {"mean_ms_batched": round(run.wall_ms[0], 3)}
    return out


def _by_language(values: Mapping[str, float], collection: DocumentCollection) -> dict[str, float]:
    groups: dict[str, list[float]] = {}
    for qid, v in values.items():
        groups.setdefault(collection.queries[qid].language, []).append(v)
    return {lang: round(sum(v) / len(v), 4) for lang, v in sorted(groups.items())}


def targets(chunked: Mapping[str, Any], whole: Mapping[str, Any]) -> dict[str, Any]:
    """Issue #36's two targets: chunked vs one entry per document, hybrid vs its best branch."""
    out: dict[str, Any] = {}
    if "hybrid" in chunked and "hybrid" in whole:
        c, w = chunked["hybrid"]["document"]["nDCG@10"], whole["hybrid"]["document"]["nDCG@10"]
        out["chunked_vs_whole"] = {
            "rule": f"chunked hybrid document nDCG@10 >= one entry per document + {DOCUMENT_MARGIN}",
            "chunked": c,
            "whole": w,
            "margin": round(c - w, 4),
            "met": c >= w + DOCUMENT_MARGIN - 1e-12,
        }
    singles = [m for m in ("vector", "lexical") if m in chunked]
    if "hybrid" in chunked and singles:
        for level in ("document", "passage"):
            best = max(singles, key=lambda m: chunked[m][level]["nDCG@10"])
            h, b = chunked["hybrid"][level]["nDCG@10"], chunked[best][level]["nDCG@10"]
            out[f"hybrid_vs_best_branch_{level}"] = {
                "rule": f"chunked hybrid {level} nDCG@10 >= max(vector, lexical)",
                "hybrid": h,
                "best_branch": best,
                "best_branch_value": b,
                "margin": round(h - b, 4),
                "met": h >= b - 1e-12,
            }
    return out


def evaluate_documents(
    settings: Settings,
    collection_dir: Path | str,
    *,
    modes: Sequence[str] = ("hybrid", "vector", "lexical"),
    limit_documents: int | None = None,
    limit_queries: int | None = None,
    questions: str | None = None,
    embedder: Embedder | None = None,
    progress: bool = True,
    on_database: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Run the comparison on one collection; every figure and setting as a JSON-ready dict."""
    started = time.perf_counter()
    load_before = os.getloadavg()
    collection = load_document_collection(collection_dir, questions=questions)
    modes = parse_modes(modes)
    doc_ids, queries, qrels = select(collection, limit_documents, limit_queries)
    query_languages = {q: collection.queries[q].language for q in queries}
    active = embedder if embedder is not None else create_embedder(settings)
    systems = [*modes, "hybrid_rrf"] if "hybrid" in modes and settings.fusion != "rrf" else list(modes)
    results: dict[str, dict[str, Any]] = {"chunked": {}, "whole": {}}
    ingest: dict[str, Any] = {}
    counts: dict[str, int] = {}
    # Lexical searches alone need no vectors: nothing is embedded for them (chunks stay pending).
    with_vectors = any(mode != "lexical" for mode in modes)
    with VectorCache(settings.home, active.model, active.dim) as cache:
        caching = CachingPassageEmbedder(active, cache)
        for store, passages in (("chunked", True), ("whole", False)):
            with eval_store(settings, caching if with_vectors else None, on_database) as (app, _scoped):
                server = _server_facts(app)
                if store == "chunked":
                    log, units = ingest_chunked(app, collection, doc_ids, caching, progress)
                else:
                    log, units = ingest_whole(app, collection, doc_ids, caching, progress)
                ingest[store] = log.report()
                counts[store] = len(units)
                if with_vectors:
                    app.search.model_scale()
                for system in systems:
                    run = run_system(system, app.search, queries, units, progress, grouped=passages)
                    results[store][system] = score_run(run, collection, qrels, passages)
            depth = BM25_CHUNK_DEPTH if store == "chunked" else 100
            bm25 = bm25_system(units, queries, query_languages, depth)
            results[store]["bm25s"] = score_run(bm25, collection, qrels, passages)
    for systems_of in results.values():
        for result in systems_of.values():
            result["document"]["nDCG@10 by language"] = _by_language(
                result["per_query_document_nDCG@10"], collection
            )
            if "per_query_passage_nDCG@10" in result:
                result["passage"]["nDCG@10 by language"] = _by_language(
                    result["per_query_passage_nDCG@10"], collection
                )
    return {
        "kind": "documents",
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "collection": {
            "name": collection.name,
            "path": str(collection.path),
            "questions": collection.questions,
            "documents_in_collection": len(collection.documents),
            "documents_evaluated": len(doc_ids),
            "queries_in_collection": len(collection.queries),
            "queries_evaluated": len(queries),
            "limit_documents": limit_documents,
            "limit_queries": limit_queries,
            "subset": "evenly spaced over the id-sorted documents; queries with a judged document "
            "among them, evenly spaced",
            "query_languages": dict(Counter(query_languages.values())),
        },
        "embedder": {"model": active.model, "dim": active.dim},
        "parameters": {
            "chunk_chars": settings.chunk_chars,
            "modes": modes,
            "systems": systems,
            "fusion": settings.fusion,
            "top_k": MAX_TOP_K,
            "document_level": "chunked: a search grouped by document (per_document "
            f"{PER_DOCUMENT}), top_k documents each ranked by its best chunk; one entry per "
            "document: top_k entries; ir-measures nDCG@10 and RR@10",
            "document_first_chunks": "chunked: the first top_k chunk hits mapped to their "
            "document, first occurrence kept (the reading before grouped search)",
            "passage_level": "first 10 chunk hits judged by passage_relevant; known-item nDCG@10",
            "whole_store": "one entry per document: EntryService.add of the parsed normalized text "
            f"(max_text_chars {MAX_ENTRY_CHARS})",
            "bm25s": "Lucene k1=1.5 b=0.75 over the stored units (title + text, as embedded), each "
            f"stemmed with its document's language; chunked ranks {BM25_CHUNK_DEPTH} chunks per query",
            "page_chars": PAGE_CHARS,
        },
        "stored_units": counts,
        "ingest": ingest,
        "results": results,
        "targets": targets(results["chunked"], results["whole"]),
        "server": server,
        "versions": _versions(),
        "host": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "machine": platform.machine(),
            "loadavg_1_5_15_before": [round(x, 2) for x in load_before],
            "loadavg_1_5_15_after": [round(x, 2) for x in os.getloadavg()],
        },
        "seconds_total": round(time.perf_counter() - started, 1),
    }


def table(doc: dict[str, Any]) -> str:
    """Document- and passage-level nDCG@10 per system for both stores, throughput and targets."""
    col, params = doc["collection"], doc["parameters"]
    lines = [
        f"{col['name']}"
        + (f" ({col['questions']} questions)" if col.get("questions") else "")
        + f": {col['documents_evaluated']} documents ({doc['stored_units']['chunked']} chunks "
        f"at chunk_chars {params['chunk_chars']}), {col['queries_evaluated']} queries, "
        f"embedder {doc['embedder']['model']}",
    ]
    header = (
        f"{'system':12}{'chunked doc':>13}{'first chunks':>14}{'chunked psg':>13}{'whole doc':>11}"
        f"{'mean ms':>9}"
    )
    lines += [header, "-" * len(header)]
    chunked, whole = doc["results"]["chunked"], doc["results"]["whole"]
    for system in chunked:
        c, w = chunked[system], whole.get(system, {})
        w_doc = w.get("document", {}).get("nDCG@10")
        lat = c.get("latency", {})
        mean = lat.get("mean_ms", lat.get("mean_ms_batched"))
        first = c.get("document_first_chunks", {}).get("nDCG@10")
        lines.append(
            f"{system:12}{c['document']['nDCG@10']:>13.4f}"
            + (f"{first:>14.4f}" if first is not None else f"{'-':>14}")
            + f"{c['passage']['nDCG@10']:>13.4f}"
            + (f"{w_doc:>11.4f}" if w_doc is not None else f"{'-':>11}")
            + (f"{mean:>9.1f}" if isinstance(mean, (int, float)) else f"{'-':>9}")
        )
    lines.append(
        "doc: document-level nDCG@10 (chunked: grouped by document); first chunks: documents of the "
        "first chunk hits; psg: passage-level nDCG@10; whole: one entry per document"
    )
    for name, ing in doc["ingest"].items():
        cold, seen = ing["cold_cache_estimate"], ing["measured"]
        estimate = (
            f"; cold cache (estimated): {cold['units_per_s']} units/s, {cold['pages_per_min']} pages/min"
            if cold
            else ""
        )
        lines.append(
            f"ingest {name}: {ing['units']} units, {ing['pages']} pages of {ing['page_chars']} chars in "
            f"{ing['seconds']} s ({ing['texts_embedded']} texts embedded, {ing['texts_from_cache']} from "
            f"the cache): {seen['units_per_s']} units/s, {seen['pages_per_min']} pages/min{estimate}"
        )
    for target in doc["targets"].values():
        verdict = "met" if target["met"] else "MISSED"
        lines.append(f"target {target['rule']}: {verdict} (margin {target['margin']:+.4f})")
    return "\n".join(lines)
