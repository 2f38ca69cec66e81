"""Which owners have pending vectors: the one cross-owner read the server's background work needs.

The server's pool runs as pgrecall_app under row-level security, which (by design) cannot see
another owner's rows. Filling vectors left pending by an outage needs to know which owners have
some, so this single read goes over a direct connection as the login role (the role that ran the
migrations: its policy sees every row). It returns owner names only; the vectors are then read and
written per owner through the scoped pool, as every other statement.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

import psycopg

log = logging.getLogger(__name__)

# Owners after `after`, in order, so a caller can walk them in bounded pages.
SQL_PENDING_OWNERS = """
SELECT DISTINCT owner FROM entries
WHERE deleted_at IS NULL AND embedding_model IS DISTINCT FROM %(model)s AND owner > %(after)s
ORDER BY owner
LIMIT %(limit)s
"""

SQL_STATEMENT_TIMEOUT = "SELECT set_config('statement_timeout', %s, true)"

Connect = Callable[[], AbstractContextManager[psycopg.Connection[Any]]]


class PendingOwners:
    """Lists owners with live entries lacking a vector of a model, across owners."""

    def __init__(self, connect: Connect, *, statement_timeout_ms: int = 30_000) -> None:
        self._connect = connect
        self._timeout_ms = statement_timeout_ms

    def __call__(self, model: str, *, after: str = "", limit: int = 1000) -> list[str]:
        """Up to `limit` owners (after `after`, in order) with pending vectors of `model`."""
        with self._connect() as conn:
            conn.execute(SQL_STATEMENT_TIMEOUT, (str(self._timeout_ms),))
            rows = conn.execute(SQL_PENDING_OWNERS, {"model": model, "after": after, "limit": limit})
            return [row["owner"] for row in rows.fetchall()]
