"""Export entries as JSON lines: one entry per line, every field, byte-stable across stores.

Byte stability (export → import into an empty store → export gives the same bytes) rests on:
owners in code point order, then (created_at, id) per owner; keys in a fixed order and
metadata keys sorted; timestamps in UTC with microseconds (PostgreSQL's precision);
`language` as the regconfig name, which is lossless ('simple' has no ISO code, and two
codes map to 'norwegian'); vectors as the numbers pgvector prints.

Each owner's documents come first, one `{"type": "document", …}` line each with its whole text,
then the entries (a document's chunks with `document_id`, `ordinal` and `section_path`), then the
links, one `{"type": "link", …}` line each (services/transfer/links.py).

Not exported: `tsv` (generated from the row) and idempotency keys (they guard a client's
retries of one request, not the entry; an import leaves a stored key as it is).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TextIO

import psycopg

from pgrecall.store.transfer import TransferStore
from pgrecall.store.transfer_links import export_links


@dataclass
class Exported:
    """What an export wrote."""

    entries: int = 0
    documents: int = 0


def utc_text(value: datetime | None) -> str | None:
    """A timestamp as ISO 8601 in UTC with microseconds ('2026-01-02T03:04:05.000006+00:00')."""
    if value is None:
        return None
    return value.astimezone(UTC).isoformat(timespec="microseconds")


def sorted_json(value: Any) -> Any:
    """The same JSON value with every object's keys sorted (jsonb's own key order is by length)."""
    if isinstance(value, dict):
        return {key: sorted_json(value[key]) for key in sorted(value)}
    if isinstance(value, list):
        return [sorted_json(item) for item in value]
    return value


def dump_line(data: dict[str, Any]) -> str:
    """Compact JSON, non-ASCII kept as is (the file is UTF-8), no NaN."""
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def entry_record(row: dict[str, Any], *, with_vectors: bool) -> dict[str, Any]:
    """The export form of one stored row (as read by TransferStore.export_rows)."""
    record: dict[str, Any] = {
        "id": str(row["id"]),
        "owner": row["owner"],
        "kind": row["kind"],
        "source": row["source"],
        "title": row["title"],
        "text": row["body"],
        "tags": list(row["tags"]),
        "metadata": sorted_json(row["metadata"]),
        "language": row["language"],
        # Only when set, so exports of stores without such entries keep their bytes.
        **({"detected_language": row["detected_language"]} if row["detected_language"] else {}),
        "content_hash": row["content_hash"],
        "version": row["version"],
        "created_at": utc_text(row["created_at"]),
        "updated_at": utc_text(row["updated_at"]),
        "deleted_at": utc_text(row["deleted_at"]),
        **({"expires_at": utc_text(row["expires_at"])} if row["expires_at"] else {}),
        **({"supersedes": str(row["supersedes"])} if row["supersedes"] else {}),
        **(
            {
                "document_id": str(row["document_id"]),
                "ordinal": row["ordinal"],
                "section_path": list(row["section_path"] or []),
            }
            if row["document_id"]
            else {}
        ),
    }
    if with_vectors:
        record["embedding_model"] = row["embedding_model"]
        record["embedding_dim"] = row["embedding_dim"]
        # pgvector prints the shortest decimal of each float4; parsed and re-dumped it stays the same.
        record["embedding"] = json.loads(row["embedding"]) if row["embedding"] is not None else None
    return record


def document_record(row: dict[str, Any]) -> dict[str, Any]:
    """The export form of one stored document (as read by TransferStore.export_documents)."""
    return {
        "type": "document",
        "id": str(row["id"]),
        "owner": row["owner"],
        "source": row["source"],
        "title": row["title"],
        "version_label": row["version_label"],
        "format": row["format"],
        "language": row["language"],
        "metadata": sorted_json(row["metadata"]),
        "content_hash": row["content_hash"],
        "text": row["text"],
        "size_bytes": row["size_bytes"],
        "mtime": utc_text(row["mtime"]),
        "chunk_count": row["chunk_count"],
        "created_at": utc_text(row["created_at"]),
        "updated_at": utc_text(row["updated_at"]),
        "deleted_at": utc_text(row["deleted_at"]),
    }


def link_records(conn: psycopg.Connection[dict[str, Any]], owner: str) -> list[dict[str, Any]]:
    """The export lines of `owner`'s links (keys in a fixed order, the note only when set)."""
    return [
        {
            "type": "link",
            "owner": owner,
            "from_id": str(row["from_id"]),
            "relation": row["relation"],
            "to_id": str(row["to_id"]),
            **({"note": row["note"]} if row["note"] is not None else {}),
            "created_at": utc_text(row["created_at"]),
        }
        for row in export_links(conn, owner)
    ]


def export_jsonl(
    conn: psycopg.Connection[dict[str, Any]],
    out: TextIO,
    *,
    owner: str | None = None,
    with_vectors: bool = False,
    statement_timeout_ms: int = 30_000,
    on_total: Callable[[int], object] | None = None,
    on_row: Callable[[], object] | None = None,
) -> Exported:
    """Write every owner's documents, entries and links (of `owner` or of all owners) to `out`.

    Runs in one REPEATABLE READ, read-only transaction, so the file is one consistent
    snapshot even while other processes write.
    """
    conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
    conn.read_only = True
    store = TransferStore(conn, statement_timeout_ms)
    if on_total is not None:
        on_total(store.export_count(owner))
    written = Exported()
    for each_owner in store.export_owners(owner):
        for document in store.export_documents(each_owner):
            out.write(dump_line(document_record(document)) + "\n")
            written.documents += 1
        for row in store.export_rows(each_owner, with_vectors=with_vectors):
            out.write(dump_line(entry_record(row, with_vectors=with_vectors)) + "\n")
            written.entries += 1
            if on_row is not None:
                on_row()
        for link in link_records(conn, each_owner):
            out.write(dump_line(link) + "\n")
    conn.commit()
    return written
