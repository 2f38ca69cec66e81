"""What setting the owner and the HNSW knobs costs per transaction: set_config before, SET LOCAL now.

Run: python benchmarks/transaction_settings.py [--rounds 3000] [--json benchmarks/transaction_settings.json]

Migration 0012 moved the per-transaction settings from `set_config(…, true)` (one SELECT) to
`SET LOCAL` inside pgrecall_set_local / pgrecall_search_knobs (so Citus forwards them to its
workers). `pgrecall bench` times the search statement alone; this times the step before it, both
forms in the same run, alternating, on a fresh embedded database at head with statistics for one
owner. Each sample is one transaction: BEGIN, the settings, COMMIT (round trips included).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any

import psycopg

from pgrecall.db import migrate as schema
from pgrecall.evaluation.private_server import private_server
from pgrecall.store.scope import SQL_SET_OWNER
from pgrecall.store.search import SQL_SET_KNOBS, Tuning, knobs

# The forms before migration 0012, verbatim (store/search_sql.py and store/scope.py at 4405682).
BEFORE_KNOBS = """
SELECT set_config('hnsw.ef_search',
                  (CASE WHEN n.live >= %(large_store)s THEN %(ef_search)s ELSE %(ef_search_small)s END)::text,
                  true),
       set_config('hnsw.iterative_scan', 'relaxed_order', true),
       set_config('hnsw.max_scan_tuples', %(max_scan_tuples)s, true),
       set_config('plan_cache_mode', %(plan_cache_mode)s, true)
FROM (SELECT set_config('pgrecall.owner', %(owner)s, true) AS owner) o
CROSS JOIN LATERAL (
    SELECT coalesce(sum(n_docs), 0) AS live FROM lexical_docs WHERE owner = o.owner
) n
"""
BEFORE_OWNER = "SELECT set_config('pgrecall.owner', %s, true)"


def _pct(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "p50_ms": round(statistics.median(ordered), 4),
        "p95_ms": round(ordered[int(0.95 * (len(ordered) - 1))], 4),
        "mean_ms": round(statistics.fmean(ordered), 4),
    }


def main() -> None:
    """Time both forms, alternating, and print p50/p95 per form."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3000)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    with private_server("bench") as server:
        url = server.url("postgres")
        schema.upgrade(url, "head")
        values = knobs(Tuning(), False, "default")
        forms: dict[str, tuple[str, Any]] = {
            "knobs_before (set_config)": (BEFORE_KNOBS, values),
            "knobs_now (pgrecall_search_knobs)": (SQL_SET_KNOBS, values),
            "owner_before (set_config)": (BEFORE_OWNER, ("default",)),
            "owner_now (pgrecall_set_local)": (SQL_SET_OWNER, ("default",)),
        }
        samples: dict[str, list[float]] = {name: [] for name in forms}
        with psycopg.connect(url) as conn:
            conn.execute("INSERT INTO lexical_docs VALUES ('default', 'english', 1000, 50000)")
            conn.commit()
            for _ in range(args.rounds):
                for name, (statement, params) in forms.items():
                    started = time.perf_counter()
                    with conn.transaction():
                        conn.execute(statement, params).fetchall()
                    samples[name].append((time.perf_counter() - started) * 1000)
        report = {name: _pct(values[100:]) for name, values in samples.items()}  # first 100: warm-up
    for name, figures in report.items():
        print(f"{name:38s} p50 {figures['p50_ms']:.3f} ms  p95 {figures['p95_ms']:.3f} ms")
    if args.json:
        args.json.write_text(json.dumps({"rounds": args.rounds, "forms": report}, indent=2) + "\n")


if __name__ == "__main__":
    main()
