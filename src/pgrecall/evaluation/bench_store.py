"""The search bench's store on a throwaway embedded server, for the benchmark scripts that study one knob."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from pgrecall.db import migrate as schema
from pgrecall.db.embedded import EmbeddedServer
from pgrecall.evaluation.speed import load_store
from pgrecall.evaluation.speed_inputs import BenchInputs, bench_inputs


@dataclass(frozen=True)
class BenchStore:
    """A loaded bench store: where it is, what it was built from, and what loading it cost."""

    url: str
    inputs: BenchInputs
    load: dict[str, Any]


@contextmanager
def temporary_bench_store(size: int, seed: int, name: str) -> Iterator[BenchStore]:
    """Build `pgrecall bench`'s store of `size` entries in database `name`; gone again on exit."""
    inputs = bench_inputs(size, seed)
    home = Path(tempfile.mkdtemp(prefix=f"pgrecall-{name}-", dir="/tmp"))
    # The server runs as its own user when started by root: it must reach its data directory.
    home.chmod(0o755)
    server = EmbeddedServer(home / "server")
    server.acquire()
    try:
        with psycopg.connect(server.url("postgres"), autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        url = server.url(name)
        schema.upgrade(url, "head")
        yield BenchStore(url, inputs, load_store(url, inputs.docs, inputs.vectors, seed))
    finally:
        server.release()
        server.stop()
        shutil.rmtree(home, ignore_errors=True)
