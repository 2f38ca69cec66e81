"""Supersedes chains: the entries an entry replaces and the entries that replace it."""

from __future__ import annotations

import uuid
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool

from pgrecall.domain.currency import MAX_CHAIN_DEPTH, ChainLink
from pgrecall.store.scope import owner_transaction

# Older entries, nearest first: follow `supersedes` back from the entry. UNION (not ALL) and
# the depth bound stop at a loop an import may have written.
SQL_REPLACED = """
WITH RECURSIVE back(id, depth) AS (
    SELECT supersedes, 1 FROM entries WHERE owner = %(owner)s AND id = %(id)s AND supersedes IS NOT NULL
    UNION
    SELECT e.supersedes, b.depth + 1
    FROM back b JOIN entries e ON e.owner = %(owner)s AND e.id = b.id
    WHERE e.supersedes IS NOT NULL AND b.depth < %(max_depth)s
)
SELECT e.id, e.title, min(b.depth) AS depth, e.created_at, e.deleted_at IS NOT NULL AS deleted,
       coalesce(e.expires_at <= statement_timestamp(), false) AS expired
FROM back b JOIN entries e ON e.owner = %(owner)s AND e.id = b.id
WHERE e.id <> %(id)s
GROUP BY e.id, e.title, e.created_at, e.deleted_at, e.expires_at
ORDER BY depth, e.created_at DESC, e.id
"""

# Newer entries, nearest first: those whose `supersedes` leads to the entry (deleted ones too,
# flagged: they no longer supersede anything).
SQL_REPLACED_BY = """
WITH RECURSIVE fwd(id, depth) AS (
    SELECT id, 1 FROM entries WHERE owner = %(owner)s AND supersedes = %(id)s
    UNION
    SELECT e.id, f.depth + 1
    FROM fwd f JOIN entries e ON e.owner = %(owner)s AND e.supersedes = f.id
    WHERE f.depth < %(max_depth)s
)
SELECT e.id, e.title, min(f.depth) AS depth, e.created_at, e.deleted_at IS NOT NULL AS deleted,
       coalesce(e.expires_at <= statement_timestamp(), false) AS expired
FROM fwd f JOIN entries e ON e.owner = %(owner)s AND e.id = f.id
WHERE e.id <> %(id)s
GROUP BY e.id, e.title, e.created_at, e.deleted_at, e.expires_at
ORDER BY depth, e.created_at DESC, e.id
"""


class CurrencyStore:
    """Reads of supersedes chains, owner-scoped."""

    def __init__(self, pool: ConnectionPool[psycopg.Connection[dict[str, Any]]]) -> None:
        self.pool = pool

    def replaced(self, owner: str, entry_id: uuid.UUID) -> list[ChainLink]:
        """The entries `entry_id` supersedes, directly or through others, nearest first."""
        return self._chain(SQL_REPLACED, owner, entry_id)

    def replaced_by(self, owner: str, entry_id: uuid.UUID) -> list[ChainLink]:
        """The entries that supersede `entry_id`, directly or through others, nearest first."""
        return self._chain(SQL_REPLACED_BY, owner, entry_id)

    def _chain(self, statement: str, owner: str, entry_id: uuid.UUID) -> list[ChainLink]:
        params = {"owner": owner, "id": entry_id, "max_depth": MAX_CHAIN_DEPTH}
        with owner_transaction(self.pool, owner) as conn:
            rows = conn.execute(statement, params).fetchall()
        return [
            ChainLink(str(r["id"]), r["title"], int(r["depth"]), r["created_at"], r["deleted"], r["expired"])
            for r in rows
        ]
