"""What grouping by document costs the search statement (a study, no JSON).

    python benchmarks/grouped_search_cost.py benchmarks/collections/debian-manuals [--base 08d31dc]

`search(group_by="document")` groups in the statement since 179f046: a `grouping` CTE reads each
candidate's document (only when per_document is set) and `top` ranks groups by their best hit. This
times, on one chunked store of a long-document collection (every chunk through DocumentService.ingest,
vectors from the eval's cache), the statement at --base (before grouping), today's ungrouped and
today's grouped (3 chunks a document), interleaved question by question on one connection, each
question's vector embedded once beforehand, the first of three rounds untimed. Prints p50 and p95 of
the statement's own time.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import time
import types
from dataclasses import replace
from pathlib import Path

from psycopg import sql

from pgrecall.config import Settings
from pgrecall.embeddings import create_embedder
from pgrecall.evaluation import documents_eval as d
from pgrecall.evaluation import documents_ingest as di
from pgrecall.evaluation.documents_dataset import load_document_collection
from pgrecall.evaluation.vectors import VectorCache
from pgrecall.services.search import SearchOptions
from pgrecall.store import search_sql
from pgrecall.store.search import SQL_SET_KNOBS, SearchParams, bind, compile_filters, knobs

ROOT = Path(__file__).resolve().parents[1]


def statement_at(base: str) -> types.ModuleType:
    """store/search_sql.py as it was at `base`."""
    text = subprocess.run(
        ["git", "show", f"{base}:src/pgrecall/store/search_sql.py"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    module = types.ModuleType("search_sql_base")
    exec(compile(text, "search_sql_base", "exec"), module.__dict__)  # noqa: S102 - our own file at a commit
    return module


def statement(module: types.ModuleType, params: SearchParams) -> sql.Composed:
    filters, _ = compile_filters(params.filters)
    return sql.SQL(module.SQL_SEARCH).format(
        dim=sql.Literal(params.dim),
        filters=filters,
        n_vec=sql.Literal(params.tuning.n_vec),
        **module.FRAGMENTS,
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("collection", type=Path, help="a long-document collection folder")
    parser.add_argument("--base", default="08d31dc", help="the commit before grouping")
    args = parser.parse_args()
    base = statement_at(args.base)
    settings = Settings()
    collection = load_document_collection(args.collection)
    doc_ids, queries, _ = d.select(collection, None, None)
    embedder = create_embedder(settings)
    with VectorCache(settings.home, embedder.model, embedder.dim) as cache:
        caching = di.CachingPassageEmbedder(embedder, cache)
        with di.eval_store(settings, caching, None) as (app, _scoped):
            di.ingest_chunked(app, collection, doc_ids, caching, False)
            app.search.model_scale()
            plans = [
                app.search._plan(di.OWNER, text, 10, SearchOptions(), False, None).params
                for text in queries.values()
            ]
            times: dict[str, list[float]] = {"base": [], "ungrouped": [], "grouped": []}
            with app.search.store.pool.connection() as conn:
                for round_ in range(3):
                    for params in plans:
                        runs = (
                            ("base", base, params),
                            ("ungrouped", search_sql, params),
                            ("grouped", search_sql, replace(params, per_document=3)),
                        )
                        for label, module, p in runs:
                            with conn.transaction():
                                conn.execute(SQL_SET_KNOBS, knobs(p.tuning, False, di.OWNER))
                                started = time.perf_counter()
                                conn.execute(statement(module, p), bind(p)).fetchall()
                                if round_:
                                    times[label].append((time.perf_counter() - started) * 1000)
    print(f"{collection.name}: {len(plans)} questions, 2 timed rounds")
    for label, values in times.items():
        p95 = statistics.quantiles(values, n=100)[94]
        print(f"{label:10} p50 {statistics.median(values):.2f} ms  p95 {p95:.2f} ms")


if __name__ == "__main__":
    main()
