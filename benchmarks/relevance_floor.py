"""Relevant enough to cite: precision and recall of build_context's cited set, with and without a floor.

For each judged query of a BEIR collection, build_context runs as the MCP tool runs it (hybrid
search, top_k 10, a 4 000-token budget) with min_relevance 0 (no floor: what it cited before
the floor existed) and with each candidate floor. The cited set is compared with the qrels:
precision = relevant cited / cited, recall = relevant cited / relevant judged (both averaged over
queries; a query that cites nothing has precision 0). search(top_k=10) is measured the same way.
The other collection's queries, which nothing in the store answers, give the number of
unrelated entries cited per off-topic question.

Tune on one collection, report on the other: `--tune cranfield --report cisi` picks the floor with
the best cited precision whose recall stays within --recall-slack of no floor on the tune
collection, then reports that floor, untouched, on the report collection (and the reverse run
gives the other direction).

Run: python benchmarks/relevance_floor.py [--tune cranfield] [--report cisi] [--json FILE]
Needs PGRECALL_BENCH_DATA or ../shared/data; document vectors are cached under PGRECALL_HOME.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import SecretStr

from pgrecall.app import App
from pgrecall.config import Settings
from pgrecall.embeddings import create_embedder
from pgrecall.evaluation import runner
from pgrecall.evaluation.dataset import load_dataset
from pgrecall.evaluation.loader import isolated_database, load_corpus
from pgrecall.evaluation.vectors import VectorCache
from pgrecall.services.context import build_context
from pgrecall.services.retrieval import RetrievalRequest
from pgrecall.services.search import SearchOptions

OWNER = "eval"
FLOORS = (0.0, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8)
DATA = Path(os.environ.get("PGRECALL_BENCH_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))


def _prf(found: Sequence[str], relevant: set[str]) -> tuple[float, float]:
    hits = sum(1 for doc in found if doc in relevant)
    precision = hits / len(found) if found else 0.0
    return precision, hits / len(relevant) if relevant else 0.0


def _mean(values: Sequence[float]) -> float:
    return round(sum(values) / len(values), 4) if values else 0.0


def _queries(name: str) -> dict[str, str]:
    return {q: runner.clip_query(t) for q, t in load_dataset(DATA / name).evaluated_queries(None).items()}


def measure(settings: Settings, name: str, floors: Sequence[float], foreign: str) -> dict[str, Any]:
    """Cited-set and top-10 precision/recall per floor on one collection.

    Also the entries cited per query for the `foreign` collection's queries, asked of this store:
    nothing in it answers them (Cranfield is aerodynamics, CISI information science), so
    every citation is an unrelated entry.
    """
    dataset = load_dataset(DATA / name)
    queries = _queries(name)
    off_topic = _queries(foreign)
    qrels = {q: {d for d, grade in dataset.qrels[q].items() if grade > 0} for q in queries}
    embedder = create_embedder(settings)
    per_floor: dict[str, Any] = {}
    with (
        VectorCache(settings.home, embedder.model, embedder.dim) as cache,
        isolated_database(settings) as url,
    ):
        scoped = settings.model_copy(update={"database_url": SecretStr(url)})
        with App(scoped, embedder=embedder, restricted=True) as app:
            assert app.pool is not None
            loaded = load_corpus(
                dataset=dataset,
                url=url,
                pool=app.pool,
                detector=app.detector,
                embedder=embedder,
                cache=cache,
                owner=OWNER,
                max_chars=settings.max_text_chars,
                batch_size=settings.embedding_batch_size,
                progress=True,
            )
            beir_of: Mapping[str, str] = loaded.beir_of
            for floor in floors:
                started = time.perf_counter()
                cited_p, cited_r, cited_n, top_p, top_r, top_n = [], [], [], [], [], []
                for qid, text in queries.items():
                    options = SearchOptions(min_relevance=floor)
                    built = build_context(
                        app.retrieval, OWNER, RetrievalRequest(query=text, top_k=10, options=options)
                    )
                    cited = [beir_of[c.id] for c in built.citations]
                    p, r = _prf(cited, qrels[qid])
                    cited_p.append(p)
                    cited_r.append(r)
                    cited_n.append(len(cited))
                    found = app.retrieval.retrieve(
                        OWNER, RetrievalRequest(query=text, top_k=10, options=options)
                    )
                    top = [beir_of[str(item.entry.id)] for item in found.items]
                    p, r = _prf(top, qrels[qid])
                    top_p.append(p)
                    top_r.append(r)
                    top_n.append(len(top))
                off_cited = [
                    len(
                        build_context(
                            app.retrieval, OWNER, RetrievalRequest(query=text, top_k=10, options=options)
                        ).citations
                    )
                    for text in off_topic.values()
                ]
                per_floor[str(floor)] = {
                    "off_topic_cited_per_query": _mean(off_cited),
                    "cited": {
                        "precision": _mean(cited_p),
                        "recall": _mean(cited_r),
                        "mean_count": _mean(cited_n),
                    },
                    "search_top10": {
                        "precision": _mean(top_p),
                        "recall": _mean(top_r),
                        "mean_count": _mean(top_n),
                    },
                    "seconds": round(time.perf_counter() - started, 1),
                }
                print(f"{name} floor {floor}: {json.dumps(per_floor[str(floor)])}", file=sys.stderr)
    return {"queries": len(queries), "documents": len(dataset.docs), "floors": per_floor}


def pick(tuned: dict[str, Any], slack: float) -> float:
    """The floor with the best cited precision whose recall is within `slack` of no floor."""
    floors = tuned["floors"]
    base = floors["0.0"]["cited"]["recall"]
    allowed = [f for f, v in floors.items() if v["cited"]["recall"] >= base * (1.0 - slack)]
    return float(max(allowed, key=lambda f: (floors[f]["cited"]["precision"], -float(f))))


def main(argv: Sequence[str] | None = None) -> int:
    """Tune on one collection, report on another."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--tune", default="cranfield")
    parser.add_argument("--report", default="cisi")
    parser.add_argument("--recall-slack", type=float, default=0.02, help="recall loss allowed, relative")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    home = Path(os.environ.get("PGRECALL_HOME") or tempfile.mkdtemp(prefix="pgrecall-bench-", dir="/tmp"))
    home.chmod(0o755)
    settings = Settings(home=home, models="in-process")
    tuned = measure(settings, args.tune, FLOORS, foreign=args.report)
    chosen = pick(tuned, args.recall_slack)
    reported = measure(settings, args.report, (0.0, chosen), foreign=args.tune)
    before, after = reported["floors"]["0.0"], reported["floors"][str(chosen)]
    out = {
        "command": "python benchmarks/relevance_floor.py "
        + " ".join(argv if argv is not None else sys.argv[1:]),
        "tuned_on": args.tune,
        "reported_on": args.report,
        "recall_slack": args.recall_slack,
        "chosen_floor": chosen,
        "tune": tuned,
        "report": reported,
        "report_summary": {
            "cited_precision": [before["cited"]["precision"], after["cited"]["precision"]],
            "cited_recall": [before["cited"]["recall"], after["cited"]["recall"]],
            "cited_per_query": [before["cited"]["mean_count"], after["cited"]["mean_count"]],
            "off_topic_cited_per_query": [
                before["off_topic_cited_per_query"],
                after["off_topic_cited_per_query"],
            ],
            "top10_precision": [before["search_top10"]["precision"], after["search_top10"]["precision"]],
            "top10_recall": [before["search_top10"]["recall"], after["search_top10"]["recall"]],
        },
    }
    text = json.dumps(out, indent=2)
    print(text)
    if args.json is not None:
        args.json.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
