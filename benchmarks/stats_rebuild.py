"""Rebuilding the lexical statistics (what `pgrecall migrate citus` does on every run): one
transaction over every owner under a table lock, as before, against owner batches without a lock.

Run: python benchmarks/stats_rebuild.py [--owners 100] [--per-owner 1000] [--json PATH]

On a fresh embedded database at head with the Citus-safe statistics functions (single node: the
statements are those a Citus coordinator routes owner by owner), loads owners × per-owner
entries (texts drawn from the Cranfield copy shipped in the package, no vectors), then rebuilds
the statistics both ways while one thread searches (lexical, the branch that reads the
statistics) and one writes (adds) for random owners, each as the server does it. Reports each
rebuild's time and the longest search and write during it, and checks the statistics against a
recount afterwards.
"""

from __future__ import annotations

import argparse
import json
import random
import threading
import time
from pathlib import Path
from typing import Any

import psycopg
from psycopg.rows import dict_row

from pgrecall.app import App
from pgrecall.config import Settings
from pgrecall.db import citus
from pgrecall.db.citus_sql import (
    COMPACT_ALL,
    COMPACT_OWNER,
    SQL_STATISTICS_DRIFT,
    STATS_TRIGGER,
    TRUNCATE_TRIGGER,
)
from pgrecall.evaluation.corpus import DEFAULT_DATA_DIR
from pgrecall.evaluation.private_server import fresh_database, private_server
from pgrecall.services.retrieval import RetrievalRequest
from pgrecall.services.search import SearchOptions

# The rebuild before this change (db/citus_sql.py REBUILD_STATISTICS at 4b7f0a5), verbatim.
BEFORE = (
    "LOCK TABLE entries IN SHARE ROW EXCLUSIVE MODE",
    "TRUNCATE lexical_df, lexical_df_delta, lexical_docs, lexical_docs_delta",
    """
    INSERT INTO lexical_df (owner, language, lexeme, df)
    SELECT e.owner, e.language, l.lexeme, count(*)
    FROM entries e CROSS JOIN LATERAL unnest(tsvector_to_array(e.tsv)) AS l(lexeme)
    WHERE e.deleted_at IS NULL
    GROUP BY e.owner, e.language, l.lexeme
    """,
    """
    INSERT INTO lexical_docs (owner, language, n_docs, total_len)
    SELECT owner, language, count(*), sum(length(tsv))
    FROM entries WHERE deleted_at IS NULL
    GROUP BY owner, language
    """,
)

LOAD = """
INSERT INTO entries (owner, body, content_hash, language)
SELECT %(owner)s, b.body, 'sha256:' || encode(sha256(convert_to(b.body, 'UTF8')), 'hex'), 'english'
FROM (
    SELECT g, array_to_string(ARRAY(
        SELECT (%(words)s::text[])[1 + abs(hashint8(g * 64 + k + %(seed)s)) %% cardinality(%(words)s::text[])]
        FROM generate_series(1, 40) AS k), ' ') || ' #' || g AS body
    FROM generate_series(1, %(n)s) AS g
) AS b
"""


def _words() -> list[str]:
    words: set[str] = set()
    with (DEFAULT_DATA_DIR / "cranfield" / "corpus.jsonl").open() as lines:
        for line in lines:
            words.update(w for w in json.loads(line)["text"].split() if w.isalpha() and len(w) > 2)
    return sorted(words)


def load(url: str, owners: int, per_owner: int) -> float:
    """owners × per_owner entries, one INSERT per owner; returns the seconds it took."""
    words = _words()
    started = time.perf_counter()
    with psycopg.connect(url, autocommit=True) as conn:
        for i in range(owners):
            conn.execute(
                LOAD, {"owner": f"owner{i:03d}", "words": words, "seed": i * 1_000_003, "n": per_owner}
            )
        conn.execute("SELECT pgrecall_lexical_compact()")
        conn.execute("VACUUM ANALYZE")
    return time.perf_counter() - started


def _under_load(app: App, owners: int, rebuild: Any) -> dict[str, Any]:
    """Run `rebuild()` while one thread searches and one writes; the slowest of each during it."""
    done = threading.Event()
    # (start, end) of each operation, perf_counter seconds; only those overlapping the rebuild count.
    waits: dict[str, list[tuple[float, float]]] = {"search": [], "write": []}
    errors: list[str] = []

    def searcher() -> None:
        rng = random.Random(1)  # noqa: S311 - a reproducible choice of owners
        request = RetrievalRequest(query="boundary layer flow", options=SearchOptions(mode="lexical"))
        while not done.is_set():
            started = time.perf_counter()
            try:
                app.retrieval.retrieve(f"owner{rng.randrange(owners):03d}", request)
            except Exception as exc:
                errors.append(f"search: {exc}")
            waits["search"].append((started, time.perf_counter()))

    def writer() -> None:
        rng = random.Random(2)  # noqa: S311 - a reproducible choice of owners
        i = 0
        while not done.is_set():
            started = time.perf_counter()
            try:
                app.entries.add(f"owner{rng.randrange(owners):03d}", text=f"A note on wing drag number {i}.")
            except Exception as exc:
                errors.append(f"write: {exc}")
            waits["write"].append((started, time.perf_counter()))
            i += 1

    threads = [threading.Thread(target=searcher), threading.Thread(target=writer)]
    for thread in threads:
        thread.start()
    time.sleep(1.0)  # both running before the rebuild starts
    started = time.perf_counter()
    rebuild()
    ended = time.perf_counter()
    time.sleep(0.5)  # an operation that waited for the rebuild's end finishes after it
    done.set()
    for thread in threads:
        thread.join()

    def during(kind: str) -> list[float]:
        return [(end - start) * 1000 for start, end in waits[kind] if end >= started and start <= ended]

    searches, writes = during("search"), during("write")
    return {
        "rebuild_seconds": round(ended - started, 2),
        "searches_during": len(searches),
        "longest_search_ms": round(max(searches, default=0.0), 1),
        "writes_during": len(writes),
        "longest_write_ms": round(max(writes, default=0.0), 1),
        "errors": errors[:3],
    }


def main() -> None:
    """Load, rebuild both ways under load, print (and optionally write) the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--owners", type=int, default=100)
    parser.add_argument("--per-owner", type=int, default=1000)
    parser.add_argument("--batches", type=int, nargs="+", default=[citus.REBUILD_BATCH],
                        help="owners per rebuild transaction, one run each")  # fmt: skip
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    report: dict[str, Any] = {"owners": args.owners, "per_owner": args.per_owner}
    with private_server("stats-rebuild") as server:
        url = fresh_database(server, "rebuild")
        with psycopg.connect(url, autocommit=True) as conn:
            # The merge and trigger functions migrate citus installs before it rebuilds (the merge
            # of migration 0002 is a MERGE, which a concurrent recount's insert makes fail).
            for function in (COMPACT_OWNER, COMPACT_ALL, STATS_TRIGGER, TRUNCATE_TRIGGER):
                conn.execute(function)
        report["load_seconds"] = round(load(url, args.owners, args.per_owner), 1)
        settings = Settings(database_url=url, home=server.home / "app-home", models="in-process")
        with App(settings, embedder=None, restricted=True) as app:
            # Warm: the pool and the language detector are loaded before anything is timed.
            app.entries.add("owner000", text="A first note on the boundary layer.")
            app.retrieval.retrieve("owner000", RetrievalRequest(query="boundary layer"))

            def before() -> None:
                with psycopg.connect(url) as conn:
                    for statement in BEFORE:
                        conn.execute(statement)

            def batched(size: int) -> None:
                with psycopg.connect(url, autocommit=True, row_factory=dict_row) as conn:
                    citus.rebuild_statistics(conn, batch=size)

            report["one_transaction_with_lock"] = _under_load(app, args.owners, before)
            report["owner_batches"] = {
                str(size): _under_load(app, args.owners, lambda size=size: batched(size))
                for size in args.batches
            }
        with psycopg.connect(url, row_factory=dict_row) as conn:
            report["drift_after"] = conn.execute(SQL_STATISTICS_DRIFT).fetchone()
    text = json.dumps(report, indent=2, default=str)
    print(text)
    if args.json:
        args.json.write_text(text + "\n")


if __name__ == "__main__":
    main()
