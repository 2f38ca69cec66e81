"""Owner scoping of a transaction, for row-level security.

Every owner-scoped table has a FORCE'd policy `owner = current_setting('pgrecall.owner')`.
The server connects as the non-superuser role pgrecall_app, so a statement that forgot
its `WHERE owner = …` still cannot see or touch another owner's rows.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool

# Transaction-local (SET LOCAL, through a function that takes the value as a bound parameter;
# migration 0012): it ends with the transaction, so a pooled connection never carries one
# caller's owner into the next caller's transaction, and on Citus it reaches every worker.
SQL_SET_OWNER = "SELECT pgrecall_set_local('pgrecall.owner', %s)"


@contextmanager
def owner_transaction(
    pool: ConnectionPool[psycopg.Connection[dict[str, Any]]], owner: str
) -> Iterator[psycopg.Connection[dict[str, Any]]]:
    """A pooled connection in a transaction scoped to `owner` (committed on success)."""
    with pool.connection() as conn:
        conn.execute(SQL_SET_OWNER, (owner,))
        yield conn
