"""Relevant enough to cite: precision and recall of build_context's cited set, with and without a floor.

For each judged query of a BEIR collection, build_context runs as the MCP tool runs it (hybrid
search, top_k 10, a 4 000-token budget) with min_relevance 0 (no floor: what it cited before
the floor existed) and with each candidate floor. The cited set is compared with the qrels:
precision = relevant cited / cited, recall = relevant cited / relevant judged (both averaged over
queries; a query that cites nothing has precision 0). search(top_k=10) is measured the same way.
The other collection's queries, which nothing in the store answers, give the number of
unrelated entries cited per off-topic question. "At equal recall": a floor cites fewer entries,
so its precision is also compared with a fixed cut (the first k citations without a floor)
that reaches the same recall, interpolated between k and k + 1.

Tune on one collection, report on the other: `--tune cranfield --report cisi` picks the highest
floor whose cited recall stays at least --keep-recall (0.8) of no floor's on the tune collection,
then reports that floor, untouched, on the report collection (and the reverse run gives the
other direction).

Run: python benchmarks/relevance_floor.py [--tune cranfield] [--report cisi] [--json FILE]
Reads Cranfield and CISI from PGRECALL_BENCH_DATA or the copies in src/pgrecall/evaluation/data;
document vectors are cached under PGRECALL_HOME.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from itertools import pairwise
from pathlib import Path
from typing import Any

from pgrecall.config import Settings
from pgrecall.embeddings import create_embedder
from pgrecall.evaluation import corpus, runner
from pgrecall.evaluation.dataset import load_dataset
from pgrecall.evaluation.pipeline import OWNER, loaded_store
from pgrecall.services.context import build_context
from pgrecall.services.retrieval import RetrievalRequest
from pgrecall.services.search import SearchOptions

FLOORS = (0.0, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8)
DATA = Path(os.environ.get("PGRECALL_BENCH_DATA") or corpus.DEFAULT_DATA_DIR)


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
    with loaded_store(settings, dataset, embedder) as (app, _, loaded):
        beir_of: Mapping[str, str] = loaded.beir_of
        curve: list[tuple[float, float]] = []
        for floor in floors:
            started = time.perf_counter()
            cited_p, cited_r, cited_n, top_p, top_r, top_n = [], [], [], [], [], []
            ranked_lists: list[tuple[list[str], set[str]]] = []
            for qid, text in queries.items():
                options = SearchOptions(min_relevance=floor)
                built = build_context(
                    app.retrieval, OWNER, RetrievalRequest(query=text, top_k=10, options=options)
                )
                cited = [beir_of[c.id] for c in built.citations]
                ranked_lists.append((cited, qrels[qid]))
                p, r = _prf(cited, qrels[qid])
                cited_p.append(p)
                cited_r.append(r)
                cited_n.append(len(cited))
                found = app.retrieval.retrieve(OWNER, RetrievalRequest(query=text, top_k=10, options=options))
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
            if not curve:  # no floor: what a fixed cut after the first k citations gives
                curve = _fixed_cut_curve(ranked_lists)
            recall = _mean(cited_r)
            cited_total = sum(len(cited) for cited, _ in ranked_lists)
            relevant_cited = sum(sum(1 for d in cited if d in rel) for cited, rel in ranked_lists)
            per_floor[str(floor)] = {
                "off_topic_cited_per_query": _mean(off_cited),
                "fixed_cut_precision_at_equal_recall": _precision_at(curve, recall),
                "cited": {
                    "precision": _mean(cited_p),
                    "recall": _mean(cited_r),
                    "mean_count": _mean(cited_n),
                    # Of all citations over all queries, the share that is relevant (a query
                    # citing nothing adds nothing, where the per-query mean counts it as 0).
                    "share_relevant": round(relevant_cited / cited_total, 4) if cited_total else 0.0,
                    "queries_citing_nothing": sum(1 for cited, _ in ranked_lists if not cited),
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


def _fixed_cut_curve(ranked: Sequence[tuple[list[str], set[str]]]) -> list[tuple[float, float]]:
    """(mean recall, mean precision) of citing only the first k, for k = 1..10, without a floor."""
    points = []
    for k in range(1, 11):
        prf = [_prf(cited[:k], relevant) for cited, relevant in ranked]
        points.append((_mean([r for _, r in prf]), _mean([p for p, _ in prf])))
    return points


def _precision_at(curve: Sequence[tuple[float, float]], recall: float) -> float:
    """A fixed cut's precision at `recall`, linear between the cuts around it."""
    for (r0, p0), (r1, p1) in pairwise(curve):
        if r0 <= recall <= r1:
            share = (recall - r0) / (r1 - r0) if r1 > r0 else 0.0
            return round(p0 + share * (p1 - p0), 4)
    return curve[0][1] if recall < curve[0][0] else curve[-1][1]


def pick(tuned: dict[str, Any], keep: float) -> float:
    """The highest floor whose cited recall stays at least `keep` of no floor's.

    The floor's purpose is to stop citing what does not answer the question (off-topic
    citations fall steeply as it rises); the recall it costs on answerable questions is the limit.
    """
    floors = tuned["floors"]
    base = floors["0.0"]["cited"]["recall"]
    allowed = [float(f) for f, v in floors.items() if v["cited"]["recall"] >= base * keep]
    return max(allowed)


def main(argv: Sequence[str] | None = None) -> int:
    """Tune on one collection, report on another."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--tune", default="cranfield")
    parser.add_argument("--report", default="cisi")
    parser.add_argument("--keep-recall", type=float, default=0.8, help="share of no floor's recall to keep")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    home = Path(os.environ.get("PGRECALL_HOME") or tempfile.mkdtemp(prefix="pgrecall-bench-", dir="/tmp"))
    home.chmod(0o755)
    settings = Settings(home=home, models="in-process")
    tuned = measure(settings, args.tune, FLOORS, foreign=args.report)
    chosen = pick(tuned, args.keep_recall)
    reported = measure(settings, args.report, (0.0, chosen), foreign=args.tune)
    before, after = reported["floors"]["0.0"], reported["floors"][str(chosen)]
    out = {
        "command": "python benchmarks/relevance_floor.py "
        + " ".join(argv if argv is not None else sys.argv[1:]),
        "tuned_on": args.tune,
        "reported_on": args.report,
        "keep_recall": args.keep_recall,
        "chosen_floor": chosen,
        "tune": tuned,
        "report": reported,
        "report_summary": {
            "cited_precision": [before["cited"]["precision"], after["cited"]["precision"]],
            "cited_share_relevant": [before["cited"]["share_relevant"], after["cited"]["share_relevant"]],
            "queries_citing_nothing": [
                before["cited"]["queries_citing_nothing"],
                after["cited"]["queries_citing_nothing"],
            ],
            "fixed_cut_precision_at_equal_recall": after["fixed_cut_precision_at_equal_recall"],
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
