"""Tag filters under row-level security: broad LEAKPROOF marks, none, or the narrow operators.

Builds a store of 20 000 entries (3 owners, 1–4 tags each drawn Zipf-like from 300 values,
80-word bodies, 384-d vectors), then runs the tag-filtered list and search statements as the
server does (pool as pgrecall_app, owner set per transaction, the store's own code), in:

  broad     migration 0005 as released: arraycontains/arrayoverlap LEAKPROOF, SQL `@>` / `&&`
  unmarked  0005 with those marks removed, SQL `@>` / `&&`
  narrow    migration 0006: marks removed, SQL `|@>` / `|&&` (text[]-only LEAKPROOF operators)

Each variant is its own copy of the database (LEAKPROOF marks live in each database's
pg_proc), and the variants take turns call by call, so a busy machine weighs on all alike.
Per statement: median wall time of the store call over RUNS rounds, and
EXPLAIN (ANALYZE, BUFFERS) run EXPLAINS times: whether the tag GIN index is in the plan, planning and
execution time (medians of EXPLAINS runs), shared buffers. Results must be the same ids in
every variant.

Run: python benchmarks/rls_leakproof.py [--json benchmarks/rls_leakproof.json]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql
from psycopg_pool import ConnectionPool
from pydantic import SecretStr

from pgrecall.config import Settings
from pgrecall.db import migrate as schema
from pgrecall.db.database import APP_ROLE, Database
from pgrecall.db.embedded import EmbeddedServer
from pgrecall.domain.entries import EntryFilters
from pgrecall.store import filters as filters_mod
from pgrecall.store import search as search_mod
from pgrecall.store.entries import EntryStore, list_statement
from pgrecall.store.scope import SQL_SET_OWNER
from pgrecall.store.search import SearchParams, SearchStore, bind, build_statement, has_filters, knobs

N_ENTRIES = 20_000
OWNERS = ("alice", "bob", "carol")
N_TAGS = 300
N_WORDS = 3_000
DIM = 384
MODEL = "bench-random"
RUNS = 31
EXPLAINS = 5  # EXPLAIN ANALYZE runs per statement and variant (median times)
WARMUP = 2
SEED = 14
SYLLABLES = ("ka", "lo", "mi", "ne", "ru", "ta", "po", "si", "ve", "da", "gu", "fe", "zo", "bi", "ha")


def _zipf_pick(rng: random.Random, n: int, weights: list[float]) -> int:
    return rng.choices(range(n), weights=weights)[0]


def _word(i: int) -> str:
    out, k = [], i + len(SYLLABLES)
    while k:
        k, r = divmod(k, len(SYLLABLES))
        out.append(SYLLABLES[r])
    return "".join(out)


def tag(rank: int) -> str:
    """The tag of popularity rank `rank` (1 = most frequent)."""
    return f"topic-{rank:03d}"


def load(url: str) -> None:
    """Insert the entries as the operator (row-level security lets it see everything)."""
    rng = random.Random(SEED)  # noqa: S311 - reproducible data, not security
    tag_w = [1.0 / (r + 1) for r in range(N_TAGS)]
    word_w = [1.0 / (r + 1) for r in range(N_WORDS)]
    words = [_word(i) for i in range(N_WORDS)]
    with psycopg.connect(url, autocommit=True) as conn, conn.cursor() as cur:
        # The HNSW index is built once after the load (as migration 0001 defines it): far
        # faster than 20 000 incremental insertions.
        hnsw = conn.execute(
            "SELECT indexdef FROM pg_indexes WHERE indexname = %s", (f"entries_embedding_hnsw_{DIM}",)
        ).fetchone()
        assert hnsw is not None
        conn.execute(f"DROP INDEX entries_embedding_hnsw_{DIM}")
        copy_sql = (
            "COPY entries (owner, title, body, tags, language, content_hash, "
            "embedding, embedding_model, embedding_dim) FROM STDIN"
        )
        with cur.copy(copy_sql) as copy:
            for i in range(N_ENTRIES):
                tags = sorted({tag(_zipf_pick(rng, N_TAGS, tag_w) + 1) for _ in range(rng.randint(1, 4))})
                body = " ".join(words[j] for j in rng.choices(range(N_WORDS), weights=word_w, k=80))
                vec = [rng.gauss(0.0, 1.0) for _ in range(DIM)]
                copy.write_row(
                    (
                        OWNERS[i % len(OWNERS)],
                        f"note {i}",
                        body,
                        "{" + ",".join(tags) + "}",
                        "english",
                        "sha256:" + hashlib.sha256(body.encode()).hexdigest(),
                        "[" + ",".join(f"{x:.5f}" for x in vec) + "]",
                        MODEL,
                        DIM,
                    )
                )
        conn.execute("SET maintenance_work_mem = '256MB'")
        conn.execute(hnsw[0])
        conn.execute("VACUUM ANALYZE entries")


LIST_CASES: dict[str, EntryFilters] = {
    "list tags_all=[rare]": EntryFilters(tags_all=[tag(200)]),
    "list tags_all=[mid]": EntryFilters(tags_all=[tag(10)]),
    "list tags_all=[frequent]": EntryFilters(tags_all=[tag(1)]),
    "list tags_all=[2 common]": EntryFilters(tags_all=[tag(2), tag(5)]),
    "list tags_any=[2 rare]": EntryFilters(tags_any=[tag(120), tag(250)]),
}
SEARCH_CASES: dict[str, EntryFilters] = {
    "search tags_all=[rare]": EntryFilters(tags_all=[tag(200)]),
    "search tags_all=[mid]": EntryFilters(tags_all=[tag(10)]),
    "search tags_all=[frequent]": EntryFilters(tags_all=[tag(1)]),
    "search tags_any=[2 rare]": EntryFilters(tags_any=[tag(120), tag(250)]),
}
LIST_LIMIT = 50
QUERY = f"{_word(40)} {_word(400)}"


def _search_params(filters: EntryFilters, qvec: list[float]) -> SearchParams:
    return SearchParams(
        owner="alice", query=QUERY, top_k=10, vector=qvec, model=MODEL, dim=DIM, filters=filters
    )


@contextmanager
def legacy_operators() -> Iterator[None]:
    """The store's SQL as it was with migration 0005: core `@>` / `&&`."""
    # List and search compile their filters from this dict at call time: swap them there.
    old_filters = dict(filters_mod.FILTER_SQL)
    for name in ("tags_all", "tags_any"):
        filters_mod.FILTER_SQL[name] = old_filters[name].replace("|@>", "@>").replace("|&&", "&&")
    try:
        yield
    finally:
        filters_mod.FILTER_SQL.update(old_filters)


def _plan_facts(plan: dict[str, Any]) -> dict[str, Any]:
    indexes: set[str] = set()

    def walk(node: dict[str, Any]) -> None:
        if "Index Name" in node:
            indexes.add(node["Index Name"])
        for child in node.get("Plans", []):
            walk(child)

    walk(plan["Plan"])
    top = plan["Plan"]
    return {
        "tag_gin_used": "entries_tags_gin" in indexes,
        "indexes": sorted(indexes),
        "explain_plan_ms": round(plan["Planning Time"], 2),
        "explain_exec_ms": round(plan["Execution Time"], 2),
        "shared_buffers": top.get("Shared Hit Blocks", 0) + top.get("Shared Read Blocks", 0),
    }


def explain_list(pool: ConnectionPool[Any], filters: EntryFilters) -> dict[str, Any]:
    """EXPLAIN (ANALYZE, BUFFERS) of the list statement with the parameters EntryStore.list binds."""
    statement, params = list_statement("alice", filters, limit=LIST_LIMIT + 1)
    with pool.connection() as conn, conn.transaction():
        conn.execute(SQL_SET_OWNER, ("alice",))
        row = conn.execute(sql.SQL("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ") + statement, params).fetchone()
    assert row is not None
    return _plan_facts(next(iter(row.values()))[0])


def explain_search(pool: ConnectionPool[Any], params: SearchParams) -> dict[str, Any]:
    """EXPLAIN (ANALYZE, BUFFERS) of the search statement as SearchStore.search runs it."""
    statement = sql.SQL("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ") + build_statement(params)
    with pool.connection() as conn, conn.transaction():
        conn.execute(
            search_mod.SQL_SET_KNOBS, knobs(params.tuning, has_filters(params.filters), params.owner)
        )
        row = conn.execute(statement, bind(params)).fetchone()
    assert row is not None
    return _plan_facts(next(iter(row.values()))[0])


@dataclass
class Variant:
    """One database in one state, and whether the store's SQL must be the 0005 one."""

    name: str
    pool: ConnectionPool[Any]
    legacy: bool

    @contextmanager
    def sql(self) -> Iterator[None]:
        """The store's SQL as this variant needs it."""
        if self.legacy:
            with legacy_operators():
                yield
        else:
            yield


def _list_ids(filters: EntryFilters, entries: EntryStore, _: SearchStore) -> list[Any]:
    return [x.id for x in entries.list("alice", filters, limit=LIST_LIMIT).entries]


def _search_ids(params: SearchParams, _: EntryStore, search: SearchStore) -> list[Any]:
    return [r.id for r in search.search(params).rows]


def _cases(qvec: list[float]) -> dict[str, Callable[[EntryStore, SearchStore], list[Any]]]:
    cases: dict[str, Callable[[EntryStore, SearchStore], list[Any]]] = {}
    for name, filters in LIST_CASES.items():
        cases[name] = partial(_list_ids, filters)
    for name, filters in SEARCH_CASES.items():
        cases[name] = partial(_search_ids, _search_params(filters, qvec))
    return cases


def measure(variants: list[Variant], qvec: list[float]) -> dict[str, Any]:
    """Every case in every variant, interleaved round by round so that a busy machine weighs on all alike."""
    cases = _cases(qvec)
    stores = {v.name: (EntryStore(v.pool), SearchStore(v.pool)) for v in variants}
    times: dict[tuple[str, str], list[float]] = {(v.name, c): [] for v in variants for c in cases}
    ids: dict[tuple[str, str], list[Any]] = {}
    for round_ in range(WARMUP + RUNS):
        for case, call in cases.items():
            for v in variants:
                with v.sql():
                    t = time.perf_counter()
                    got = call(*stores[v.name])
                    elapsed = (time.perf_counter() - t) * 1000
                if round_ >= WARMUP:
                    times[(v.name, case)].append(elapsed)
                ids.setdefault((v.name, case), got)
    out: dict[str, Any] = {}
    for v in variants:
        out[v.name] = {}
        for case in cases:
            explains = []
            with v.sql():
                for _ in range(EXPLAINS):
                    if case in LIST_CASES:
                        explains.append(explain_list(v.pool, LIST_CASES[case]))
                    else:
                        explains.append(explain_search(v.pool, _search_params(SEARCH_CASES[case], qvec)))
            facts = explains[-1]
            for key in ("explain_plan_ms", "explain_exec_ms"):
                facts[key] = round(statistics.median(e[key] for e in explains), 2)
            out[v.name][case] = {
                "median_ms": round(statistics.median(times[(v.name, case)]), 2),
                "rows": len(ids[(v.name, case)]),
                "ids": _digest(ids[(v.name, case)]),
                **facts,
            }
    return out


def _digest(ids: list[Any]) -> str:
    return hashlib.sha256(",".join(str(i) for i in ids).encode()).hexdigest()[:12]


def _clone(server: EmbeddedServer, source: str, target: str) -> str:
    with psycopg.connect(server.url("postgres"), autocommit=True) as conn:
        conn.execute(
            sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(sql.Identifier(target), sql.Identifier(source))
        )
    return server.url(target)


def main() -> None:
    """Measure the three variants and print (and optionally save) the figures as JSON."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="pgrecall-bench-", dir="/tmp"))
    root.chmod(0o755)
    server = EmbeddedServer(root / "home")
    server.acquire()
    results: dict[str, Any] = {"entries": N_ENTRIES, "owners": len(OWNERS), "tags": N_TAGS, "runs": RUNS}
    pools: list[ConnectionPool[Any]] = []
    try:
        with psycopg.connect(server.url("postgres"), autocommit=True) as conn:
            conn.execute("CREATE DATABASE bench_broad")
        # LEAKPROOF marks live in each database's own pg_proc: three copies, three states.
        broad = server.url("bench_broad")
        schema.upgrade(broad, "0005_row_level_security")
        t = time.perf_counter()
        load(broad)
        results["load_s"] = round(time.perf_counter() - t, 1)
        unmarked = _clone(server, "bench_broad", "bench_unmarked")
        narrow = _clone(server, "bench_broad", "bench_narrow")
        with psycopg.connect(unmarked) as conn:
            for fn in ("arraycontains(anyarray, anyarray)", "arrayoverlap(anyarray, anyarray)"):
                conn.execute(f"ALTER FUNCTION pg_catalog.{fn} NOT LEAKPROOF")
        t = time.perf_counter()
        schema.upgrade(narrow, "head")
        results["upgrade_0006_s"] = round(time.perf_counter() - t, 2)
        for url in (broad, unmarked, narrow):
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute("VACUUM ANALYZE entries")
        variants = []
        for name, url, legacy in (
            ("broad", broad, True),
            ("unmarked", unmarked, True),
            ("narrow", narrow, False),
        ):
            db = Database(Settings(database_url=SecretStr(url), home=root / "unused"))
            db.open()
            pool = db.make_pool(role=APP_ROLE)
            pools.append(pool)
            variants.append(Variant(name, pool, legacy))
        rng = random.Random(SEED + 1)  # noqa: S311 - reproducible query vector
        qvec = [rng.gauss(0.0, 1.0) for _ in range(DIM)]
        measured = measure(variants, qvec)
        results["variants"] = measured
        results["same_results"] = all(
            measured["broad"][case]["ids"] == measured[v][case]["ids"]
            for v in ("unmarked", "narrow")
            for case in measured["broad"]
        )
    finally:
        for pool in pools:
            pool.close()
        server.release()
        server.stop()
        shutil.rmtree(root, ignore_errors=True)
    text = json.dumps(results, indent=2)
    print(text)
    _print_table(results)
    if args.json:
        args.json.write_text(text + "\n")


def _print_table(results: dict[str, Any]) -> None:
    variants = results["variants"]
    print(
        "\nmedian wall ms of the store call | tag GIN in plan | EXPLAIN ANALYZE execution ms, shared buffers"
    )
    print(f"{'statement':27}" + "".join(f"{v:>28}" for v in variants))
    for case in variants["broad"]:
        cells = []
        for v in variants:
            r = variants[v][case]
            gin = "GIN" if r["tag_gin_used"] else "---"
            cells.append(f"{r['median_ms']:6.2f} {gin} {r['explain_exec_ms']:6.2f} {r['shared_buffers']:5}b")
        print(f"{case:27}" + "".join(f"{c:>28}" for c in cells))


if __name__ == "__main__":
    main()
