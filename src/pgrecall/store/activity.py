"""What an owner's memory looks like at a glance: tag counts and the latest changes."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

import psycopg
from psycopg_pool import ConnectionPool

from pgrecall.store.scope import owner_transaction

Change = Literal["added", "updated", "deleted", "linked"]

# Live entries only: a tag that survives only on deleted entries is not one to reuse.
# Tags are counted folded, as the filters match them ("Postgres" and "postgres" are one tag,
# an entry counted once), shown in their most used spelling (the first in code-point order on a
# tie); a prefix matches the same way (starts_with: no LIKE pattern to escape).
SQL_TAG_COUNTS = """
WITH tagged AS (
    SELECT id, tag, lower(tag) AS folded
    FROM entries, unnest(tags) AS tag
    WHERE owner = %(owner)s AND deleted_at IS NULL
      AND (%(prefix)s::text IS NULL OR starts_with(lower(tag), lower(%(prefix)s::text)))
), counted AS (
    SELECT folded, count(DISTINCT id) AS n FROM tagged GROUP BY folded
)
SELECT (SELECT s.tag FROM tagged s WHERE s.folded = c.folded
        GROUP BY s.tag ORDER BY count(*) DESC, s.tag LIMIT 1) AS tag,
       c.n
FROM counted c
ORDER BY c.n DESC, c.folded
LIMIT %(limit)s
"""

# No change log is kept: each entry yields its creation, its last change while live and its
# deletion. An insert fills created_at and updated_at with two clock_timestamp() calls, so a fresh
# row's updated_at is a few microseconds later: a change is a new version (update_entry), or an
# updated_at more than a second after creation (restore_entry, which keeps the version). Each
# branch takes only the newest `limit` rows of its kind: the sort sees at most 4 × limit rows.
# A link (entry_links, migration 0010) shows as a change of the entry it starts from.
SQL_RECENT_CHANGES = """
(SELECT id, title, left(body, 1000) AS body, kind, 'added' AS change, created_at AS at,
        NULL::text AS relation, NULL::uuid AS to_id
 FROM entries WHERE owner = %(owner)s
 ORDER BY created_at DESC LIMIT %(limit)s)
UNION ALL
(SELECT id, title, left(body, 1000), kind, 'updated', updated_at, NULL, NULL
 FROM entries WHERE owner = %(owner)s AND deleted_at IS NULL
   AND (version > 1 OR updated_at > created_at + interval '1 second')
 ORDER BY updated_at DESC LIMIT %(limit)s)
UNION ALL
(SELECT id, title, left(body, 1000), kind, 'deleted', deleted_at, NULL, NULL
 FROM entries WHERE owner = %(owner)s AND deleted_at IS NOT NULL
 ORDER BY deleted_at DESC LIMIT %(limit)s)
UNION ALL
(SELECT e.id, e.title, left(e.body, 1000), e.kind, 'linked', l.created_at, l.relation, l.to_id
 FROM entry_links l JOIN entries e ON e.owner = l.owner AND e.id = l.from_id
 WHERE l.owner = %(owner)s
 ORDER BY l.created_at DESC LIMIT %(limit)s)
ORDER BY at DESC, id DESC, change
LIMIT %(limit)s
"""


# The same four kinds of change in a window, newest first, paged by a keyset on (at, id, change)
# in descending order (row comparison: every branch reads only rows after the cursor).
SQL_ACTIVITY_SINCE = """
(SELECT id, title, left(body, 1000) AS body, kind, 'added' AS change, created_at AS at,
        NULL::text AS relation, NULL::uuid AS to_id
 FROM entries WHERE owner = %(owner)s AND created_at >= %(since)s
   AND (%(c_at)s::timestamptz IS NULL
        OR (created_at, id, 'added') < (%(c_at)s, %(c_id)s::uuid, %(c_change)s::text))
 ORDER BY created_at DESC, id DESC LIMIT %(limit)s)
UNION ALL
(SELECT id, title, left(body, 1000), kind, 'updated', updated_at, NULL, NULL
 FROM entries WHERE owner = %(owner)s AND deleted_at IS NULL AND updated_at >= %(since)s
   AND (version > 1 OR updated_at > created_at + interval '1 second')
   AND (%(c_at)s::timestamptz IS NULL
        OR (updated_at, id, 'updated') < (%(c_at)s, %(c_id)s::uuid, %(c_change)s::text))
 ORDER BY updated_at DESC, id DESC LIMIT %(limit)s)
UNION ALL
(SELECT id, title, left(body, 1000), kind, 'deleted', deleted_at, NULL, NULL
 FROM entries WHERE owner = %(owner)s AND deleted_at >= %(since)s
   AND (%(c_at)s::timestamptz IS NULL
        OR (deleted_at, id, 'deleted') < (%(c_at)s, %(c_id)s::uuid, %(c_change)s::text))
 ORDER BY deleted_at DESC, id DESC LIMIT %(limit)s)
UNION ALL
(SELECT e.id, e.title, left(e.body, 1000), e.kind, 'linked', l.created_at, l.relation, l.to_id
 FROM entry_links l JOIN entries e ON e.owner = l.owner AND e.id = l.from_id
 WHERE l.owner = %(owner)s AND l.created_at >= %(since)s
   AND (%(c_at)s::timestamptz IS NULL
        OR (l.created_at, l.from_id, 'linked') < (%(c_at)s, %(c_id)s::uuid, %(c_change)s::text))
 ORDER BY l.created_at DESC, l.from_id DESC LIMIT %(limit)s)
ORDER BY at DESC, id DESC, change DESC
LIMIT %(limit)s
"""


@dataclass(frozen=True)
class TagCount:
    """A tag and how many live entries carry it."""

    tag: str
    entries: int


@dataclass(frozen=True)
class EntryChange:
    """One change to an entry: what happened to it and when (the body is cut to its start)."""

    id: uuid.UUID
    title: str | None
    body_start: str
    kind: str
    change: Change
    at: datetime
    # A `linked` change: the relation and the entry linked to.
    relation: str | None = None
    to_id: uuid.UUID | None = None


def _change(r: dict[str, Any]) -> EntryChange:
    return EntryChange(
        r["id"], r["title"], r["body"], r["kind"], r["change"], r["at"], r["relation"], r["to_id"]
    )


class ActivityStore:
    """Owner-scoped reads over the entries table as a whole."""

    def __init__(self, pool: ConnectionPool[psycopg.Connection[dict[str, Any]]]) -> None:
        self.pool = pool

    def tag_counts(self, owner: str, limit: int, prefix: str | None = None) -> list[TagCount]:
        """The owner's tags on live entries (starting with `prefix`, any case), most used first."""
        params = {"owner": owner, "limit": limit, "prefix": prefix}
        with owner_transaction(self.pool, owner) as conn:
            rows = conn.execute(SQL_TAG_COUNTS, params).fetchall()
        return [TagCount(r["tag"], int(r["n"])) for r in rows]

    def recent_changes(self, owner: str, limit: int) -> list[EntryChange]:
        """The owner's latest `limit` changes, newest first."""
        with owner_transaction(self.pool, owner) as conn:
            rows = conn.execute(SQL_RECENT_CHANGES, {"owner": owner, "limit": limit}).fetchall()
        return [_change(r) for r in rows]

    def changes_since(
        self, owner: str, since: datetime, limit: int, after: tuple[datetime, uuid.UUID, str] | None
    ) -> list[EntryChange]:
        """Up to `limit` changes at or after `since`, newest first, after the keyset `after`."""
        params = {
            "owner": owner,
            "since": since,
            "limit": limit,
            "c_at": after[0] if after else None,
            "c_id": after[1] if after else None,
            "c_change": after[2] if after else None,
        }
        with owner_transaction(self.pool, owner) as conn:
            rows = conn.execute(SQL_ACTIVITY_SINCE, params).fetchall()
        return [_change(r) for r in rows]
