"""Input rules and limits shared by every entry point; each failure names the field and the rule.

The limits are the single source: tool descriptions and CLI help are built from them.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

from pgrecall.domain.entries import EntryFilters
from pgrecall.domain.text import normalize_text
from pgrecall.errors import InvalidInputError

if TYPE_CHECKING:
    from pgrecall.domain.language import LanguageCatalog

MAX_TITLE_CHARS = 500
MAX_QUERY_CHARS = 1000
MAX_TOP_K = 20
MAX_LIST_LIMIT = 200
MAX_PINS = 50
MAX_SELECTION_CHARS = 5000
MAX_CITATIONS = 100
MIN_BUDGET, MAX_BUDGET = 50, 100_000
MAX_SECTIONS = 8
MAX_SECTION_CHARS = 200
MAX_IDEMPOTENCY_KEY_CHARS = 200
MAX_SOURCE_CHARS = 2000
MAX_VERSION_LABEL_CHARS = 100  # a document's version label
MAX_TAGS = 64
MAX_TAG_CHARS = 100
MAX_METADATA_BYTES = 65_536
MAX_METADATA_DEPTH = 10
# Each value past the first takes at least two bytes of JSON ("[0]", "0, "), so a document with
# more values than this is over MAX_METADATA_BYTES whatever it holds.
MAX_METADATA_NODES = MAX_METADATA_BYTES // 2 + 1
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


def check_source(value: str | None, field: str = "source") -> str | None:
    """Source (URL, path, conversation id…) trimmed; empty becomes None."""
    if value is None:
        return None
    _no_nul(field, value)
    value = value.strip()
    if len(value) > MAX_SOURCE_CHARS:
        raise InvalidInputError(field, f"is {len(value)} characters; the limit is {MAX_SOURCE_CHARS}")
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


def _check_count(values: object, field: str, limit: int, noun: str) -> int:
    """The number of items sent, refused over `limit` before any item is looked at.

    Counted as sent, not after removing repeats: repeats can only shrink a list, and a list of
    40 000 items must cost its length, not 40 000 normalisations (or 40 000² comparisons).
    """
    try:
        count = len(values)  # type: ignore[arg-type]
    except TypeError:
        raise InvalidInputError(field, f"must be a list of {noun}") from None
    if count > limit:
        raise InvalidInputError(field, f"{count} {noun}; the limit is {limit}")
    return count


def check_tags(values: Sequence[str] | None, field: str = "tags") -> list[str]:
    """Tags trimmed, de-duplicated in order; each 1-100 characters, at most 64 as sent."""
    if values is None:
        return []
    if isinstance(values, str):
        raise InvalidInputError(field, "must be a list of strings, not a string")
    _check_count(values, field, MAX_TAGS, "tags")
    out: dict[str, None] = {}
    for raw in values:
        if not isinstance(raw, str):
            raise InvalidInputError(field, "every tag must be a string")
        _no_nul(field, raw)
        tag = normalize_text(raw)
        if not tag:
            raise InvalidInputError(field, "tags must not be empty")
        if len(tag) > MAX_TAG_CHARS:
            raise InvalidInputError(field, f"a tag is {len(tag)} characters; the limit is {MAX_TAG_CHARS}")
        out.setdefault(tag, None)
    return list(out)


def metadata_shape_error(value: Any) -> str | None:
    """Why a metadata value is refused before it is encoded: too deep, or too many values.

    Iterative, and it never descends past the depth limit nor pushes more than
    MAX_METADATA_NODES values: a hostile document thousands of levels deep must be refused,
    not overflow the Python stack, and one with a million values must not be walked whole.
    """
    stack: list[tuple[Any, int]] = [(value, 1)]
    nodes = 1
    while stack:
        node, level = stack.pop()
        if level > MAX_METADATA_DEPTH:
            return f"is nested deeper than {MAX_METADATA_DEPTH} levels"
        if isinstance(node, (dict, list)):
            # Counted before they are pushed, by len(): the cap holds before any child is touched.
            nodes += len(node)
            if nodes > MAX_METADATA_NODES:
                return f"has more than {MAX_METADATA_NODES} values, over {MAX_METADATA_BYTES} bytes as JSON"
            children = node.values() if isinstance(node, dict) else node
            stack.extend((v, level + 1) for v in children)
    return None


def check_metadata(value: dict[str, Any] | None) -> dict[str, Any]:
    """A JSON object of at most 64 KiB and 10 levels, without NUL characters."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InvalidInputError("metadata", "must be a JSON object")
    shape = metadata_shape_error(value)
    if shape is not None:
        raise InvalidInputError("metadata", shape)
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
    if not key or len(key) > MAX_IDEMPOTENCY_KEY_CHARS:
        raise InvalidInputError("idempotency_key", f"must be 1-{MAX_IDEMPOTENCY_KEY_CHARS} characters")
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


def parse_id(value: str | uuid.UUID, field_name: str = "id") -> uuid.UUID:
    """A UUID from caller input, or InvalidInputError naming the field."""
    if isinstance(value, uuid.UUID):
        return value
    try:
        return uuid.UUID(str(value).strip())
    except (ValueError, AttributeError):
        raise InvalidInputError(
            field_name, f"must be a UUID like 0190f3a2-…, got {str(value)[:60]!r}"
        ) from None


Mode = Literal["hybrid", "vector", "lexical"]
MODES: tuple[Mode, ...] = ("hybrid", "vector", "lexical")
_HASH_PREFIX = "sha256:"


def check_query(query: str) -> str:
    """The query with whitespace folded; non-empty, at most MAX_QUERY_CHARS characters, no NUL."""
    if not isinstance(query, str):
        raise InvalidInputError("query", "must be a string")
    if "\x00" in query:
        raise InvalidInputError("query", "must not contain NUL (U+0000) characters")
    clean = " ".join(query.split())
    if not clean:
        raise InvalidInputError("query", "must not be empty or only whitespace")
    if len(clean) > MAX_QUERY_CHARS:
        raise InvalidInputError("query", f"is {len(clean)} characters; the limit is {MAX_QUERY_CHARS}")
    return clean


def check_mode(mode: str) -> Mode:
    """One of hybrid, vector, lexical."""
    for known in MODES:
        if mode == known:
            return known
    raise InvalidInputError("mode", f"must be one of {', '.join(MODES)}, got {mode!r}")


def check_range(after: datetime | None, before: datetime | None, field: str) -> None:
    """Both bounds date-times (when given) and `after` earlier than `before`."""
    for name, value in ((f"{field}_after", after), (f"{field}_before", before)):
        if value is not None and not isinstance(value, datetime):
            raise InvalidInputError(name, "must be a date-time")
    if after is not None and before is not None and after >= before:
        raise InvalidInputError(f"{field}_after", f"must be earlier than {field}_before")


def check_min_similarity(value: float | None) -> float | None:
    """A cosine bound from -1 to 1, or None."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not -1.0 <= value <= 1.0:
        raise InvalidInputError("min_similarity", f"must be a number from -1 to 1, got {value!r}")
    return float(value)


def check_min_relevance(value: float | None) -> float | None:
    """A relevance floor from 0 to 1 (see domain/relevance.py), or None."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
        raise InvalidInputError("min_relevance", f"must be a number from 0 to 1, got {value!r}")
    return float(value)


MAX_HALF_LIFE_DAYS = 36500.0


def check_half_life(value: float | None) -> float | None:
    """A recency half-life in days: above 0, at most MAX_HALF_LIFE_DAYS; None for no recency."""
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not 0.0 < value <= MAX_HALF_LIFE_DAYS  # also false for NaN
    ):
        raise InvalidInputError(
            "recency_half_life_days", f"must be a number of days above 0 and at most 36500, got {value!r}"
        )
    return float(value)


def check_version(version: str | None, field: str = "version") -> str | None:
    """A document's version label: up to MAX_VERSION_LABEL_CHARS printable characters, or None."""
    if version is None or not version.strip():
        return None
    clean = version.strip()
    if len(clean) > MAX_VERSION_LABEL_CHARS or not clean.isprintable():
        raise InvalidInputError(field, f"at most {MAX_VERSION_LABEL_CHARS} printable characters")
    return clean


def check_filters(filters: EntryFilters, catalog: LanguageCatalog) -> EntryFilters:
    """List and search filters checked once: tokens, tags, date ranges, language → its regconfig."""
    bounds = {
        name: _utc_bound(getattr(filters, name), name)
        for name in ("created_after", "created_before", "updated_after", "updated_before")
    }
    # Compared once both are UTC: a naive and an aware bound cannot be compared as given.
    check_range(bounds["created_after"], bounds["created_before"], "created")
    check_range(bounds["updated_after"], bounds["updated_before"], "updated")
    language = filters.language
    return EntryFilters(
        kind=check_kind(filters.kind) if filters.kind is not None else None,
        source=check_source(filters.source),
        source_prefix=check_source(filters.source_prefix, "source_prefix"),
        language=(
            catalog.resolve_explicit(language, omitted="match every language").regconfig
            if language and language.strip()
            else None
        ),
        tags_all=check_tags(filters.tags_all, "tags_all") or None,
        tags_any=check_tags(filters.tags_any, "tags_any") or None,
        document=str(parse_id(filters.document, "document")) if filters.document else None,
        version=check_version(filters.version),
        include_deleted=bool(filters.include_deleted),
        include_superseded=bool(filters.include_superseded),
        include_expired=bool(filters.include_expired),
        **bounds,
    )


def _utc_bound(value: object, field: str) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, datetime):
        raise InvalidInputError(field, "must be a date-time")
    return as_utc(value)


def check_top_k(value: int, field: str = "top_k") -> int:
    """Results wanted: an integer from 1 to MAX_TOP_K."""
    return check_limit(value, field, MAX_TOP_K)


def check_hash(value: str, field: str) -> str:
    """A content hash in pgrecall's form ('sha256:' + 64 hex digits)."""
    value = value.strip().lower()
    digest = value.removeprefix(_HASH_PREFIX)
    if (
        not value.startswith(_HASH_PREFIX)
        or len(digest) != 64
        or any(c not in "0123456789abcdef" for c in digest)
    ):
        raise InvalidInputError(field, "must look like sha256:<64 hex digits>, as returned by search")
    return value


def check_budget(value: int) -> int:
    """A token budget from MIN_BUDGET to MAX_BUDGET."""
    if isinstance(value, bool) or not isinstance(value, int) or not (MIN_BUDGET <= value <= MAX_BUDGET):
        raise InvalidInputError("token_budget", f"must be an integer from {MIN_BUDGET} to {MAX_BUDGET}")
    return value


def check_sections(sections: Sequence[str] | None) -> list[str] | None:
    """Section names whitespace-folded, de-duplicated: each 1-200 characters, ≤ MAX_SECTIONS as sent."""
    if not sections:
        return None
    if isinstance(sections, str):
        raise InvalidInputError("sections", "must be a list of section names")
    _check_count(sections, "sections", MAX_SECTIONS, "section names")
    clean: dict[str, None] = {}
    for name in sections:
        text = " ".join(str(name).split())
        if not text or len(text) > MAX_SECTION_CHARS or "\x00" in text:
            raise InvalidInputError("sections", f"each section name must be 1-{MAX_SECTION_CHARS} characters")
        clean.setdefault(text, None)
    return list(clean)


def check_pins(values: Sequence[str] | None) -> list[str]:
    """Pinned hashes checked and de-duplicated in order; at most MAX_PINS as sent."""
    if not values:
        return []
    if isinstance(values, str):
        raise InvalidInputError("pinned_hashes", "must be a list of content hashes")
    _check_count(values, "pinned_hashes", MAX_PINS, "pinned hashes")
    return list(dict.fromkeys(check_hash(value, "pinned_hashes") for value in values))
