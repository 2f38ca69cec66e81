"""Bulk SQL for links in export and import (on the transfer's own connection; no row-level security)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any, Literal

import psycopg

SQL_EXPORT_LINKS = """
SELECT from_id, relation, to_id, note, created_at FROM entry_links
WHERE owner = %(owner)s
ORDER BY created_at, from_id, relation, to_id
"""

# Inserted only when both ends are entries of the owner; otherwise the caller learns which.
SQL_IMPORT_LINK = """
WITH ends AS (
    SELECT count(*) FILTER (WHERE id = %(from_id)s) AS has_from,
           count(*) FILTER (WHERE id = %(to_id)s) AS has_to
    FROM entries WHERE owner = %(owner)s AND id IN (%(from_id)s, %(to_id)s)
), added AS (
    INSERT INTO entry_links (owner, from_id, relation, to_id, note, created_at)
    SELECT %(owner)s, %(from_id)s, %(relation)s, %(to_id)s, %(note)s,
           %(created_at)s::timestamptz
    FROM ends WHERE has_from = 1 AND has_to = 1
    ON CONFLICT (owner, from_id, relation, to_id) DO NOTHING
    RETURNING 1
)
SELECT (SELECT count(*) FROM added) AS added, has_from, has_to FROM ends
"""

LinkOutcome = Literal["inserted", "existing", "dangling"]


def export_links(conn: psycopg.Connection[dict[str, Any]], owner: str) -> list[dict[str, Any]]:
    """Every link of `owner`, oldest first."""
    return conn.execute(SQL_EXPORT_LINKS, {"owner": owner}).fetchall()


def import_link(
    conn: psycopg.Connection[dict[str, Any]],
    *,
    owner: str,
    from_id: uuid.UUID,
    relation: str,
    to_id: uuid.UUID,
    note: str | None,
    created_at: datetime | None,
) -> LinkOutcome:
    """Store one link if both ends exist; what became of it."""
    params = {
        "owner": owner,
        "from_id": from_id,
        "relation": relation,
        "to_id": to_id,
        "note": note,
        # The time is the caller's when the line has none: Citus refuses clock_timestamp() here.
        "created_at": created_at or datetime.now(UTC),
    }
    row = conn.execute(SQL_IMPORT_LINK, params).fetchone()
    assert row is not None
    if not (row["has_from"] and row["has_to"]):
        return "dangling"
    return "inserted" if row["added"] else "existing"
