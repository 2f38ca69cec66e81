"""Convex fusion's cosine weight for a question that names code: the ceiling, measured on one store.

A long-document collection is ingested once as chunks (DocumentService.ingest at
PGRECALL_CHUNK_CHARS, vectors from PGRECALL_HOME's cache as `pgrecall eval --documents` keeps them);
the vector branch, the lexical branch and rrf run once, then hybrid (convex) once per ceiling of
`Tuning.vector_weight_code` (1.0: no ceiling, the length prior alone). Document- and passage-level
nDCG@10 as `pgrecall eval --documents` scores them, overall and for the questions that name code
(`domain.text.code_words`) and those that do not, with a paired sign-flip test of each ceiling against
no ceiling at passage level (cjk_segmenter.paired). docs/fusion-code.md is the study.

Run: PGRECALL_CHUNK_CHARS=1200 python benchmarks/fusion_code.py DIR [--caps 1.0,0.5,…]
         [--limit-documents N] [--questions NAME] [--json FILE]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from cjk_segmenter import paired

from pgrecall.config import Settings
from pgrecall.domain.text import code_words
from pgrecall.embeddings import create_embedder
from pgrecall.evaluation import documents_eval as d
from pgrecall.evaluation import documents_ingest as di
from pgrecall.evaluation import record
from pgrecall.evaluation.documents_dataset import load_document_collection
from pgrecall.evaluation.vectors import VectorCache
from pgrecall.store.search import Tuning

BRANCHES = ("vector", "lexical", "hybrid_rrf")


def _as_measure(per_query: Mapping[str, float]) -> dict[str, dict[str, float]]:
    return {q: {"nDCG@10": v} for q, v in per_query.items()}


def _split(per_query: Mapping[str, float], named: set[str]) -> dict[str, float | None]:
    def mean(ids: list[str]) -> float | None:
        return round(statistics.fmean(per_query[q] for q in ids), 4) if ids else None

    return {
        "all": mean(list(per_query)),
        "code": mean([q for q in per_query if q in named]),
        "other": mean([q for q in per_query if q not in named]),
    }


def measure(
    collection_dir: Path, caps: Sequence[float], limit_documents: int | None, questions: str | None
) -> dict[str, Any]:
    """Every ceiling and branch on one chunked store of the collection."""
    settings = Settings()
    collection = load_document_collection(collection_dir, questions=questions)
    doc_ids, queries, qrels = d.select(collection, limit_documents, None)
    named = {q for q, text in queries.items() if code_words(text)}
    embedder = create_embedder(settings)
    results: dict[str, Any] = {}
    with VectorCache(settings.home, embedder.model, embedder.dim) as cache:
        caching = di.CachingPassageEmbedder(embedder, cache)
        with di.eval_store(settings, caching, None) as (app, _scoped):
            started = time.perf_counter()
            log, units = di.ingest_chunked(app, collection, doc_ids, caching, True)
            print(f"ingested {len(units)} chunks in {time.perf_counter() - started:.0f} s", flush=True)
            app.search.model_scale()
            runs = [(system, None) for system in BRANCHES] + [("hybrid", cap) for cap in caps]
            for system, cap in runs:
                if cap is not None:
                    app.search.tuning = replace(Tuning(), vector_weight_code=cap)
                run = d.run_system(system, app.search, queries, units, True)
                scored = d.score_run(run, collection, qrels, True)
                label = system if cap is None else f"hybrid cap {cap}"
                results[label] = {
                    "document": _split(scored["per_query_document_nDCG@10"], named),
                    "passage": _split(scored["per_query_passage_nDCG@10"], named),
                    "per_query_passage": scored["per_query_passage_nDCG@10"],
                    "per_query_document": scored["per_query_document_nDCG@10"],
                }
                r = results[label]
                print(f"{label:18} document {r['document']} passage {r['passage']}", flush=True)
    off = results.get("hybrid cap 1.0")
    if off is not None:
        for label, r in results.items():
            if label.startswith("hybrid cap"):
                r["passage_vs_no_cap"] = paired(
                    _as_measure(r["per_query_passage"]), _as_measure(off["per_query_passage"])
                )
    return {
        "collection": collection.name,
        "questions": questions or "default",
        "documents": len(doc_ids),
        "queries": len(queries),
        "queries_naming_code": len(named),
        "chunks": len(units),
        "chunk_chars": settings.chunk_chars,
        "caps": list(caps),
        "ingest": log.report(),
        "results": results,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("collection", type=Path)
    parser.add_argument("--caps", default="1.0,0.3,0.4,0.5,0.6,0.7")
    parser.add_argument("--limit-documents", type=int)
    parser.add_argument("--questions", help="the collection's question set NAME (queries-NAME.jsonl)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    run = record.Run(vars(args))
    caps = [float(c) for c in args.caps.split(",")]
    doc = run.finish(measure(args.collection, caps, args.limit_documents, args.questions))
    if args.json:
        record.write(doc, args.json)
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
