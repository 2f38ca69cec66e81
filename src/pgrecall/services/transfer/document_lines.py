"""The document lines of an export: a `{"type": "document", …}` line, and a chunk's place in one.

A document line carries its whole text and goes in before its chunks (an export writes each owner's
documents first); a chunk line names its document with `document_id`, `ordinal` and `section_path`.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from pgrecall.chunking import FORMATS
from pgrecall.domain.text import content_hash
from pgrecall.domain.validation import (
    MAX_TITLE_CHARS,
    check_metadata,
    check_source,
    check_title,
    check_version,
)
from pgrecall.errors import InvalidInputError
from pgrecall.services.transfer.fields import opt_id, opt_str, timestamp
from pgrecall.store.documents import DocumentDraft
from pgrecall.store.transfer import StagedDocument

DOCUMENT_FIELDS = (
    "type",
    "id",
    "owner",
    "source",
    "title",
    "version_label",
    "format",
    "language",
    "metadata",
    "content_hash",
    "text",
    "size_bytes",
    "mtime",
    "chunk_count",
    "created_at",
    "updated_at",
    "deleted_at",
)
# The opening a document's language is detected on when the line gives none, as on ingest.
_LANGUAGE_SAMPLE_CHARS = 4000


def _count(obj: dict[str, Any], name: str, *, default: int | None = None) -> int | None:
    value = obj.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 2**62:
        raise InvalidInputError(name, f"must be a non-negative integer, got {value!r}")
    return value


def chunk_place(obj: dict[str, Any]) -> tuple[uuid.UUID | None, int | None, list[str] | None]:
    """A chunk's document, ordinal and section path: all given, or none."""
    document_id, ordinal, path = opt_id(obj, "document_id"), _count(obj, "ordinal"), obj.get("section_path")
    if (document_id is None) != (ordinal is None):
        raise InvalidInputError("ordinal", "goes with document_id: give both or neither")
    if document_id is None:
        if path is not None:
            raise InvalidInputError("section_path", "goes only with document_id")
        return None, None, None
    if path is None:
        return document_id, ordinal, []
    if not isinstance(path, list) or not all(
        isinstance(part, str) and len(part) <= MAX_TITLE_CHARS and "\x00" not in part for part in path
    ):
        raise InvalidInputError(
            "section_path", f"must be a list of headings of at most {MAX_TITLE_CHARS} characters"
        )
    return document_id, ordinal, list(path)


def is_document_line(obj: Any) -> bool:
    """True for a `{"type": "document", …}` line."""
    return isinstance(obj, dict) and obj.get("type") == "document"


def parse_document(
    obj: dict[str, Any], owner: str, language_of: Callable[[Any, str], str], max_chars: int
) -> StagedDocument:
    """Validate a document line; `language_of(value, text)` resolves its language as entries' are."""
    unknown = sorted(set(obj) - set(DOCUMENT_FIELDS))
    if unknown:
        raise InvalidInputError(unknown[0], f"unknown field; a document's are {', '.join(DOCUMENT_FIELDS)}")
    ident = opt_id(obj, "id")
    if ident is None:
        raise InvalidInputError("id", "is required for a document")
    source = check_source(opt_str(obj, "source"))
    if source is None:
        raise InvalidInputError("source", "is required for a document")
    text = obj.get("text")
    if not isinstance(text, str) or not text.strip():
        raise InvalidInputError("text", "is required for a document (its whole text)")
    if len(text) > max_chars:
        raise InvalidInputError("text", f"{len(text)} characters exceeds the document limit of {max_chars}")
    digest = content_hash(text)
    if obj.get("content_hash") not in (None, digest):
        raise InvalidInputError("content_hash", f"does not match the text (which hashes to {digest})")
    fmt = opt_str(obj, "format")
    if fmt not in FORMATS:
        raise InvalidInputError("format", f"must be one of {', '.join(FORMATS)}")
    language = language_of(obj.get("language"), text[:_LANGUAGE_SAMPLE_CHARS])
    draft = DocumentDraft(
        source=source,
        title=check_title(opt_str(obj, "title")),
        version=check_version(opt_str(obj, "version_label"), "version_label"),
        format=fmt,
        language=language,
        metadata=check_metadata(obj.get("metadata")),
        content_hash=digest,
        text=text,
        size_bytes=_count(obj, "size_bytes"),
        mtime=timestamp(obj, "mtime"),
    )
    return StagedDocument(
        owner=owner,
        id=ident,
        draft=draft,
        chunk_count=_count(obj, "chunk_count", default=0) or 0,
        created_at=timestamp(obj, "created_at"),
        updated_at=timestamp(obj, "updated_at"),
        deleted_at=timestamp(obj, "deleted_at"),
    )
