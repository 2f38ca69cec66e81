"""Documents and their chunks' places. Every statement is owner-scoped; SQL is constant, values bound.

A re-ingest runs in one transaction under an advisory lock on (owner, source, version): two
ingests of one source at once run one after the other (the second finds nothing to change), and a
failure leaves no half-written chunks.
"""

from __future__ import annotations

import builtins
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg
from psycopg.types.json import Jsonb
from psycopg_pool import ConnectionPool

from pgrecall.domain.documents import Document, StoredChunk
from pgrecall.domain.entries import Entry, NewEntry
from pgrecall.errors import NotFoundError
from pgrecall.store.current_sql import not_superseded
from pgrecall.store.entries import insert_params
from pgrecall.store.entries_sql import COLUMNS, SQL_INSERT
from pgrecall.store.scope import owner_transaction

DOC_COLUMNS = """
    id, owner, source, title, version_label, format, language::text AS language, metadata, content_hash,
    size_bytes, mtime, chunk_count, created_at, updated_at, deleted_at
"""

SQL_LOCK_SOURCE = """
SELECT pg_advisory_xact_lock(
    hashtextextended(jsonb_build_array(%(owner)s::text, %(source)s::text, %(version)s::text)::text, 36))
"""

SQL_LIVE_BY_SOURCE = f"""
SELECT {DOC_COLUMNS} FROM documents
WHERE owner = %(owner)s AND source = %(source)s AND coalesce(version_label, '') = coalesce(%(version)s, '')
  AND deleted_at IS NULL
"""

SQL_INSERT_DOCUMENT = f"""
INSERT INTO documents (owner, source, title, version_label, format, language, metadata, content_hash,
                       text, size_bytes, mtime)
VALUES (%(owner)s, %(source)s, %(title)s, %(version)s, %(format)s, %(language)s::regconfig, %(metadata)s,
        %(content_hash)s, %(text)s, %(size_bytes)s, %(mtime)s)
RETURNING {DOC_COLUMNS}
"""

SQL_UPDATE_DOCUMENT = f"""
UPDATE documents SET title = %(title)s, format = %(format)s, language = %(language)s::regconfig,
    metadata = %(metadata)s, content_hash = %(content_hash)s, text = %(text)s, size_bytes = %(size_bytes)s,
    mtime = %(mtime)s, updated_at = statement_timestamp()
WHERE owner = %(owner)s AND id = %(id)s
RETURNING {DOC_COLUMNS}
"""

# Live documents of the same text and version under another source: a file moved or renamed.
SQL_SAME_TEXT_ELSEWHERE = f"""
SELECT {DOC_COLUMNS} FROM documents
WHERE owner = %(owner)s AND content_hash = %(content_hash)s AND deleted_at IS NULL
  AND coalesce(version_label, '') = coalesce(%(version)s, '') AND source <> %(source)s
ORDER BY updated_at DESC, id
"""

# The document and every entry of it (current, superseded and removed chunks) take the new source.
SQL_MOVE_DOCUMENT = f"""
WITH chunks AS (
    UPDATE entries SET source = %(source)s, updated_at = statement_timestamp()
    WHERE owner = %(owner)s AND document_id = %(id)s
)
UPDATE documents SET source = %(source)s, updated_at = statement_timestamp()
WHERE owner = %(owner)s AND id = %(id)s
RETURNING {DOC_COLUMNS}
"""

SQL_SET_FINGERPRINT = """
UPDATE documents SET size_bytes = %(size_bytes)s, mtime = %(mtime)s
WHERE owner = %(owner)s AND id = %(id)s
"""

SQL_COUNT_CHUNKS = f"""
UPDATE documents d SET chunk_count = (
    SELECT count(*) FROM entries e
    WHERE e.owner = %(owner)s AND e.document_id = d.id AND e.deleted_at IS NULL AND {not_superseded("e")})
WHERE d.owner = %(owner)s AND d.id = %(id)s
RETURNING {DOC_COLUMNS}
"""

SQL_CURRENT_CHUNKS = f"""
SELECT e.id, e.ordinal, e.content_hash, coalesce(e.section_path, '{{}}') AS section_path, e.tags
FROM entries e
WHERE e.owner = %(owner)s AND e.document_id = %(id)s AND e.deleted_at IS NULL AND {not_superseded("e")}
ORDER BY e.ordinal, e.id
"""

SQL_CHUNK_ENTRIES = f"""
SELECT {COLUMNS} FROM entries e
WHERE e.owner = %(owner)s AND e.document_id = %(id)s AND e.deleted_at IS NULL AND {not_superseded("e")}
ORDER BY e.ordinal, e.id
"""

SQL_CHUNKS_AT = f"""
SELECT {COLUMNS} FROM entries e
WHERE e.owner = %(owner)s AND e.deleted_at IS NULL AND {not_superseded("e")}
  AND (e.document_id, e.ordinal) IN (
      SELECT w.doc, w.n FROM unnest(%(documents)s::uuid[], %(ordinals)s::int[]) AS w(doc, n))
"""

SQL_PLACE_CHUNK = """
UPDATE entries SET ordinal = %(ordinal)s, section_path = %(section_path)s, title = %(title)s,
    tags = %(tags)s
WHERE owner = %(owner)s AND id = %(id)s
"""

SQL_DELETE_CHUNKS = """
UPDATE entries SET deleted_at = statement_timestamp(), updated_at = statement_timestamp()
WHERE owner = %(owner)s AND id = ANY(%(ids)s::uuid[]) AND deleted_at IS NULL
"""

SQL_GET_DOCUMENT = f"SELECT {DOC_COLUMNS} FROM documents WHERE owner = %(owner)s AND id = %(id)s"

# The whole text only where asked for: a listing never carries it.
SQL_DOCUMENT_TEXT = (
    "SELECT text FROM documents WHERE owner = %(owner)s AND id = %(id)s AND deleted_at IS NULL"
)

# A document and its current chunks go together, at one timestamp, so a restore brings back
# exactly the chunks the delete took (not chunks removed earlier by a re-ingest).
SQL_DELETE_DOCUMENT = f"""
WITH doc AS (
    UPDATE documents SET deleted_at = statement_timestamp(), updated_at = statement_timestamp()
    WHERE owner = %(owner)s AND id = %(id)s AND deleted_at IS NULL
    RETURNING {DOC_COLUMNS}
), chunks AS (
    UPDATE entries e SET deleted_at = statement_timestamp(), updated_at = statement_timestamp()
    FROM doc
    WHERE e.owner = %(owner)s AND e.document_id = doc.id AND e.deleted_at IS NULL
)
SELECT * FROM doc
"""

SQL_RESTORE_DOCUMENT = f"""
WITH gone AS (
    SELECT deleted_at FROM documents WHERE owner = %(owner)s AND id = %(id)s AND deleted_at IS NOT NULL
), chunks AS (
    UPDATE entries e SET deleted_at = NULL, updated_at = statement_timestamp()
    FROM gone
    WHERE e.owner = %(owner)s AND e.document_id = %(id)s AND e.deleted_at = gone.deleted_at
)
UPDATE documents SET deleted_at = NULL, updated_at = statement_timestamp()
WHERE owner = %(owner)s AND id = %(id)s AND deleted_at IS NOT NULL
RETURNING {DOC_COLUMNS}
"""

SQL_LIST_DOCUMENTS = f"""
SELECT {DOC_COLUMNS} FROM documents
WHERE owner = %(owner)s
  AND (%(include_deleted)s OR deleted_at IS NULL)
  AND (%(source_prefix)s::text IS NULL OR starts_with(source, %(source_prefix)s))
  AND (%(version)s::text IS NULL OR version_label = %(version)s)
ORDER BY source, coalesce(version_label, ''), id
LIMIT %(limit)s OFFSET %(offset)s
"""

SQL_LIVE_SOURCES_UNDER = f"""
SELECT {DOC_COLUMNS} FROM documents
WHERE owner = %(owner)s AND deleted_at IS NULL AND starts_with(source, %(prefix)s)
"""

SQL_DOCUMENTS_BY_IDS = (
    f"SELECT {DOC_COLUMNS} FROM documents WHERE owner = %(owner)s AND id = ANY(%(ids)s::uuid[])"
)


def _document(row: dict[str, Any]) -> Document:
    return Document(**row)


@dataclass(frozen=True)
class DocumentDraft:
    """A document's own fields as a re-ingest writes them."""

    source: str
    title: str | None
    version: str | None
    format: str
    language: str
    metadata: dict[str, Any]
    content_hash: str
    text: str  # the whole normalized text; every chunk is a span of it
    size_bytes: int | None
    mtime: datetime | None


class DocumentWriter:
    """One re-ingest of one source, inside its transaction (see DocumentStore.writing)."""

    def __init__(self, conn: psycopg.Connection[dict[str, Any]], owner: str) -> None:
        self.conn = conn
        self.owner = owner

    def live(self, source: str, version: str | None) -> Document | None:
        """The live document of this source and version, if any."""
        row = self.conn.execute(
            SQL_LIVE_BY_SOURCE, {"owner": self.owner, "source": source, "version": version}
        ).fetchone()
        return _document(row) if row is not None else None

    def take_over(self, draft: DocumentDraft, gone: Callable[[str], bool]) -> tuple[Document, str] | None:
        """Move to draft's source the live document of the same text and version whose source is gone.

        A file moved or renamed keeps its document: ids, chunk hashes and citations stay. The moved
        document and its former source; None when there is no such document (or its source, as
        `gone` judges it, is still there: a copy).
        """
        params = {
            "owner": self.owner,
            "content_hash": draft.content_hash,
            "version": draft.version,
            "source": draft.source,
        }
        for row in self.conn.execute(SQL_SAME_TEXT_ELSEWHERE, params).fetchall():
            if gone(row["source"]):
                lock = {"owner": self.owner, "source": row["source"], "version": draft.version}
                self.conn.execute(SQL_LOCK_SOURCE, lock)
                moved = self.conn.execute(
                    SQL_MOVE_DOCUMENT, {"owner": self.owner, "id": row["id"], "source": draft.source}
                ).fetchone()
                assert moved is not None
                return _document(moved), str(row["source"])
        return None

    def save(self, document_id: uuid.UUID | None, draft: DocumentDraft) -> Document:
        """Insert the document, or update the one with this id."""
        params = {
            "owner": self.owner,
            "id": document_id,
            "source": draft.source,
            "title": draft.title,
            "version": draft.version,
            "format": draft.format,
            "language": draft.language,
            "metadata": Jsonb(draft.metadata),
            "content_hash": draft.content_hash,
            "text": draft.text,
            "size_bytes": draft.size_bytes,
            "mtime": draft.mtime,
        }
        row = self.conn.execute(SQL_INSERT_DOCUMENT if document_id is None else SQL_UPDATE_DOCUMENT, params)
        found = row.fetchone()
        assert found is not None
        return _document(found)

    def set_fingerprint(self, document_id: uuid.UUID, size_bytes: int | None, mtime: datetime | None) -> None:
        """Record the file's size and mtime of an unchanged document (skipped faster next time)."""
        params = {"owner": self.owner, "id": document_id, "size_bytes": size_bytes, "mtime": mtime}
        self.conn.execute(SQL_SET_FINGERPRINT, params)

    def current_chunks(self, document_id: uuid.UUID) -> list[StoredChunk]:
        """The document's live, not superseded chunks in order."""
        rows = self.conn.execute(SQL_CURRENT_CHUNKS, {"owner": self.owner, "id": document_id}).fetchall()
        return [
            StoredChunk(r["id"], r["ordinal"], r["content_hash"], tuple(r["section_path"]), tuple(r["tags"]))
            for r in rows
        ]

    def place(
        self,
        chunk_id: uuid.UUID,
        ordinal: int,
        section_path: Sequence[str],
        title: str | None,
        tags: Sequence[str],
    ) -> None:
        """Move a kept chunk to its new place, under the document's title and tags."""
        params = {
            "owner": self.owner,
            "id": chunk_id,
            "ordinal": ordinal,
            "section_path": list(section_path),
            "title": title,
            "tags": list(tags),
        }
        self.conn.execute(SQL_PLACE_CHUNK, params)

    def insert(self, chunks: Sequence[NewEntry]) -> builtins.list[Entry]:
        """Insert new chunks (one pipelined batch), in order."""
        stored: builtins.list[Entry] = []
        if not chunks:
            return stored
        with self.conn.cursor() as cur:
            cur.executemany(SQL_INSERT, [insert_params(self.owner, new) for new in chunks], returning=True)
            for _ in chunks:
                row = cur.fetchone()
                assert row is not None
                stored.append(Entry(**row))
                cur.nextset()
        return stored

    def delete_chunks(self, ids: Sequence[uuid.UUID]) -> None:
        """Soft-delete chunks a re-ingest removed (restorable, like any entry)."""
        if ids:
            self.conn.execute(SQL_DELETE_CHUNKS, {"owner": self.owner, "ids": list(ids)})

    def recount(self, document_id: uuid.UUID) -> Document:
        """Store the document's current chunk count and return it."""
        row = self.conn.execute(SQL_COUNT_CHUNKS, {"owner": self.owner, "id": document_id}).fetchone()
        assert row is not None
        return _document(row)


class DocumentStore:
    """Document persistence over a psycopg connection pool."""

    def __init__(self, pool: ConnectionPool[psycopg.Connection[dict[str, Any]]]) -> None:
        self.pool = pool

    @contextmanager
    def writing(self, owner: str, source: str, version: str | None) -> Iterator[DocumentWriter]:
        """One transaction holding the source's lock: committed at the end, rolled back on error."""
        with owner_transaction(self.pool, owner) as conn:
            conn.execute(SQL_LOCK_SOURCE, {"owner": owner, "source": source, "version": version})
            yield DocumentWriter(conn, owner)

    def live(self, owner: str, source: str, version: str | None) -> tuple[Document | None, list[StoredChunk]]:
        """The live document of a source and version and its current chunks (a plain read, no lock)."""
        with owner_transaction(self.pool, owner) as conn:
            reader = DocumentWriter(conn, owner)
            document = reader.live(source, version)
            return document, reader.current_chunks(document.id) if document is not None else []

    def get(self, owner: str, document_id: uuid.UUID, *, include_deleted: bool = False) -> Document:
        """One document by id."""
        with owner_transaction(self.pool, owner) as conn:
            row = conn.execute(SQL_GET_DOCUMENT, {"owner": owner, "id": document_id}).fetchone()
        if row is None or (row["deleted_at"] is not None and not include_deleted):
            raise NotFoundError(f"id: no document {document_id}")
        return _document(row)

    def text(self, owner: str, document_id: uuid.UUID) -> str:
        """A live document's whole normalized text."""
        with owner_transaction(self.pool, owner) as conn:
            row = conn.execute(SQL_DOCUMENT_TEXT, {"owner": owner, "id": document_id}).fetchone()
        if row is None:
            raise NotFoundError(f"id: no document {document_id}")
        return str(row["text"])

    def chunks(self, owner: str, document_id: uuid.UUID) -> builtins.list[Entry]:
        """The document's current chunks in document order."""
        with owner_transaction(self.pool, owner) as conn:
            rows = conn.execute(SQL_CHUNK_ENTRIES, {"owner": owner, "id": document_id}).fetchall()
        return [Entry(**r) for r in rows]

    def chunks_at(
        self, owner: str, places: Sequence[tuple[uuid.UUID, int]]
    ) -> dict[tuple[uuid.UUID, int], Entry]:
        """The current chunks at these (document, ordinal) places."""
        if not places:
            return {}
        params = {"owner": owner, "documents": [d for d, _ in places], "ordinals": [n for _, n in places]}
        with owner_transaction(self.pool, owner) as conn:
            rows = conn.execute(SQL_CHUNKS_AT, params).fetchall()
        return {(r["document_id"], r["ordinal"]): Entry(**r) for r in rows}

    def by_ids(self, owner: str, ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, Document]:
        """Documents by id (deleted ones too)."""
        if not ids:
            return {}
        with owner_transaction(self.pool, owner) as conn:
            rows = conn.execute(SQL_DOCUMENTS_BY_IDS, {"owner": owner, "ids": list(set(ids))}).fetchall()
        return {r["id"]: _document(r) for r in rows}

    def list(
        self,
        owner: str,
        *,
        source_prefix: str | None = None,
        version: str | None = None,
        include_deleted: bool = False,
        limit: int = 50,
        offset: int = 0,
    ) -> builtins.list[Document]:
        """Documents by source then version."""
        params = {
            "owner": owner,
            "source_prefix": source_prefix,
            "version": version,
            "include_deleted": include_deleted,
            "limit": limit,
            "offset": offset,
        }
        with owner_transaction(self.pool, owner) as conn:
            rows = conn.execute(SQL_LIST_DOCUMENTS, params).fetchall()
        return [_document(r) for r in rows]

    def live_under(self, owner: str, prefix: str) -> builtins.list[Document]:
        """Live documents whose source starts with `prefix` (a folder's files, for its sync)."""
        with owner_transaction(self.pool, owner) as conn:
            rows = conn.execute(SQL_LIVE_SOURCES_UNDER, {"owner": owner, "prefix": prefix}).fetchall()
        return [_document(r) for r in rows]

    def delete(self, owner: str, document_id: uuid.UUID) -> Document:
        """Soft-delete a document and its current chunks (restorable)."""
        with owner_transaction(self.pool, owner) as conn:
            row = conn.execute(SQL_DELETE_DOCUMENT, {"owner": owner, "id": document_id}).fetchone()
            if row is None:
                found = conn.execute(SQL_GET_DOCUMENT, {"owner": owner, "id": document_id}).fetchone()
                if found is None:
                    raise NotFoundError(f"id: no document {document_id}")
                return _document(found)  # already deleted: nothing to do
        return _document(row)

    def restore(self, owner: str, document_id: uuid.UUID) -> Document:
        """Undo a document's soft delete, with the chunks it took."""
        with owner_transaction(self.pool, owner) as conn:
            row = conn.execute(SQL_RESTORE_DOCUMENT, {"owner": owner, "id": document_id}).fetchone()
            if row is None:
                found = conn.execute(SQL_GET_DOCUMENT, {"owner": owner, "id": document_id}).fetchone()
                if found is None:
                    raise NotFoundError(f"id: no document {document_id}")
                return _document(found)
        return _document(row)
