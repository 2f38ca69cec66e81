"""Pytest plugin: one real embedded PostgreSQL per test session, a fresh database per test.

Under pytest-xdist every worker is a session of its own: its own home under /tmp, its own server.
"""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import suppress
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from pgrecall.app import App
from pgrecall.config import Settings
from pgrecall.db import migrate as schema
from pgrecall.db.embedded import EmbeddedServer

TEMPLATE = "pgrecall_template"
_counter = itertools.count()


@pytest.fixture(scope="session")
def pg_home() -> Iterator[Path]:
    """A throw-away PGRECALL_HOME outside /root, one per pytest-xdist worker (each its own server)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    home = Path(tempfile.mkdtemp(prefix=f"pgrecall-test-{worker}-", dir="/tmp"))
    # The embedded server runs as its own user when tests run as root; it must enter this dir.
    home.chmod(0o755)
    yield home
    shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(scope="session")
def pg_server(pg_home: Path) -> Iterator[EmbeddedServer]:
    """The embedded server, started once; stopped at the end of the session even on failure."""
    server = EmbeddedServer(pg_home / "server")
    server.acquire()
    try:
        with psycopg.connect(server.url("postgres"), autocommit=True) as conn:
            # A throw-away server: nothing in it must survive a crash, and every test creates and
            # drops a database, so skip the flushes (and the long shutdown checkpoint they make).
            for setting in ("fsync", "synchronous_commit", "full_page_writes"):
                conn.execute(sql.SQL("ALTER SYSTEM SET {} = off").format(sql.Identifier(setting)))
            conn.execute("SELECT pg_reload_conf()")
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(TEMPLATE)))
        schema.upgrade(server.url(TEMPLATE), "head")
        yield server
    finally:
        server.release()
        server.stop()


def _create_db(server: EmbeddedServer, template: str | None) -> str:
    name = f"t_{os.getpid()}_{next(_counter)}"
    with psycopg.connect(server.url("postgres"), autocommit=True) as conn:
        if template:
            conn.execute(
                sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
                    sql.Identifier(name), sql.Identifier(template)
                )
            )
        else:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    return name


def _drop_db(server: EmbeddedServer, name: str) -> None:
    with psycopg.connect(server.url("postgres"), autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


@pytest.fixture
def db_url(pg_server: EmbeddedServer) -> Iterator[str]:
    """URL of a fresh database already at head."""
    name = _create_db(pg_server, TEMPLATE)
    yield pg_server.url(name)
    _drop_db(pg_server, name)


@pytest.fixture
def empty_db_url(pg_server: EmbeddedServer) -> Iterator[str]:
    """URL of a fresh database with no schema at all."""
    name = _create_db(pg_server, None)
    yield pg_server.url(name)
    _drop_db(pg_server, name)


@pytest.fixture
def settings(db_url: str, pg_home: Path) -> Settings:
    """Settings pointing at the fresh database (as an external URL), with the models in this process."""
    # Models in-process: each test gets exactly the embedder its settings name (the shared worker's
    # own tests, and the server subprocesses started with PGRECALL_MODELS=worker, cover worker mode).
    return Settings(database_url=db_url, home=pg_home / "unused-home", models="in-process")


@pytest.fixture
def app(settings: Settings) -> Iterator[App]:
    """The App on the fresh database without an embedder: vectors stay pending, search goes by words.

    A module that needs another App (an embedder, other limits) defines its own `app`.
    """
    with App(settings, embedder=None) as opened:
        yield opened


@pytest.fixture
def own_postgres() -> Iterator[EmbeddedServer]:
    """An embedded PostgreSQL at head that a test may stop, kill and start, in its own home under /tmp."""
    # Named like the session's home so that .ci/run's cleanup also stops it after a killed run.
    home = Path(tempfile.mkdtemp(prefix="pgrecall-test-fault-", dir="/tmp"))
    home.chmod(0o755)  # the server runs as its own user when tests run as root
    server = EmbeddedServer(home / "pg")
    try:
        schema.upgrade(server.pin(), "head")
        yield server
    finally:
        with suppress(Exception):
            server.stop()
        shutil.rmtree(home, ignore_errors=True)
