"""A throwaway embedded PostgreSQL for benchmarks: its own home in the temp dir, stopped and removed on exit.

The temp dir is /tmp unless TMPDIR says otherwise: a run of hours (`pgrecall bench` at 1M) sets it
elsewhere, out of reach of the clean-up that stops every server a test run left under /tmp.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
from psycopg import sql

from pgrecall.db import migrate as schema
from pgrecall.db.embedded import EmbeddedServer


@contextmanager
def private_server(label: str) -> Iterator[EmbeddedServer]:
    """A server in a fresh `pgrecall-<label>-*` home in the temp dir, stopped and its home removed on exit."""
    home = Path(tempfile.mkdtemp(prefix=f"pgrecall-{label}-"))
    # Started by root, the server runs as its own user: it must be able to reach its data directory.
    home.chmod(0o755)
    server = EmbeddedServer(home / "server")
    server.acquire()
    try:
        yield server
    finally:
        server.release()
        server.stop()
        shutil.rmtree(home, ignore_errors=True)


def fresh_database(server: EmbeddedServer, name: str) -> str:
    """Create database `name` on `server` (dropping any left by an earlier run) at schema head; its URL."""
    with psycopg.connect(server.url("postgres"), autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    url = server.url(name)
    schema.upgrade(url, "head")
    return url


def drop_database(server: EmbeddedServer, name: str) -> None:
    """Drop database `name` on `server`, closing any session still on it."""
    with psycopg.connect(server.url("postgres"), autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))
