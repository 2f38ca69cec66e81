"""Where the database is (embedded server or external URL) and the connection pool."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import TracebackType
from typing import Any

import psycopg
from pgvector.psycopg import register_vector
from psycopg import sql
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool, PoolTimeout

from pgrecall.config import Settings
from pgrecall.db.conninfo import TIMEOUT_SETTING, describe_failure, libpq_timeout, with_connect_timeout
from pgrecall.db.embedded import EmbeddedServer
from pgrecall.db.supervisor import Supervisor
from pgrecall.errors import DatabaseUnavailableError

log = logging.getLogger(__name__)

# The NOLOGIN role migration 0005 creates; owner-scoped tables have FORCE'd policies for it.
APP_ROLE = "pgrecall_app"


def register_vector_adapter(conn: psycopg.Connection[Any]) -> bool:
    """pgvector's adapter on `conn`: numpy arrays to and from `vector` columns, binary on the wire.

    False where the database has no vector type yet (migration 0001 creates the extension): the
    migrations' and checks' own connections come before it and send no vector.
    """
    try:
        register_vector(conn)
    except psycopg.ProgrammingError:
        return False
    return True


class Database:
    """A handle on pgrecall's PostgreSQL: acquires the embedded server on enter, releases it on exit."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.embedded: EmbeddedServer | None = (
            EmbeddedServer(
                settings.home,
                connect_timeout_s=settings.db_connect_timeout_s,
                shared_buffers_mb=settings.db_shared_buffers_mb,
            )
            if settings.embedded
            else None
        )
        self._url: str | None = None
        self._supervisor: Supervisor | None = None
        # A stdio server opens the database in a thread and closes it from the main one on Ctrl-C:
        # a close during the embedded server's start must wait for it and release it, and an open
        # after close must not start a server nobody will release.
        self._lifecycle = threading.Lock()
        self._closed = False

    def __enter__(self) -> Database:
        self.open()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def open(self) -> str:
        """Make the database reachable and return its URL (a closed handle does not reopen)."""
        with self._lifecycle:
            if self._closed:
                raise DatabaseUnavailableError("the database handle was closed (the process is stopping)")
            if self._url is None:
                if self.embedded is not None:
                    self._url = self.embedded.acquire()
                    self._supervisor = Supervisor(self.embedded)
                    self._supervisor.start()
                else:
                    assert self.settings.database_url is not None
                    self._url = self.settings.database_url.get_secret_value()
        return self.url

    def close(self) -> None:
        """Release the embedded server (it stops when no other holder remains); waits for an open going on."""
        with self._lifecycle:
            self._closed = True
            if self._supervisor is not None:
                self._supervisor.stop()
                self._supervisor = None
            if self._url is not None and self.embedded is not None:
                self.embedded.release()
            self._url = None

    @property
    def url(self) -> str:
        """URL of the open database, with the connect timeout; the embedded socket dir is re-verified."""
        if self._url is None:
            raise DatabaseUnavailableError("database not opened")
        url = self.embedded.url() if self.embedded is not None else self._url
        return with_connect_timeout(url, self.settings.db_connect_timeout_s)

    @contextmanager
    def connect(self, **kwargs: Any) -> Iterator[psycopg.Connection[Any]]:
        """One direct connection (CLI, migrations checks); the server uses `make_pool`."""
        url = self.url
        try:
            conn = psycopg.connect(url, row_factory=dict_row, **kwargs)
        except psycopg.OperationalError as exc:
            raise DatabaseUnavailableError(describe_failure(str(exc), url)) from exc
        with conn:
            register_vector_adapter(conn)
            yield conn

    def _pool_conninfo(self) -> str:
        # The pool retries only its own kind of failure cleanly; report a refused socket dir as one.
        try:
            return self.url
        except DatabaseUnavailableError as exc:
            raise psycopg.OperationalError(str(exc)) from exc

    def make_pool(self, *, role: str | None = None) -> ConnectionPool[psycopg.Connection[dict[str, Any]]]:
        """An open connection pool with the session settings every pgrecall query expects.

        With `role` (the server passes APP_ROLE), every session runs as that role, so
        row-level security confines each transaction to the owner it sets.
        """
        timeout = self.settings.statement_timeout_ms
        wait_s = self.settings.db_connect_timeout_s

        def configure(conn: psycopg.Connection[Any]) -> None:
            conn.execute("SELECT set_config('statement_timeout', %s, false)", (str(timeout),))
            if role is not None:
                conn.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(role)))
            # The pool opens after the migrations (App checks the schema first): the type exists.
            register_vector_adapter(conn)
            conn.commit()

        url = self.url
        pool: ConnectionPool[psycopg.Connection[dict[str, Any]]] = ConnectionPool(
            # A callable: every new connection (also after a server restart) re-verifies the
            # embedded server's socket directory before it connects.
            self._pool_conninfo,
            min_size=self.settings.pool_min_size,
            max_size=self.settings.pool_max_size,
            kwargs={"row_factory": dict_row},
            configure=configure,
            # A broken connection (server restarted) is detected at checkout, not by the query.
            check=ConnectionPool.check_connection,
            # psycopg_pool's defaults (wait 30 s for a connection, retry a lost server with
            # doubling delays for up to 300 s) made recovery after a PostgreSQL restart take as
            # long as the outage; with these, calls during an outage fail within the connect
            # timeout (PGRECALL_DB_CONNECT_TIMEOUT_S, also the wait for a free connection) and
            # the first call after the restart reconnects at once.
            timeout=wait_s,
            reconnect_timeout=10,
            open=False,
            name="pgrecall",
        )
        try:
            # Room for one failed attempt and a retry, each bounded by connect_timeout.
            pool.open(wait=True, timeout=2 * libpq_timeout(wait_s) + 1)
        except Exception as exc:
            pool.close()
            if isinstance(exc, PoolTimeout):
                raise DatabaseUnavailableError(
                    f"cannot connect to PostgreSQL: no connection within {2 * libpq_timeout(wait_s) + 1} s "
                    f"(connect timeout {libpq_timeout(wait_s)} s, {TIMEOUT_SETTING}): {exc}"
                ) from exc
            raise DatabaseUnavailableError(describe_failure(str(exc), url)) from exc
        return pool
