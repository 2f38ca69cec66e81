"""Entry writes and reads. Every statement is scoped by owner; SQL is constant, values are bound."""

from __future__ import annotations

import base64
import binascii
import builtins
import json
import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import numpy as np
import psycopg
from numpy.typing import NDArray
from psycopg import sql
from psycopg.types.json import Jsonb
from psycopg_pool import ConnectionPool

from pgrecall.domain.entries import Entry, EntryChanges, EntryFilters, NewEntry, Page
from pgrecall.errors import InvalidInputError, NotFoundError
from pgrecall.store.entries_sql import (
    SQL_BY_HASH,
    SQL_BY_HASHES,
    SQL_BY_IDEMPOTENCY_KEY,
    SQL_COUNT_BY,
    SQL_GET,
    SQL_IDS_MATCHING,
    SQL_INSERT,
    SQL_LIST,
    SQL_MANY,
    SQL_OWNERS,
    SQL_PENDING,
    SQL_PENDING_COUNT,
    SQL_PENDING_TOTAL,
    SQL_RESTORE,
    SQL_SCHEMA_REVISION,
    SQL_SET_EMBEDDING,
    SQL_SOFT_DELETE,
    SQL_UPDATE,
    SQL_VECTORS,
    SQL_VECTORS_BY_TEXT,
)
from pgrecall.store.filters import compile_filters, filter_counts_statement
from pgrecall.store.scope import owner_transaction


def as_vector(values: Sequence[float] | None) -> NDArray[np.float32] | None:
    """A vector parameter: pgvector's adapter (db.database.register_vector_adapter) sends it binary."""
    return None if values is None else np.asarray(values, dtype=np.float32)


def encode_cursor(entry: Entry) -> str:
    """Opaque cursor after `entry` in list order."""
    raw = json.dumps([entry.created_at.isoformat(), str(entry.id)]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[datetime, uuid.UUID]:
    """Inverse of encode_cursor; InvalidInputError on anything else."""
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        ts, ident = json.loads(base64.urlsafe_b64decode(padded.encode()))
        return datetime.fromisoformat(ts), uuid.UUID(ident)
    except (ValueError, TypeError, binascii.Error, UnicodeDecodeError, RecursionError):
        raise InvalidInputError(
            "cursor", "not a cursor returned by list_entries; omit it to start over"
        ) from None


def list_statement(
    owner: str, filters: EntryFilters, *, limit: int, cursor: str | None = None
) -> tuple[sql.Composed, dict[str, Any]]:
    """The list statement for these filters and its parameters: up to `limit` rows after `cursor`."""
    cursor_ts, cursor_id = decode_cursor(cursor) if cursor else (None, None)
    fragments, params = compile_filters(filters)
    params |= {
        "owner": owner,
        "include_deleted": filters.include_deleted,
        "cursor_ts": cursor_ts,
        "cursor_id": cursor_id,
        "limit": limit,
    }
    return sql.SQL(SQL_LIST).format(filters=fragments), params


def _entry(row: dict[str, Any]) -> Entry:
    return Entry(**row)


def insert_params(owner: str, new: NewEntry) -> dict[str, Any]:
    vector = as_vector(new.embedding)
    return {
        "owner": owner,
        "kind": new.kind,
        "source": new.source,
        "title": new.title,
        "body": new.body,
        "tags": list(new.tags),
        "metadata": Jsonb(new.metadata),
        "language": new.language,
        "content_hash": new.content_hash,
        "embedding": vector,
        "embedding_model": new.embedding_model if vector is not None else None,
        "embedding_dim": len(new.embedding) if new.embedding is not None else None,
        "idempotency_key": new.idempotency_key,
        "detected_language": new.detected_language,
        "language_how": new.language_how,
        "language_confidence": new.language_confidence,
        "expires_at": new.expires_at,
        "supersedes": new.supersedes,
        "document_id": new.document_id,
        "ordinal": new.ordinal,
        "section_path": list(new.section_path) if new.section_path is not None else None,
    }


def _tail(digits: str) -> str:
    """The id text that ends with these hex digits (dashes where a UUID has them), reversed."""
    # The canonical text puts dashes before the last 12, 16, 20 and 24 digits.
    dashes = sum(1 for boundary in (12, 16, 20, 24) if boundary < len(digits))
    text = str(uuid.UUID(digits.rjust(32, "0")))
    return text[-(len(digits) + dashes) :][::-1]


class EntryStore:
    """Entry persistence over a psycopg connection pool."""

    def __init__(self, pool: ConnectionPool[psycopg.Connection[dict[str, Any]]]) -> None:
        self.pool = pool

    def create(self, owner: str, new: NewEntry) -> tuple[Entry, bool]:
        """Insert one entry; returns (entry, created). With an idempotency key already used, the
        earlier entry and False."""
        params = insert_params(owner, new)
        with owner_transaction(self.pool, owner) as conn:
            row = conn.execute(SQL_INSERT, params).fetchone()
            if row is None:
                key = {"owner": owner, "idempotency_key": new.idempotency_key}
                row = conn.execute(SQL_BY_IDEMPOTENCY_KEY, key).fetchone()
                assert row is not None
                return _entry(row), False
        return _entry(row), True

    def insert_many(self, owner: str, entries: Sequence[NewEntry]) -> builtins.list[Entry]:
        """Insert entries without idempotency keys in one transaction (one pipelined batch), in order."""
        if any(new.idempotency_key is not None for new in entries):
            raise ValueError("insert_many takes entries without idempotency keys; use create")
        stored: builtins.list[Entry] = []
        with owner_transaction(self.pool, owner) as conn, conn.cursor() as cur:
            cur.executemany(SQL_INSERT, [insert_params(owner, new) for new in entries], returning=True)
            for _ in entries:
                row = cur.fetchone()
                assert row is not None
                stored.append(_entry(row))
                cur.nextset()
        return stored

    def by_idempotency_key(self, owner: str, key: str) -> Entry | None:
        """The entry an earlier call stored under this idempotency key, deleted or not."""
        with owner_transaction(self.pool, owner) as conn:
            row = conn.execute(SQL_BY_IDEMPOTENCY_KEY, {"owner": owner, "idempotency_key": key}).fetchone()
        return _entry(row) if row is not None else None

    def by_hash(self, owner: str, content_hash: str, limit: int = 3) -> builtins.list[Entry]:
        """Live entries with exactly this content hash, oldest first."""
        params = {"owner": owner, "content_hash": content_hash, "limit": limit}
        with owner_transaction(self.pool, owner) as conn:
            return [_entry(r) for r in conn.execute(SQL_BY_HASH, params).fetchall()]

    def get(self, owner: str, entry_id: uuid.UUID, *, include_deleted: bool = False) -> Entry:
        """The entry, or NotFoundError (also for a deleted one unless include_deleted)."""
        with owner_transaction(self.pool, owner) as conn:
            row = conn.execute(SQL_GET, {"owner": owner, "id": entry_id}).fetchone()
        if row is None or (row["deleted_at"] is not None and not include_deleted):
            raise NotFoundError(f"id: no entry {entry_id}" + ("" if row is None else " (it is deleted)"))
        return _entry(row)

    def ids_matching(
        self, owner: str, digits: str, *, include_deleted: bool, limit: int
    ) -> builtins.list[uuid.UUID]:
        """Up to `limit` ids of this owner whose hex digits start or end with `digits`, in id order."""
        params = {
            "owner": owner,
            "low": uuid.UUID(digits.ljust(32, "0")),
            "high": uuid.UUID(digits.ljust(32, "f")),
            "tail": _tail(digits),
            "tail_end": _tail(digits) + "~",
            "include_deleted": include_deleted,
            "limit": limit,
        }
        with owner_transaction(self.pool, owner) as conn:
            return [r["id"] for r in conn.execute(SQL_IDS_MATCHING, params).fetchall()]

    def find(self, owner: str, entry_id: uuid.UUID) -> Entry | None:
        """The entry, deleted or not, or None."""
        with owner_transaction(self.pool, owner) as conn:
            row = conn.execute(SQL_GET, {"owner": owner, "id": entry_id}).fetchone()
        return _entry(row) if row is not None else None

    def update(
        self, owner: str, entry_id: uuid.UUID, changes: EntryChanges, *, expected_version: int | None = None
    ) -> Entry:
        """Apply a partial update, bump version; NotFoundError if absent, deleted or at another version."""
        vector = as_vector(changes.embedding)
        params = {
            "owner": owner,
            "id": entry_id,
            "kind": changes.kind,
            "set_source": changes.set_source,
            "source": changes.source,
            "set_title": changes.set_title,
            "title": changes.title,
            "body": changes.body,
            "tags": list(changes.tags) if changes.tags is not None else None,
            "metadata": Jsonb(changes.metadata) if changes.metadata is not None else None,
            "language": changes.language,
            "detected_language": changes.detected_language,
            "language_how": changes.language_how,
            "language_confidence": changes.language_confidence,
            "content_hash": changes.content_hash,
            "reset_embedding": changes.reset_embedding,
            "embedding": vector,
            "embedding_model": changes.embedding_model if vector is not None else None,
            "embedding_dim": len(changes.embedding) if changes.embedding is not None else None,
            "expected_version": expected_version,
            "set_expires_at": changes.set_expires_at,
            "expires_at": changes.expires_at,
            "set_supersedes": changes.set_supersedes,
            "supersedes": changes.supersedes,
        }
        with owner_transaction(self.pool, owner) as conn:
            row = conn.execute(SQL_UPDATE, params).fetchone()
            if row is None:
                current = conn.execute(SQL_GET, {"owner": owner, "id": entry_id}).fetchone()
        if row is None:
            if current is None:
                raise NotFoundError(f"id: no entry {entry_id}")
            if current["deleted_at"] is not None:
                raise NotFoundError(f"id: entry {entry_id} is deleted; restore it first")
            raise InvalidInputError(
                "expected_version",
                f"entry {entry_id} is at version {current['version']}, not {expected_version}",
            )
        return _entry(row)

    def soft_delete(self, owner: str, entry_id: uuid.UUID) -> Entry:
        """Mark deleted (restorable); NotFoundError if absent or already deleted (saying which)."""
        with owner_transaction(self.pool, owner) as conn:
            row = conn.execute(SQL_SOFT_DELETE, {"owner": owner, "id": entry_id}).fetchone()
            if row is None:
                gone = conn.execute(SQL_GET, {"owner": owner, "id": entry_id}).fetchone()
        if row is None:
            if gone is not None:
                raise NotFoundError(
                    f"id: no live entry {entry_id}: it is already deleted (restore brings it back)"
                )
            raise NotFoundError(f"id: no live entry {entry_id}")
        return _entry(row)

    def restore(self, owner: str, entry_id: uuid.UUID) -> Entry:
        """Undo a soft delete; NotFoundError if absent or not deleted."""
        with owner_transaction(self.pool, owner) as conn:
            row = conn.execute(SQL_RESTORE, {"owner": owner, "id": entry_id}).fetchone()
        if row is None:
            raise NotFoundError(f"id: no deleted entry {entry_id}")
        return _entry(row)

    def list(self, owner: str, filters: EntryFilters, *, limit: int, cursor: str | None = None) -> Page:
        """One page, newest first, with the cursor for the next page."""
        statement, params = list_statement(owner, filters, limit=limit + 1, cursor=cursor)
        with owner_transaction(self.pool, owner) as conn:
            rows = conn.execute(statement, params).fetchall()
        entries = [_entry(r) for r in rows[:limit]]
        next_cursor = encode_cursor(entries[-1]) if len(rows) > limit and entries else None
        return Page(entries, next_cursor)

    def set_embedding(
        self, owner: str, entry_id: uuid.UUID, content_hash: str, vector: Sequence[float], model: str
    ) -> bool:
        """Store a vector unless the text changed since it was computed; True if stored."""
        params = {
            "owner": owner,
            "id": entry_id,
            "content_hash": content_hash,
            "embedding": as_vector(vector),
            "model": model,
            "dim": len(vector),
        }
        with owner_transaction(self.pool, owner) as conn:
            cur = conn.execute(SQL_SET_EMBEDDING, params)
            return cur.rowcount == 1

    def pending(
        self, owner: str, model: str, limit: int, after: uuid.UUID | None = None
    ) -> builtins.list[dict[str, Any]]:
        """Live entries without a vector of `model` (id, title, body, content_hash), by id after `after`."""
        params = {"owner": owner, "model": model, "limit": limit, "after": after}
        with owner_transaction(self.pool, owner) as conn:
            return conn.execute(SQL_PENDING, params).fetchall()

    def pending_count(self, owner: str, model: str) -> int:
        """How many live entries still need a vector of `model`."""
        with owner_transaction(self.pool, owner) as conn:
            row = conn.execute(SQL_PENDING_COUNT, {"owner": owner, "model": model}).fetchone()
        return int(row["n"]) if row else 0

    def owners(self) -> builtins.list[str]:
        """Every owner with at least one entry (operator commands walk them one by one)."""
        with self.pool.connection() as conn:
            return [r["owner"] for r in conn.execute(SQL_OWNERS).fetchall()]

    def pending_total(self, model: str) -> int:
        """Pending vectors of `model` across all owners (operators' progress bars)."""
        with self.pool.connection() as conn:
            row = conn.execute(SQL_PENDING_TOTAL, {"model": model}).fetchone()
        return int(row["n"]) if row else 0

    def counts(self, owner: str) -> dict[str, dict[str, int]]:
        """Live entries by language, kind, vector model and unstemmable language; live/deleted totals."""
        dimensions = ("language", "kind", "state", "vector_model", "unsupported")
        out: dict[str, dict[str, int]] = {dimension: {} for dimension in dimensions}
        with owner_transaction(self.pool, owner) as conn:
            for row in conn.execute(SQL_COUNT_BY, {"owner": owner}).fetchall():
                out[row["dimension"]][row["value"]] = int(row["n"])
        return out

    def many(self, owner: str, ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, Entry]:
        """Entries by id (deleted ones included), keyed by id."""
        with owner_transaction(self.pool, owner) as conn:
            rows = conn.execute(SQL_MANY, {"owner": owner, "ids": list(ids)}).fetchall()
        return {r["id"]: _entry(r) for r in rows}

    def filter_counts(self, owner: str, filters: EntryFilters) -> dict[str, int]:
        """Current live entries (`current`), those all filters keep (`all_filters`), and each filter's own."""
        statement, params = filter_counts_statement(filters)
        with owner_transaction(self.pool, owner) as conn:
            row = conn.execute(statement, {**params, "owner": owner}).fetchone()
        return {key: int(value) for key, value in (row or {}).items()}

    def by_hashes(self, owner: str, hashes: Sequence[str]) -> dict[str, Entry]:
        """For each hash with a live entry, the oldest such entry."""
        with owner_transaction(self.pool, owner) as conn:
            rows = conn.execute(SQL_BY_HASHES, {"owner": owner, "hashes": list(hashes)}).fetchall()
        return {r["content_hash"]: _entry(r) for r in rows}

    def vectors(
        self, owner: str, ids: Sequence[uuid.UUID], model: str
    ) -> dict[uuid.UUID, builtins.list[float]]:
        """Stored vectors of `model` for these entries (for MMR inside the process)."""
        with owner_transaction(self.pool, owner) as conn:
            params = {"owner": owner, "ids": list(ids), "model": model}
            rows = conn.execute(SQL_VECTORS, params, binary=True).fetchall()
        return {r["id"]: r["embedding"].tolist() for r in rows}

    def vectors_by_text(
        self, owner: str, hashes: Sequence[str], model: str
    ) -> dict[tuple[str, str | None], builtins.list[float]]:
        """Stored vectors of `model` by (content hash, title): what an entry of that text embeds."""
        with owner_transaction(self.pool, owner) as conn:
            params = {"owner": owner, "hashes": list(hashes), "model": model}
            rows = conn.execute(SQL_VECTORS_BY_TEXT, params, binary=True).fetchall()
        return {(r["content_hash"], r["title"]): r["embedding"].tolist() for r in rows}

    def schema_revision(self) -> str | None:
        """The Alembic revision of the database (read through the pool, no extra connection)."""
        with self.pool.connection() as conn:
            row = conn.execute(SQL_SCHEMA_REVISION).fetchone()
        return str(row["version_num"]) if row is not None else None
