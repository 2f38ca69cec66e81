"""Lexical-only nDCG@10 of pgrecall vs bm25s on BEIR collections (Cranfield, CISI).

Each collection is loaded into a fresh database at head through the store (EntryService.add,
English, no embedder), every query runs through SearchService in lexical mode, and the top 10
are scored with ir-measures against bm25s (English stop words + Snowball stemmer) on the same
title + text. Also reported: the same ranking with an unlimited candidate budget (the BM25
formula alone) and with a budget of 10% of the collection (the candidate selection that keeps
large stores fast, at the scale where it bites).

    python benchmarks/lexical_quality.py [--json benchmarks/lexical_quality.json]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from pgrecall.app import App
from pgrecall.config import Settings
from pgrecall.db.embedded import EmbeddedServer
from pgrecall.evaluation import corpus, record
from pgrecall.evaluation.lexical import COLLECTIONS, TOP, bm25s_run, judged_in_store, ndcg10, store_run
from pgrecall.evaluation.private_server import fresh_database, private_server
from pgrecall.services.search import SearchOptions, SearchService
from pgrecall.store.search import Tuning


def evaluate(server: EmbeddedServer, name: str) -> dict[str, object]:
    """Load one collection through the store and compare rankings."""
    url = fresh_database(server, f"quality_{name}")
    settings = Settings(database_url=url, home=Path(tempfile.gettempdir()) / "pgrecall-quality-unused")
    docs = corpus.read_beir(name)
    queries, qrels = judged_in_store(name)
    out: dict[str, object] = {"documents": len(docs), "queries": len(qrels)}
    started = time.perf_counter()
    with App(settings, embedder=None) as app:
        key_of = {}
        for doc in docs:
            written = app.entries.add(
                "default", text=doc.body or doc.title, title=doc.title or None, language="en", source=doc.key
            )
            key_of[str(written.entry.id)] = doc.key
        out["load_seconds"] = round(time.perf_counter() - started, 1)
        assert app.pool is not None
        for label, budget in (
            ("default_budget", Tuning().budget),
            ("exhaustive", 10**9),
            ("budget_10pct", max(1, len(docs) // 10)),
        ):
            cap = max(Tuning().cap, 2 * budget) if budget < 10**9 else budget
            tuning = replace(Tuning(), budget=budget, cap=cap)
            service = SearchService(settings, app.pool, app.catalog, None, tuning=tuning)

            def search(text: str, service: SearchService = service) -> list[str]:
                result = service.search("default", text, top_k=TOP, options=SearchOptions(mode="lexical"))
                return [key_of[h.id] for h in result.hits]

            out[f"pgrecall_{label}"] = round(ndcg10(store_run(search, queries), qrels), 4)
    texts = [f"{d.title}\n{d.body}" for d in docs]
    out["bm25s"] = round(ndcg10(bm25s_run([d.key for d in docs], texts, queries), qrels), 4)
    out["ratio"] = round(float(out["pgrecall_default_budget"]) / float(out["bm25s"]), 3)  # type: ignore[arg-type]
    return out


def main() -> None:
    """Run both collections on a private embedded server and print (or write) the numbers."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    run = record.Run(vars(args))
    with private_server("quality") as server:
        result = {name: evaluate(server, name) for name in COLLECTIONS}
    text = record.dumps(run.finish(result))
    if args.json:
        Path(args.json).write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    sys.exit(main())
