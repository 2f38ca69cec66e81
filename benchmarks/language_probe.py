"""How strict the language probe is: languages stemmed, latency and lexical quality per probe ratio.

A query of more than `language_probe_words` distinct words is stemmed whole only in the languages
whose vocabulary holds `language_probe_ratio` of the probe words the best language holds. This
builds the search bench's store (`pgrecall bench`'s documents, vectors and 401 queries; 100k by
default, 17 languages) and, for each ratio, measures per query: how many languages the whole query
is stemmed in, the hybrid statement's latency (min over --reps, the ratios interleaved query by
query so that they share the machine's state), and nDCG@10 of the lexical branch on the Cranfield
and CISI queries inside the store (as `pgrecall bench` reports lexical quality at scale). Only
queries longer than the probe change; the short ones are reported as the control.

Run: python benchmarks/language_probe.py [--size 100000] [--ratios 0.25,0.5] [--json FILE]
Reads Cranfield and CISI from PGRECALL_BENCH_DATA or the copies in src/pgrecall/evaluation/data.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import psycopg

from pgrecall.domain.entries import EntryFilters
from pgrecall.evaluation import lexical
from pgrecall.evaluation.bench_store import measure_on_bench_store
from pgrecall.evaluation.speed import bench_params, percentiles, timed
from pgrecall.store import search as store

SEED = 7


def _params(text: str, qvec: np.ndarray, scale: tuple[float, float], ratio: float) -> store.SearchParams:
    params = bench_params(text, qvec, "hybrid", EntryFilters(), scale)
    return replace(params, tuning=replace(params.tuning, language_probe_ratio=ratio))


def _quality(conn: psycopg.Connection[Any], ratio: float) -> dict[str, float]:
    tuning = replace(store.Tuning(), language_probe_ratio=ratio)
    return {name: round(ndcg, 4) for name, ndcg in lexical.ndcg_in_store(conn, tuning).items()}


def measure(
    conn: psycopg.Connection[Any],
    queries: Sequence[str],
    qvecs: np.ndarray,
    scale: tuple[float, float],
    ratios: Sequence[float],
    reps: int,
) -> dict[str, Any]:
    """Per ratio: languages stemmed, hybrid latency of long and short queries, quality at scale."""
    probe_words = store.Tuning().language_probe_words
    long_query = [len(set(q.lower().split())) > probe_words for q in queries]
    best: dict[float, list[float]] = {r: [float("inf")] * len(queries) for r in ratios}
    languages: dict[float, list[int]] = {r: [] for r in ratios}
    for rep in range(reps):
        for i, (text, qvec) in enumerate(zip(queries, qvecs, strict=True)):
            for ratio in ratios:
                params = _params(text, qvec, scale, ratio)
                knobs = store.knobs(params.tuning, False)
                ms, _ = timed(conn, knobs, store.build_statement(params), store.bind(params))
                best[ratio][i] = min(best[ratio][i], ms)
                if rep == 0:
                    kept = conn.execute(store.SQL_STEMMED_LANGUAGES, store.bind(params)).fetchall()
                    languages[ratio].append(len(kept))
    out: dict[str, Any] = {}
    for ratio in ratios:
        longs = [b for b, is_long in zip(best[ratio], long_query, strict=True) if is_long]
        shorts = [b for b, is_long in zip(best[ratio], long_query, strict=True) if not is_long]
        stemmed = [n for n, is_long in zip(languages[ratio], long_query, strict=True) if is_long]
        out[str(ratio)] = {
            "long_queries": len(longs),
            "languages_stemmed_long_mean": round(float(np.mean(stemmed)), 2) if stemmed else None,
            "hybrid_ms_all": percentiles(best[ratio]),
            "hybrid_ms_long": percentiles(longs) if longs else None,
            "hybrid_ms_short": percentiles(shorts) if shorts else None,
            "lexical_ndcg10_at_scale": _quality(conn, ratio),
        }
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Build the bench store once and compare the probe ratios on it."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--size", type=int, default=100_000, help="entries in the store")
    parser.add_argument("--ratios", default="0.25,0.5", help="probe ratios to compare, comma-separated")
    parser.add_argument("--reps", type=int, default=3, help="timed runs per query and ratio (min kept)")
    parser.add_argument("--json", type=Path, help="write the result here")
    args = parser.parse_args(argv)
    ratios = [float(r) for r in args.ratios.split(",")]
    result = measure_on_bench_store(
        args.size,
        SEED,
        "probe",
        lambda conn, inputs: {
            "probe_words": store.Tuning().language_probe_words,
            "reps": args.reps,
            "ratios": measure(conn, inputs.queries, inputs.qvecs, inputs.scale, ratios, args.reps),
        },
    )
    text = json.dumps(result, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
