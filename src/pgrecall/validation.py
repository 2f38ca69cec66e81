"""Input rules shared by every entry point; each failure names the field and the rule."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from pgrecall.content import normalize_text
from pgrecall.errors import InvalidInputError

MAX_TITLE_CHARS = 500
MAX_SOURCE_CHARS = 2000
MAX_TAGS = 64
MAX_TAG_CHARS = 100
MAX_METADATA_BYTES = 65_536
MAX_METADATA_DEPTH = 10
# PostgreSQL `integer`: a larger expected_version could never match and overflows the cast.
MAX_VERSION = 2**31 - 1
# list_entries cursors are ~100 characters; anything far longer is not one of ours, and
# decoding it first would hand attacker-sized (or attacker-nested) JSON to the parser.
MAX_CURSOR_CHARS = 512
_KIND = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$")


def _no_nul(field: str, value: str) -> None:
    # PostgreSQL text cannot hold U+0000; refuse it here rather than fail mid-write.
    if "\x00" in value:
        raise InvalidInputError(field, "must not contain NUL (U+0000) characters")


def check_body(value: str, max_chars: int, field: str = "text") -> str:
    """The entry text as given; refused when empty, over `max_chars` or holding NUL."""
    if not isinstance(value, str):
        raise InvalidInputError(field, "must be a string")
    _no_nul(field, value)
    normalized = normalize_text(value)
    if not normalized:
        raise InvalidInputError(field, "must not be empty or only whitespace")
    if len(normalized) > max_chars:
        raise InvalidInputError(field, f"is {len(normalized)} characters; the limit is {max_chars}")
    return value


def check_title(value: str | None) -> str | None:
    """Title trimmed; empty becomes None."""
    if value is None:
        return None
    _no_nul("title", value)
    value = normalize_text(value)
    if len(value) > MAX_TITLE_CHARS:
        raise InvalidInputError("title", f"is {len(value)} characters; the limit is {MAX_TITLE_CHARS}")
    return value or None


def check_source(value: str | None) -> str | None:
    """Source (URL, path, conversation id…) trimmed; empty becomes None."""
    if value is None:
        return None
    _no_nul("source", value)
    value = value.strip()
    if len(value) > MAX_SOURCE_CHARS:
        raise InvalidInputError("source", f"is {len(value)} characters; the limit is {MAX_SOURCE_CHARS}")
    return value or None


def check_kind(value: str | None, default: str = "note") -> str:
    """A short token such as note, fact, decision, doc."""
    if value is None:
        return default
    # fullmatch, not match: `$` also matches before a trailing newline ("note\n").
    if not isinstance(value, str) or not _KIND.fullmatch(value):
        raise InvalidInputError(
            "kind", "must be 1-64 characters of letters, digits, '_', '.', ':' or '-', starting alphanumeric"
        )
    return value


def check_tags(values: Sequence[str] | None, field: str = "tags") -> list[str]:
    """Tags trimmed, de-duplicated in order; each 1-100 characters, at most 64."""
    if values is None:
        return []
    if isinstance(values, str):
        raise InvalidInputError(field, "must be a list of strings, not a string")
    out: list[str] = []
    for raw in values:
        if not isinstance(raw, str):
            raise InvalidInputError(field, "every tag must be a string")
        _no_nul(field, raw)
        tag = normalize_text(raw)
        if not tag:
            raise InvalidInputError(field, "tags must not be empty")
        if len(tag) > MAX_TAG_CHARS:
            raise InvalidInputError(field, f"a tag is {len(tag)} characters; the limit is {MAX_TAG_CHARS}")
        if tag not in out:
            out.append(tag)
    if len(out) > MAX_TAGS:
        raise InvalidInputError(field, f"{len(out)} tags; the limit is {MAX_TAGS}")
    return out


def _too_deep(value: Any, limit: int) -> bool:
    """True when containers nest deeper than `limit` levels (a scalar is level 1).

    Iterative, and it stops descending past the limit: a hostile document thousands of
    levels deep must be refused, not overflow the Python stack.
    """
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, level = stack.pop()
        if level > limit:
            return True
        if isinstance(node, dict):
            stack.extend((v, level + 1) for v in node.values())
        elif isinstance(node, list):
            stack.extend((v, level + 1) for v in node)
    return False


def check_metadata(value: dict[str, Any] | None) -> dict[str, Any]:
    """A JSON object of at most 64 KiB and 10 levels, without NUL characters."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InvalidInputError("metadata", "must be a JSON object")
    if _too_deep(value, MAX_METADATA_DEPTH):
        raise InvalidInputError("metadata", f"is nested deeper than {MAX_METADATA_DEPTH} levels")
    try:
        encoded = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError("metadata", f"must be plain JSON (no NaN/Infinity): {exc}") from None
    if "\\u0000" in encoded or "\x00" in encoded:
        raise InvalidInputError("metadata", "must not contain NUL (U+0000) characters")
    size = len(encoded.encode("utf-8"))
    if size > MAX_METADATA_BYTES:
        raise InvalidInputError("metadata", f"is {size} bytes as JSON; the limit is {MAX_METADATA_BYTES}")
    return value


def check_limit(value: int, field: str, maximum: int, minimum: int = 1) -> int:
    """An integer within [minimum, maximum]."""
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= maximum:
        raise InvalidInputError(field, f"must be an integer from {minimum} to {maximum}, got {value!r}")
    return value


def check_idempotency_key(value: str | None) -> str | None:
    """1-200 printable characters, or None."""
    if value is None:
        return None
    _no_nul("idempotency_key", value)
    key = value.strip()
    if not key or len(key) > 200:
        raise InvalidInputError("idempotency_key", "must be 1-200 characters")
    return key


_OWNER = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@:-]{0,199}$")


def check_owner(value: str) -> str:
    """An owner name: 1-200 characters of letters, digits and _ . @ : -."""
    if not _OWNER.fullmatch(value):
        raise InvalidInputError("owner", "must be 1-200 letters, digits, '_', '.', '@', ':' or '-'")
    return value


def check_cursor(value: str | None) -> str | None:
    """A list_entries cursor: refused early when it cannot be one (too long, NUL); decoded later."""
    if value is None:
        return None
    if len(value) > MAX_CURSOR_CHARS or "\x00" in value:
        raise InvalidInputError("cursor", "not a cursor returned by list_entries; omit it to start over")
    return value


def as_utc(value: datetime | None) -> datetime | None:
    """A timestamp bound; one without an offset is taken as UTC.

    Mixing naive and aware bounds would otherwise fail to compare, and a naive value sent
    to PostgreSQL would be read in the session's time zone.
    """
    if value is None or value.tzinfo is not None:
        return value
    return value.replace(tzinfo=UTC)
