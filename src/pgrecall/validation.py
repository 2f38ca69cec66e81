"""Input rules shared by every entry point; each failure names the field and the rule."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from pgrecall.content import normalize_text
from pgrecall.errors import InvalidInputError

MAX_TITLE_CHARS = 500
MAX_SOURCE_CHARS = 2000
MAX_TAGS = 64
MAX_TAG_CHARS = 100
MAX_METADATA_BYTES = 65_536
MAX_METADATA_DEPTH = 10
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
    if not _KIND.match(value):
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


def _depth(value: Any, level: int = 1) -> int:
    if isinstance(value, dict):
        return max([level, *(_depth(v, level + 1) for v in value.values())])
    if isinstance(value, list):
        return max([level, *(_depth(v, level + 1) for v in value)])
    return level


def check_metadata(value: dict[str, Any] | None) -> dict[str, Any]:
    """A JSON object of at most 64 KiB and 10 levels, without NUL characters."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InvalidInputError("metadata", "must be a JSON object")
    if _depth(value) > MAX_METADATA_DEPTH:
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
    if not _OWNER.match(value):
        raise InvalidInputError("owner", "must be 1-200 letters, digits, '_', '.', '@', ':' or '-'")
    return value
