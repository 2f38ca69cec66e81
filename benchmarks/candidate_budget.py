"""What the lexical candidate budget buys: hybrid latency against the anchor, and lexical quality, per budget.

The lexical branch scores, by exact BM25 over all (≤ 32) query terms, the entries holding the
query's rarest terms whose postings together fit `Tuning.budget` (1 000). This builds the search
bench's store (`pgrecall bench`'s documents, vectors and 401 queries; 10k by default) and, for each
budget (with `cap` set to it), measures per query the hybrid statement's latency and the lexical
candidates it scored, interleaved query by query with the seed's anchor CTE and with our statement
in vector mode (the floor: what the statement costs when its lexical branch costs nothing). Each
latency is the min over --reps runs. Then nDCG@10 of the lexical branch on the Cranfield and CISI
queries inside the store, per budget, against bm25s over the same documents (as `pgrecall bench`
reports lexical quality at scale).

It shows what a hybrid p95 of at most twice the anchor's at 10k would cost in lexical quality.

Run: python benchmarks/candidate_budget.py [--size 10000] [--budgets 100,200,300,500,1000] [--json FILE]
Reads Cranfield and CISI from PGRECALL_BENCH_DATA or the copies in src/pgrecall/evaluation/data.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from psycopg import sql

from pgrecall.domain.entries import EntryFilters
from pgrecall.evaluation import lexical
from pgrecall.evaluation.bench_store import measure_on_bench_store
from pgrecall.evaluation.speed import anchor_params, bench_params, percentiles, timed
from pgrecall.evaluation.speed_inputs import BenchInputs
from pgrecall.evaluation.speed_sql import SQL_ANCHOR
from pgrecall.store import search as store

SEED = 7
ANCHOR = "anchor"
FLOOR = "vector_only"


def _tuning(budget: int) -> store.Tuning:
    return replace(store.Tuning(), budget=budget, cap=budget)


def _latencies(
    conn: psycopg.Connection[Any], inputs: BenchInputs, budgets: Sequence[int], reps: int
) -> tuple[dict[str, list[float]], dict[int, list[int]]]:
    """Per variant, each query's best latency; per budget, each query's lexical candidates."""
    anchor = sql.SQL(SQL_ANCHOR).format(filters=sql.SQL(""))
    variants: list[str | int] = [ANCHOR, FLOOR, *budgets]
    best: dict[str, list[float]] = {str(v): [float("inf")] * len(inputs.queries) for v in variants}
    candidates: dict[int, list[int]] = {b: [] for b in budgets}
    for rep in range(reps):
        for i, (text, qvec) in enumerate(zip(inputs.queries, inputs.qvecs, strict=True)):
            hybrid = bench_params(text, qvec, "hybrid", EntryFilters(), inputs.scale)
            knobs = store.knobs(hybrid.tuning, False)
            # Rotated, so that no variant always runs first and meets the blocks the others left.
            shift = (i + rep) % len(variants)
            for variant in variants[shift:] + variants[:shift]:
                if variant == ANCHOR:
                    ms, _ = timed(conn, knobs, anchor, anchor_params(hybrid, "hybrid"))
                elif variant == FLOOR:
                    params = bench_params(text, qvec, "vector", EntryFilters(), inputs.scale)
                    ms, _ = timed(conn, knobs, store.build_statement(params), store.bind(params))
                else:
                    params = replace(hybrid, tuning=_tuning(int(variant)))
                    ms, rows = timed(conn, knobs, store.build_statement(params), store.bind(params))
                    if rep == 0:
                        candidates[int(variant)].append(int(rows[0]["lexical_candidates"]))
                best[str(variant)][i] = min(best[str(variant)][i], ms)
    return best, candidates


def _quality(conn: psycopg.Connection[Any], budgets: Sequence[int], inputs: BenchInputs) -> dict[str, Any]:
    """nDCG@10 of the lexical branch per budget, and of bm25s over the same documents."""
    out: dict[str, Any] = {"bm25s": {n: round(v, 4) for n, v in lexical.bm25s_ndcg(inputs.docs).items()}}
    for budget in budgets:
        out[str(budget)] = {n: round(v, 4) for n, v in lexical.ndcg_in_store(conn, _tuning(budget)).items()}
    return out


def measure(
    conn: psycopg.Connection[Any], inputs: BenchInputs, budgets: Sequence[int], reps: int
) -> dict[str, Any]:
    """Per budget: hybrid latency and its ratio to the anchor, candidates, quality against bm25s."""
    best, candidates = _latencies(conn, inputs, budgets, reps)
    quality = _quality(conn, budgets, inputs)
    anchor = percentiles(best[ANCHOR])
    floor = percentiles(best[FLOOR])
    out: dict[str, Any] = {
        "anchor_hybrid_ms": anchor,
        "vector_only_ms": floor,
        "vector_only_p95_ratio_to_anchor": round(floor["p95"] / anchor["p95"], 2),
        "bm25s_ndcg10": quality["bm25s"],
        "budgets": {},
    }
    for budget in budgets:
        ours = percentiles(best[str(budget)])
        ndcg = quality[str(budget)]
        out["budgets"][str(budget)] = {
            "hybrid_ms": ours,
            "p95_ratio_to_anchor": round(ours["p95"] / anchor["p95"], 2),
            "lexical_candidates_mean": round(float(np.mean(candidates[budget])), 1),
            "lexical_ndcg10": ndcg,
            "ratio_to_bm25s": {n: round(ndcg[n] / quality["bm25s"][n], 3) for n in ndcg},
        }
    return out


def _table(result: dict[str, Any]) -> str:
    rows = [
        f"anchor hybrid p95 {result['anchor_hybrid_ms']['p95']} ms; our vector-only p95 "
        f"{result['vector_only_ms']['p95']} ms (ratio {result['vector_only_p95_ratio_to_anchor']})",
        "budget  candidates  hybrid p50/p95 ms  ratio p95  nDCG@10 (× bm25s)",
    ]
    for budget, r in result["budgets"].items():
        ndcg = ", ".join(f"{n} {v} ({r['ratio_to_bm25s'][n]})" for n, v in r["lexical_ndcg10"].items())
        rows.append(
            f"{budget:>6}  {r['lexical_candidates_mean']:>10}  "
            f"{r['hybrid_ms']['p50']:>7} / {r['hybrid_ms']['p95']:<7}  {r['p95_ratio_to_anchor']:>9}  {ndcg}"
        )
    return "\n".join(rows)


def main(argv: Sequence[str] | None = None) -> int:
    """Build the bench store once and compare the candidate budgets on it."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--size", type=int, default=10_000, help="entries in the store")
    parser.add_argument("--budgets", default="100,200,300,500,1000", help="budgets, comma-separated")
    parser.add_argument("--reps", type=int, default=3, help="timed runs per query and variant (min kept)")
    parser.add_argument("--json", type=Path, help="write the result here")
    args = parser.parse_args(argv)
    budgets = [int(b) for b in args.budgets.split(",")]
    result = measure_on_bench_store(
        args.size,
        SEED,
        "budget",
        lambda conn, inputs: {
            "reps": args.reps,
            "default_budget": store.Tuning().budget,
            **measure(conn, inputs, budgets, args.reps),
        },
    )
    print(_table(result), file=sys.stderr)
    text = json.dumps(result, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
