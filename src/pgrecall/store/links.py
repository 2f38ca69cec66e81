"""Links between entries: write, remove, and read the neighbours of entries."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool

from pgrecall.domain.links import Direction, Link
from pgrecall.store.current_sql import not_expired, not_superseded
from pgrecall.store.scope import owner_transaction

# Which of the two ends exist for the owner, and whether they are live.
SQL_ENDS = (
    "SELECT id, deleted_at IS NOT NULL AS deleted FROM entries WHERE owner = %(owner)s AND id = ANY(%(ids)s)"
)

# A repeated link is not an error: it keeps one row (a new note replaces the old one).
SQL_LINK = """
INSERT INTO entry_links (owner, from_id, relation, to_id, note)
VALUES (%(owner)s, %(from_id)s, %(relation)s, %(to_id)s, %(note)s)
ON CONFLICT (owner, from_id, relation, to_id) DO UPDATE SET note = coalesce(EXCLUDED.note, entry_links.note)
RETURNING from_id, relation, to_id, note, created_at, (xmax = 0) AS created
"""

SQL_UNLINK = """
DELETE FROM entry_links
WHERE owner = %(owner)s AND from_id = %(from_id)s AND to_id = %(to_id)s
  AND (%(relation)s::text IS NULL OR relation = %(relation)s)
RETURNING relation
"""

# The neighbours of a set of entries, through links whose both ends are live (a deleted entry's
# links are hidden, not removed: restoring it brings them back).
SQL_NEIGHBOURS = f"""
SELECT n.id, n.relation, n.direction, n.via, n.note, e.title, left(e.body, %(body_chars)s) AS body,
       e.kind, e.content_hash
FROM (
    SELECT l.to_id AS id, l.relation, 'out' AS direction, l.from_id AS via, l.note, l.created_at
    FROM entry_links l
    WHERE %(out)s AND l.owner = %(owner)s AND l.from_id = ANY(%(ids)s)
      AND (%(relation)s::text IS NULL OR l.relation = %(relation)s)
    UNION ALL
    SELECT l.from_id, l.relation, 'in', l.to_id, l.note, l.created_at
    FROM entry_links l
    WHERE %(in)s AND l.owner = %(owner)s AND l.to_id = ANY(%(ids)s)
      AND (%(relation)s::text IS NULL OR l.relation = %(relation)s)
) n
JOIN entries e ON e.owner = %(owner)s AND e.id = n.id AND e.deleted_at IS NULL
JOIN entries v ON v.owner = %(owner)s AND v.id = n.via AND v.deleted_at IS NULL
-- current_only (build_context): neither expired nor superseded, as search leaves them out.
WHERE NOT %(current_only)s OR ({not_expired("e")} AND {not_superseded("e")})
ORDER BY n.created_at DESC, n.id, n.relation
LIMIT %(limit)s
"""

# Every link of an owner whose ends both exist (export; deleted ends included, as entries are).
SQL_ALL_LINKS = """
SELECT from_id, relation, to_id, note, created_at FROM entry_links
WHERE owner = %(owner)s ORDER BY created_at, from_id, relation, to_id
"""


@dataclass(frozen=True)
class Neighbour:
    """A row of SQL_NEIGHBOURS."""

    id: uuid.UUID
    relation: str
    direction: str
    via: uuid.UUID
    note: str | None
    title: str | None
    body: str
    kind: str
    content_hash: str


class LinkStore:
    """Link persistence, owner-scoped."""

    def __init__(self, pool: ConnectionPool[psycopg.Connection[dict[str, Any]]]) -> None:
        self.pool = pool

    def ends(self, owner: str, ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, bool]:
        """For each id the owner has: True when that entry is deleted."""
        with owner_transaction(self.pool, owner) as conn:
            rows = conn.execute(SQL_ENDS, {"owner": owner, "ids": list(ids)}).fetchall()
        return {r["id"]: bool(r["deleted"]) for r in rows}

    def link(
        self, owner: str, from_id: uuid.UUID, relation: str, to_id: uuid.UUID, note: str | None
    ) -> tuple[Link, bool]:
        """Store the link (or keep the existing one); True when it is new."""
        params = {"owner": owner, "from_id": from_id, "relation": relation, "to_id": to_id, "note": note}
        with owner_transaction(self.pool, owner) as conn:
            row = conn.execute(SQL_LINK, params).fetchone()
        assert row is not None
        return _link(row), bool(row["created"])

    def unlink(self, owner: str, from_id: uuid.UUID, to_id: uuid.UUID, relation: str | None) -> list[str]:
        """Remove the links from → to (of one relation, or all); the relations removed."""
        params = {"owner": owner, "from_id": from_id, "to_id": to_id, "relation": relation}
        with owner_transaction(self.pool, owner) as conn:
            rows = conn.execute(SQL_UNLINK, params).fetchall()
        return sorted(r["relation"] for r in rows)

    def neighbours(
        self,
        owner: str,
        ids: Sequence[uuid.UUID],
        *,
        direction: Direction,
        relation: str | None,
        limit: int,
        body_chars: int = 300,
        current_only: bool = False,
    ) -> list[Neighbour]:
        """Live entries linked to any of `ids` (newest links first)."""
        params = {
            "owner": owner,
            "ids": list(ids),
            "out": direction in ("out", "both"),
            "in": direction in ("in", "both"),
            "relation": relation,
            "limit": limit,
            "body_chars": body_chars,
            "current_only": current_only,
        }
        with owner_transaction(self.pool, owner) as conn:
            rows = conn.execute(SQL_NEIGHBOURS, params).fetchall()
        return [Neighbour(**r) for r in rows]

    def all_links(self, owner: str) -> list[Link]:
        """Every link of the owner, oldest first."""
        with owner_transaction(self.pool, owner) as conn:
            rows = conn.execute(SQL_ALL_LINKS, {"owner": owner}).fetchall()
        return [_link(r) for r in rows]


def _link(row: dict[str, Any]) -> Link:
    return Link(str(row["from_id"]), row["relation"], str(row["to_id"]), row["note"], row["created_at"])
