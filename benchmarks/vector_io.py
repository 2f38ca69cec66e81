"""How fast vectors travel between Python and PostgreSQL: inserts with vectors, vector searches,
and the vector reads MMR makes, through the store's own code on a private embedded server.

    python benchmarks/vector_io.py [--entries 2000] [--searches 300] [--json out.json]

Medians per call of the wall time and of this process's CPU time (ms): `insert_batch` is one
EntryStore.insert_many of 100 entries, `insert_one` one EntryStore.create, `search` one
SearchStore.search in vector mode (top 10), `vectors` one EntryStore.vectors of 20 ids.
Random unit vectors of 384 numbers.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import SecretStr

from pgrecall.config import Settings
from pgrecall.db.database import Database
from pgrecall.domain.entries import NewEntry
from pgrecall.domain.text import content_hash
from pgrecall.evaluation.private_server import fresh_database, private_server
from pgrecall.store.entries import EntryStore
from pgrecall.store.search import SearchParams, SearchStore

DIM, MODEL, OWNER, BATCH = 384, "bench-model", "bench", 100


def _unit(rng: random.Random) -> list[float]:
    values = [rng.gauss(0.0, 1.0) for _ in range(DIM)]
    norm = sum(v * v for v in values) ** 0.5
    return [v / norm for v in values]


def _new(i: int, rng: random.Random) -> NewEntry:
    body = f"entry {i} {rng.random()}"
    return NewEntry(
        body=body,
        content_hash=content_hash(body),
        language="simple",
        embedding=_unit(rng),
        embedding_model=MODEL,
    )


def _median_ms(calls: int, run: Callable[[], Any]) -> dict[str, float]:
    # Wall time, and this process's CPU time: the part spent encoding and decoding in Python,
    # which a busy server does not blur.
    wall, cpu = [], []
    for _ in range(calls):
        started, started_cpu = time.perf_counter(), time.process_time()
        run()
        wall.append((time.perf_counter() - started) * 1000)
        cpu.append((time.process_time() - started_cpu) * 1000)
    return {"wall_ms": round(statistics.median(wall), 3), "client_cpu_ms": round(statistics.median(cpu), 3)}


def measure(url: str, entries: int, searches: int) -> dict[str, Any]:
    """The medians over a fresh database at `url`."""
    rng = random.Random(7)  # noqa: S311 - reproducible vectors, not security
    settings = Settings(
        database_url=SecretStr(url), home=Path(tempfile.gettempdir()) / "pgrecall-vector-io-unused"
    )
    with Database(settings) as database, database.make_pool() as pool:
        store, search = EntryStore(pool), SearchStore(pool)
        counter = iter(range(10**9))
        batches = max(1, entries // BATCH)
        out: dict[str, Any] = {
            "insert_batch": _median_ms(
                batches, lambda: store.insert_many(OWNER, [_new(next(counter), rng) for _ in range(BATCH)])
            ),
            "insert_one": _median_ms(searches, lambda: store.create(OWNER, _new(next(counter), rng))),
        }
        queries = [_unit(rng) for _ in range(searches)]
        found: list[Any] = []

        def one_search() -> None:
            params = SearchParams(
                owner=OWNER,
                query="",
                top_k=10,
                vector=queries[len(found)],
                model=MODEL,
                dim=DIM,
                use_lexical=False,
            )
            found.append(search.search(params))

        out["search"] = _median_ms(searches, one_search)
        ids = [row.id for row in found[0].rows] + [row.id for row in found[1].rows]
        out["vectors"] = _median_ms(searches, lambda: store.vectors(OWNER, ids, MODEL))
        out["hits_per_search"] = statistics.mean(len(f.rows) for f in found)
        return out


def main() -> None:
    """Measure on a private embedded server and print (or write) the figures."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--entries", type=int, default=2000)
    parser.add_argument("--searches", type=int, default=300)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    with private_server("vector-io") as server:
        result = measure(fresh_database(server, "vector_io"), args.entries, args.searches)
    result |= {"entries": args.entries, "searches": args.searches, "dim": DIM}
    text = json.dumps(result, indent=2)
    if args.json:
        Path(args.json).write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
