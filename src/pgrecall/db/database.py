"""Where the database is (embedded server or external URL) and the connection pool."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from types import TracebackType
from typing import Any

import psycopg
from psycopg import sql
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

from pgrecall.config import Settings
from pgrecall.db.embedded import EmbeddedServer
from pgrecall.errors import DatabaseUnavailableError

log = logging.getLogger(__name__)

# The NOLOGIN role migration 0005 creates; owner-scoped tables have FORCE'd policies for it.
APP_ROLE = "pgrecall_app"


class Database:
    """A handle on pgrecall's PostgreSQL: acquires the embedded server on enter, releases it on exit."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.embedded: EmbeddedServer | None = EmbeddedServer(settings.home) if settings.embedded else None
        self._url: str | None = None

    def __enter__(self) -> Database:
        self.open()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def open(self) -> str:
        """Make the database reachable and return its URL."""
        if self._url is None:
            if self.embedded is not None:
                self._url = self.embedded.acquire()
            else:
                assert self.settings.database_url is not None
                self._url = self.settings.database_url.get_secret_value()
        return self._url

    def close(self) -> None:
        """Release the embedded server (it stops when no other process holds it)."""
        if self._url is not None and self.embedded is not None:
            self.embedded.release()
        self._url = None

    @property
    def url(self) -> str:
        """URL of the open database."""
        if self._url is None:
            raise DatabaseUnavailableError("database not opened")
        return self._url

    @contextmanager
    def connect(self, **kwargs: Any) -> Iterator[psycopg.Connection[Any]]:
        """One direct connection (CLI, migrations checks); the server uses `make_pool`."""
        try:
            conn = psycopg.connect(self.url, row_factory=dict_row, **kwargs)
        except psycopg.OperationalError as exc:
            raise DatabaseUnavailableError(f"cannot connect to PostgreSQL: {exc}") from exc
        with conn:
            yield conn

    def make_pool(self, *, role: str | None = None) -> ConnectionPool[psycopg.Connection[dict[str, Any]]]:
        """An open connection pool with the session settings every pgrecall query expects.

        With `role` (the server passes APP_ROLE), every session runs as that role, so
        row-level security confines each transaction to the owner it sets.
        """
        timeout = self.settings.statement_timeout_ms

        def configure(conn: psycopg.Connection[Any]) -> None:
            conn.execute("SELECT set_config('statement_timeout', %s, false)", (str(timeout),))
            if role is not None:
                conn.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(role)))
            conn.commit()

        pool: ConnectionPool[psycopg.Connection[dict[str, Any]]] = ConnectionPool(
            self.url,
            min_size=self.settings.pool_min_size,
            max_size=self.settings.pool_max_size,
            kwargs={"row_factory": dict_row},
            configure=configure,
            # A broken connection (server restarted) is detected at checkout, not by the query.
            check=ConnectionPool.check_connection,
            # psycopg_pool's defaults (wait 30 s for a connection, retry a lost server with
            # doubling delays for up to 300 s) made recovery after a PostgreSQL restart take as
            # long as the outage; with these, calls during an outage fail within 10 s and the
            # first call after the restart reconnects at once.
            timeout=10,
            reconnect_timeout=10,
            open=False,
            name="pgrecall",
        )
        try:
            pool.open(wait=True, timeout=30)
        except Exception as exc:
            pool.close()
            raise DatabaseUnavailableError(f"cannot connect to PostgreSQL: {exc}") from exc
        return pool
