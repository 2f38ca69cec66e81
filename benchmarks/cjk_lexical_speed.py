"""Latency of the lexical branch on a small mixed store (English, Japanese, Chinese, Korean entries).

Loads debian-en's documents and the Chinese, Japanese and Korean documents of debian-{ja,zh,ko}
(benchmarks/collections) into a fresh database at head with plain INSERTs (no embedder), then runs
every query of the four collections through the search statement in lexical mode, ROUNDS times,
and reports the median and 95th percentile of each query's best time per query group. Run it on two
revisions to compare:

    python benchmarks/cjk_lexical_speed.py --url postgresql://…/postgres [--json OUT]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg import sql
from psycopg.rows import dict_row

from pgrecall.db import migrate as schema
from pgrecall.store import search as store

COLLECTIONS = Path(__file__).parent / "collections"
ROUNDS = 5
INSERT = """
INSERT INTO entries (body, language, content_hash, source)
SELECT b, l::regconfig, 'sha256:' || encode(sha256(convert_to(b, 'UTF8')), 'hex'), s
FROM unnest(%s::text[], %s::text[], %s::text[]) AS u(b, l, s)
"""


def _records(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def load(url: str) -> dict[str, list[str]]:
    """Entries into the database at `url`; the queries by group (en, ja, zh, ko)."""
    bodies, languages, sources = [], [], []
    queries: dict[str, list[str]] = {}
    for name in ("en", "ja", "zh", "ko"):
        folder = COLLECTIONS / f"debian-{name}"
        for doc in _records(folder / "corpus.jsonl"):
            if name == "en" or doc["language"] == name:
                bodies.append(doc["text"])
                languages.append("english" if doc["language"] == "en" else "simple")
                sources.append(doc["_id"])
        queries[name] = [q["text"] for q in _records(folder / "queries.jsonl")]
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(INSERT, (bodies, languages, sources))
        conn.execute("SELECT pgrecall_lexical_compact()")
        conn.execute("VACUUM ANALYZE entries")
    return queries


def timed(url: str, queries: dict[str, list[str]]) -> dict[str, dict[str, float]]:
    """Per query group: median and p95 over the queries of each one's best of ROUNDS runs, in ms.

    The best run of each query, not every run: on a shared machine the other processes' load only ever
    adds time, so the minimum is the statement's own cost.
    """
    tuning = store.Tuning()
    out: dict[str, dict[str, float]] = {}
    with psycopg.connect(url, row_factory=dict_row) as conn:
        for group, texts in queries.items():
            best = [float("inf")] * len(texts)
            for _ in range(ROUNDS):
                for i, text in enumerate(texts):
                    params = store.SearchParams(owner="default", query=text, top_k=10, use_vector=False)
                    started = time.perf_counter()
                    with conn.transaction():
                        conn.execute(store.SQL_SET_KNOBS, store.knobs(tuning, False))
                        conn.execute(store.build_statement(params), store.bind(params)).fetchall()
                    best[i] = min(best[i], (time.perf_counter() - started) * 1000)
            best.sort()
            out[group] = {
                "queries": len(texts),
                "p50_ms": round(statistics.median(best), 2),
                "p95_ms": round(best[int(0.95 * (len(best) - 1))], 2),
            }
    return out


def main() -> None:
    """Fresh database on the server at --url, loaded, timed, dropped."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True, help="URL of the server's maintenance database")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    name = "cjk_speed_" + hashlib.sha256(str(time.time()).encode()).hexdigest()[:8]
    with psycopg.connect(args.url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    url = urlunsplit(urlsplit(args.url)._replace(path=f"/{name}"))
    try:
        schema.upgrade(url, "head")
        queries = load(url)
        result: dict[str, Any] = {"revision": schema.current_revision(url), "groups": timed(url, queries)}
    finally:
        with psycopg.connect(args.url, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
    print(json.dumps(result, indent=1))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
