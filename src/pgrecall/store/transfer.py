"""Bulk SQL for export and import: a streaming read per owner, and COPY into a staging table then merge.

Every statement is a literal constant with bound parameters. The import goes through a
session-local temp table so a batch is sent with one COPY and merged with two set-based
statements, whatever its size.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any, Literal

import psycopg
from psycopg.types.json import Jsonb

from pgrecall.store.documents import DocumentDraft
from pgrecall.store.entries import as_vector

ConflictPolicy = Literal["newer", "skip", "overwrite"]

SQL_EXPORT_OWNERS = """
SELECT DISTINCT owner FROM entries WHERE (%(owner)s::text IS NULL OR owner = %(owner)s)
"""

SQL_EXPORT_COUNT = """
SELECT count(*) AS n FROM entries WHERE (%(owner)s::text IS NULL OR owner = %(owner)s)
"""

# One owner at a time in (created_at, id) order: served by entries_owner_created, no sort.
SQL_EXPORT_ROWS = """
SELECT id, owner, kind, source, title, body, tags, metadata, language::text AS language,
       detected_language, content_hash, version, created_at, updated_at, deleted_at,
       expires_at, supersedes, document_id, ordinal, section_path,
       CASE WHEN %(with_vectors)s THEN embedding::text END AS embedding,
       CASE WHEN %(with_vectors)s THEN embedding_model END AS embedding_model,
       CASE WHEN %(with_vectors)s THEN embedding_dim END AS embedding_dim
FROM entries
WHERE owner = %(owner)s
ORDER BY created_at, id
"""

# A document before its chunks, each owner's in (created_at, id) order.
SQL_EXPORT_DOCUMENTS = """
SELECT id, owner, source, title, version_label, format, language::text AS language, metadata,
       content_hash, text, size_bytes, mtime, chunk_count, created_at, updated_at, deleted_at
FROM documents
WHERE owner = %(owner)s
ORDER BY created_at, id
"""

# A document of the file goes in unless one of its owner has its id or its live (source,
# version): what is stored is kept (a re-import changes nothing), and chunks of a document that
# did not go in are reported, not attached to another.
SQL_IMPORT_DOCUMENT = """
INSERT INTO documents (owner, id, source, title, version_label, format, language, metadata,
                       content_hash, text, size_bytes, mtime, chunk_count, created_at, updated_at,
                       deleted_at)
VALUES (%(owner)s, %(id)s, %(source)s, %(title)s, %(version)s, %(format)s,
        %(language)s::regconfig, %(metadata)s, %(content_hash)s, %(text)s, %(size_bytes)s,
        %(mtime)s, %(chunk_count)s, coalesce(%(created_at)s, %(now)s::timestamptz),
        coalesce(%(updated_at)s, %(created_at)s, %(now)s::timestamptz), %(deleted_at)s)
ON CONFLICT DO NOTHING
RETURNING 1
"""

SQL_DOCUMENTS_OF = """
SELECT id FROM documents WHERE owner = %(owner)s AND id = ANY(%(ids)s)
"""

SQL_CREATE_STAGE = """
CREATE TEMP TABLE IF NOT EXISTS pgrecall_import (
    owner           text        NOT NULL,
    id              uuid        NOT NULL,
    kind            text        NOT NULL,
    source          text,
    title           text,
    body            text        NOT NULL,
    tags            text[]      NOT NULL,
    metadata        jsonb       NOT NULL,
    language        regconfig   NOT NULL,
    content_hash    text        NOT NULL,
    version         integer,
    created_at      timestamptz,
    updated_at      timestamptz,
    deleted_at      timestamptz,
    embedding       vector,
    embedding_model text,
    embedding_dim   integer,
    detected_language text,
    expires_at      timestamptz,
    supersedes      uuid,
    document_id     uuid,
    ordinal         integer,
    section_path    text[]
)
"""

STAGE_COLUMNS = (
    "owner",
    "id",
    "kind",
    "source",
    "title",
    "body",
    "tags",
    "metadata",
    "language",
    "content_hash",
    "version",
    "created_at",
    "updated_at",
    "deleted_at",
    "embedding",
    "embedding_model",
    "embedding_dim",
    "detected_language",
    "expires_at",
    "supersedes",
    "document_id",
    "ordinal",
    "section_path",
)

SQL_COPY_STAGE = f"COPY pgrecall_import ({', '.join(STAGE_COLUMNS)}) FROM STDIN"

SQL_TRUNCATE_STAGE = "TRUNCATE pgrecall_import"

# A staged row equals the stored one. NULL version/timestamps mean "not given in the file"
# (a hand-written line, a memory.json entity) and so never make a row differ; a row without
# a vector never differs from a stored one that has a vector, nor one without a document (an
# export from before documents travelled) from a stored chunk.
_SAME = """
(
    (e.kind, e.source, e.title, e.body, e.tags, e.metadata, e.language, e.detected_language,
     e.content_hash, e.deleted_at, e.expires_at, e.supersedes)
        IS NOT DISTINCT FROM
    (s.kind, s.source, s.title, s.body, s.tags, s.metadata, s.language, s.detected_language,
     s.content_hash, s.deleted_at, s.expires_at, s.supersedes)
    AND (s.document_id IS NULL OR (s.document_id, s.ordinal, s.section_path)
                                  IS NOT DISTINCT FROM (e.document_id, e.ordinal, e.section_path))
    AND (s.version IS NULL OR s.version = e.version)
    AND (s.created_at IS NULL OR s.created_at = e.created_at)
    AND (s.updated_at IS NULL OR s.updated_at = e.updated_at)
    AND (s.embedding_model IS NULL OR (
        s.embedding_model IS NOT DISTINCT FROM e.embedding_model
        -- CASE, not AND: comparing vectors of different dimensions is an error, and AND may
        -- evaluate its operands in any order.
        AND CASE WHEN s.embedding_dim = e.embedding_dim THEN s.embedding = e.embedding ELSE false END))
)
"""

# Whether the file's row proves it is newer than the stored one: a higher version (ties: a
# later updated_at), or, without a version, a later updated_at. A line with neither (hand
# written, a memory.json entity) proves nothing: under 'newer' it never replaces an entry.
_NEWER = """
coalesce(
    (s.version IS NOT NULL
        AND (s.version, coalesce(s.updated_at, '-infinity'::timestamptz)) > (e.version, e.updated_at))
    OR (s.version IS NULL AND s.updated_at IS NOT NULL AND s.updated_at > e.updated_at),
    false)
"""

# Whether the file's row replaces a different stored one.
_WINS = f"""
(
    %(policy)s = 'overwrite'
    OR (%(policy)s = 'newer' AND {_NEWER})
)
"""

SQL_STAGE_STATS = f"""
SELECT count(e.id) AS matched, count(e.id) FILTER (WHERE {_SAME}) AS same
FROM pgrecall_import AS s
LEFT JOIN entries AS e ON e.owner = s.owner AND e.id = s.id
"""

# Staged rows that differ from their stored entry without proving they are newer (policy 'newer').
SQL_STAGE_NOT_NEWER = f"""
SELECT s.owner, s.id
FROM pgrecall_import AS s
JOIN entries AS e ON e.owner = s.owner AND e.id = s.id
WHERE NOT {_SAME} AND NOT {_NEWER}
"""

# The stored vector survives only when the embedded text (title + body) is unchanged.
SQL_STAGE_UPDATE = f"""
UPDATE entries AS e SET
    kind = s.kind,
    source = s.source,
    title = s.title,
    body = s.body,
    tags = s.tags,
    metadata = s.metadata,
    language = s.language,
    detected_language = s.detected_language,
    content_hash = s.content_hash,
    version = coalesce(s.version, e.version + 1),
    created_at = coalesce(s.created_at, e.created_at),
    updated_at = coalesce(s.updated_at, %(now)s::timestamptz),
    deleted_at = s.deleted_at,
    expires_at = s.expires_at,
    supersedes = s.supersedes,
    -- A line without a document leaves a stored chunk in its document.
    document_id = coalesce(s.document_id, e.document_id),
    ordinal = CASE WHEN s.document_id IS NULL THEN e.ordinal ELSE s.ordinal END,
    section_path = CASE WHEN s.document_id IS NULL THEN e.section_path ELSE s.section_path END,
    embedding = CASE
        WHEN s.embedding_model IS NOT NULL THEN s.embedding
        WHEN s.content_hash = e.content_hash AND s.title IS NOT DISTINCT FROM e.title THEN e.embedding
    END,
    embedding_model = CASE
        WHEN s.embedding_model IS NOT NULL THEN s.embedding_model
        WHEN s.content_hash = e.content_hash AND s.title IS NOT DISTINCT FROM e.title THEN e.embedding_model
    END,
    embedding_dim = CASE
        WHEN s.embedding_model IS NOT NULL THEN s.embedding_dim
        WHEN s.content_hash = e.content_hash AND s.title IS NOT DISTINCT FROM e.title THEN e.embedding_dim
    END
FROM pgrecall_import AS s
WHERE e.owner = s.owner AND e.id = s.id AND NOT {_SAME} AND {_WINS}
"""

# %(now)s (one time per batch, from the caller: Citus refuses a time function inside coalesce):
# rows of one batch without timestamps share one creation time. ON CONFLICT skips entries that
# exist (Citus refuses a NOT EXISTS between a distributed table and the temporary stage).
SQL_STAGE_INSERT = """
INSERT INTO entries (owner, id, kind, source, title, body, tags, metadata, language, detected_language,
                     content_hash, version, created_at, updated_at, deleted_at,
                     embedding, embedding_model, embedding_dim, expires_at, supersedes,
                     document_id, ordinal, section_path)
SELECT s.owner, s.id, s.kind, s.source, s.title, s.body, s.tags, s.metadata, s.language,
       s.detected_language, s.content_hash,
       coalesce(s.version, 1),
       coalesce(s.created_at, %(now)s::timestamptz),
       coalesce(s.updated_at, s.created_at, %(now)s::timestamptz),
       s.deleted_at, s.embedding, s.embedding_model, s.embedding_dim, s.expires_at, s.supersedes,
       s.document_id, s.ordinal, s.section_path
FROM pgrecall_import AS s
ON CONFLICT (owner, id) DO NOTHING
RETURNING 1
"""

SQL_SET_TIMEOUT = "SELECT set_config('statement_timeout', %s, false)"


@dataclass(frozen=True)
class StagedRow:
    """One validated entry ready for COPY; None in version/timestamps means 'not in the file'."""

    owner: str
    id: uuid.UUID
    kind: str
    source: str | None
    title: str | None
    body: str
    tags: Sequence[str]
    metadata: dict[str, Any]
    language: str
    content_hash: str
    version: int | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None
    deleted_at: datetime | None = None
    embedding: Sequence[float] | None = None
    embedding_model: str | None = None
    embedding_dim: int | None = None
    detected_language: str | None = None  # ISO code of an unstemmable language stored as 'simple'
    expires_at: datetime | None = None
    supersedes: uuid.UUID | None = None  # no check that it exists: it may come later in the file
    # A document's chunk: its document (which must be in by then), place and section path.
    document_id: uuid.UUID | None = None
    ordinal: int | None = None
    section_path: Sequence[str] | None = None


@dataclass(frozen=True)
class StagedDocument:
    """One validated document line: its own fields as an ingest writes them, and what the export
    kept of its history; None in the timestamps means 'not in the file'."""

    owner: str
    id: uuid.UUID
    draft: DocumentDraft
    chunk_count: int = 0
    created_at: datetime | None = None
    updated_at: datetime | None = None
    deleted_at: datetime | None = None


@dataclass(frozen=True)
class MergeCounts:
    """What one merged batch did."""

    inserted: int
    updated: int
    unchanged: int
    kept: int
    not_newer: tuple[tuple[str, uuid.UUID], ...] = ()  # (owner, id) of each


class TransferStore:
    """Export reads and staged import writes on one dedicated connection (the caller owns transactions)."""

    def __init__(self, conn: psycopg.Connection[dict[str, Any]], statement_timeout_ms: int) -> None:
        self.conn = conn
        conn.execute(SQL_SET_TIMEOUT, (str(statement_timeout_ms),))

    # -- export ---------------------------------------------------------------------
    def export_owners(self, owner: str | None) -> list[str]:
        """Owners to export, in code point order (the same order on every server, whatever its collation)."""
        rows = self.conn.execute(SQL_EXPORT_OWNERS, {"owner": owner}).fetchall()
        return sorted(r["owner"] for r in rows)

    def export_count(self, owner: str | None) -> int:
        """How many rows an export will write."""
        row = self.conn.execute(SQL_EXPORT_COUNT, {"owner": owner}).fetchone()
        return int(row["n"]) if row else 0

    def export_rows(self, owner: str, *, with_vectors: bool, fetch: int = 1000) -> Iterator[dict[str, Any]]:
        """Every row of `owner` by (created_at, id), streamed through a server-side cursor."""
        with self.conn.cursor(name="pgrecall_export") as cur:
            cur.itersize = fetch
            cur.execute(SQL_EXPORT_ROWS, {"owner": owner, "with_vectors": with_vectors})
            yield from cur

    def export_documents(self, owner: str, *, fetch: int = 20) -> Iterator[dict[str, Any]]:
        """Every document of `owner` (deleted ones too) by (created_at, id), streamed: each holds its
        whole text, so only a few are in memory at a time."""
        with self.conn.cursor(name="pgrecall_export_documents") as cur:
            cur.itersize = fetch
            cur.execute(SQL_EXPORT_DOCUMENTS, {"owner": owner})
            yield from cur

    # -- import ---------------------------------------------------------------------
    def import_document(self, doc: StagedDocument) -> bool:
        """Insert a document unless its id or live (source, version) is taken; True if inserted."""
        params = {
            **asdict(doc.draft),
            "metadata": Jsonb(doc.draft.metadata),
            "owner": doc.owner,
            "id": doc.id,
            "chunk_count": doc.chunk_count,
            "created_at": doc.created_at,
            "updated_at": doc.updated_at,
            "deleted_at": doc.deleted_at,
            "now": datetime.now(UTC),
        }
        return self.conn.execute(SQL_IMPORT_DOCUMENT, params).fetchone() is not None

    def documents_of(self, owner: str, ids: Sequence[uuid.UUID]) -> set[uuid.UUID]:
        """Those of `owner`'s documents `ids` that exist."""
        rows = self.conn.execute(SQL_DOCUMENTS_OF, {"owner": owner, "ids": list(ids)}).fetchall()
        return {row["id"] for row in rows}

    def prepare_stage(self) -> None:
        """Create the session's staging table (idempotent)."""
        self.conn.execute(SQL_CREATE_STAGE)

    def stage(self, rows: Sequence[StagedRow]) -> None:
        """Send a batch to the staging table with one COPY."""
        with self.conn.cursor() as cur, cur.copy(SQL_COPY_STAGE) as copy:
            for r in rows:
                copy.write_row(
                    (
                        r.owner,
                        r.id,
                        r.kind,
                        r.source,
                        r.title,
                        r.body,
                        list(r.tags),
                        Jsonb(r.metadata),
                        r.language,
                        r.content_hash,
                        r.version,
                        r.created_at,
                        r.updated_at,
                        r.deleted_at,
                        as_vector(r.embedding),
                        r.embedding_model,
                        r.embedding_dim,
                        r.detected_language,
                        r.expires_at,
                        r.supersedes,
                        r.document_id,
                        r.ordinal,
                        None if r.section_path is None else list(r.section_path),
                    )
                )

    def merge(self, policy: ConflictPolicy) -> MergeCounts:
        """Merge the staged batch into entries under `policy`, then empty the staging table.

        `kept` counts stored entries kept under 'skip'; under 'newer' those are `not_newer`.
        """
        stats = self.conn.execute(SQL_STAGE_STATS).fetchone()
        assert stats is not None
        matched, same = int(stats["matched"]), int(stats["same"])
        not_newer: tuple[tuple[str, uuid.UUID], ...] = ()
        if policy == "newer":
            rows = self.conn.execute(SQL_STAGE_NOT_NEWER).fetchall()
            not_newer = tuple((row["owner"], row["id"]) for row in rows)
        updated = 0
        now = datetime.now(UTC)
        if policy != "skip":
            updated = self.conn.execute(SQL_STAGE_UPDATE, {"policy": policy, "now": now}).rowcount
        # Counted from RETURNING: on Citus the row count of an INSERT … SELECT through the
        # coordinator includes the rows ON CONFLICT skipped.
        inserted = len(self.conn.execute(SQL_STAGE_INSERT, {"now": now}).fetchall())
        self.conn.execute(SQL_TRUNCATE_STAGE)
        return MergeCounts(
            inserted=inserted,
            updated=updated,
            unchanged=same,
            kept=matched - same - updated - len(not_newer),
            not_newer=not_newer,
        )
