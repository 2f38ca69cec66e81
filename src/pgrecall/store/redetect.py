"""SQL of the language backfill: keyset batches over (owner, id) and a guarded batch update."""

from __future__ import annotations

import builtins
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool

# A language the caller chose (language_how = 'explicit') is theirs: only --include-explicit
# re-judges it. Rows from before migration 0011 (NULL: not recorded) are re-judged.
_SCOPE = """
    (%(owner)s::text IS NULL OR owner = %(owner)s)
    AND (NOT %(only_simple)s OR language = 'simple'::regconfig)
    AND (%(include_explicit)s OR language_how IS DISTINCT FROM 'explicit')
"""

SQL_REDETECT_EXPLICIT = """
SELECT count(*) AS n FROM entries
WHERE (%(owner)s::text IS NULL OR owner = %(owner)s)
  AND (NOT %(only_simple)s OR language = 'simple'::regconfig)
  AND language_how = 'explicit'
"""

SQL_REDETECT_COUNT = f"SELECT count(*) AS n FROM entries WHERE {_SCOPE}"

# Keyset over the primary key: each batch is an index range scan, whatever the table size.
SQL_REDETECT_BATCH = f"""
SELECT owner, id, title, body, language::text AS language, detected_language, content_hash, document_id
FROM entries
WHERE {_SCOPE}
  AND (%(after_owner)s::text IS NULL OR (owner, id) > (%(after_owner)s::text, %(after_id)s::uuid))
ORDER BY owner, id
LIMIT %(limit)s
"""

# The opening of each chunk's document, which its language follows (deleted documents too: their
# chunks are re-judged like any other row).
SQL_DOCUMENT_SAMPLES = """
SELECT id, left(text, %(chars)s) AS sample FROM documents WHERE owner = %(owner)s AND id = ANY(%(ids)s)
"""

# Only rows whose text and language are still what was read: a concurrent edit wins.
# version is not bumped (see redetect.py); updated_at is, so readers can see the row changed.
# The languages arrive as regconfig[] (cast once, from the parameters): Citus refuses the cast
# text → regconfig (a STABLE function) applied to a column in an UPDATE.
SQL_REDETECT_UPDATE = """
UPDATE entries AS e
SET language = c.language, detected_language = c.detected, language_how = 'detected',
    language_confidence = NULL, updated_at = statement_timestamp()
FROM unnest(%(owners)s::text[], %(ids)s::uuid[], %(old)s::regconfig[], %(new)s::regconfig[],
            %(hashes)s::text[], %(detected)s::text[])
     AS c(owner, id, old_language, language, content_hash, detected)
WHERE e.owner = c.owner AND e.id = c.id
  AND e.language = c.old_language AND e.content_hash = c.content_hash
  AND (%(include_explicit)s OR e.language_how IS DISTINCT FROM 'explicit')
"""


@dataclass(frozen=True)
class LanguageChange:
    """One row whose language should change."""

    owner: str
    id: uuid.UUID
    old: str
    new: str
    content_hash: str
    detected: str | None = None  # with new = 'simple': the unstemmable language found


class RedetectStore:
    """Reads and writes of the language backfill, over the app's pool."""

    def __init__(self, pool: ConnectionPool[psycopg.Connection[dict[str, Any]]]) -> None:
        self.pool = pool

    def count(self, owner: str | None, only_simple: bool, include_explicit: bool = False) -> int:
        """How many rows a pass will look at."""
        params = {"owner": owner, "only_simple": only_simple, "include_explicit": include_explicit}
        with self.pool.connection() as conn:
            row = conn.execute(SQL_REDETECT_COUNT, params).fetchone()
        return int(row["n"]) if row else 0

    def count_explicit(self, owner: str | None, only_simple: bool) -> int:
        """How many rows in scope have an explicitly chosen language."""
        with self.pool.connection() as conn:
            row = conn.execute(SQL_REDETECT_EXPLICIT, {"owner": owner, "only_simple": only_simple}).fetchone()
        return int(row["n"]) if row else 0

    def batch(
        self,
        owner: str | None,
        only_simple: bool,
        after: tuple[str, uuid.UUID] | None,
        limit: int,
        include_explicit: bool = False,
    ) -> builtins.list[dict[str, Any]]:
        """The next rows after `after` in (owner, id) order."""
        params = {
            "owner": owner,
            "only_simple": only_simple,
            "include_explicit": include_explicit,
            "after_owner": after[0] if after else None,
            "after_id": after[1] if after else None,
            "limit": limit,
        }
        with self.pool.connection() as conn:
            return conn.execute(SQL_REDETECT_BATCH, params).fetchall()

    def document_samples(self, owner: str, ids: Sequence[uuid.UUID], chars: int) -> dict[uuid.UUID, str]:
        """The first `chars` characters of each of `owner`'s documents `ids` (missing ones left out)."""
        with self.pool.connection() as conn:
            rows = conn.execute(SQL_DOCUMENT_SAMPLES, {"owner": owner, "ids": list(ids), "chars": chars})
            return {row["id"]: row["sample"] for row in rows.fetchall()}

    def apply(self, changes: Sequence[LanguageChange], include_explicit: bool = False) -> int:
        """Write the changes in one statement; returns how many rows were still unedited and changed
        (a row whose language was set explicitly meanwhile is skipped unless `include_explicit`)."""
        if not changes:
            return 0
        params = {
            "owners": [c.owner for c in changes],
            "ids": [c.id for c in changes],
            "old": [c.old for c in changes],
            "new": [c.new for c in changes],
            "hashes": [c.content_hash for c in changes],
            "detected": [c.detected for c in changes],
            "include_explicit": include_explicit,
        }
        with self.pool.connection() as conn:
            return conn.execute(SQL_REDETECT_UPDATE, params).rowcount
