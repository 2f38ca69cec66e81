"""What a page's query string or a submitted form asks for, checked and in the services' terms."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any

from pgrecall.domain.entries import EntryFilters
from pgrecall.domain.validation import MAX_VERSION
from pgrecall.errors import InvalidInputError

MODES = ("hybrid", "vector", "lexical")
LIST_PAGE_SIZE = 25
SEARCH_TOP_K = 10
_MAX_FIELD_CHARS = 2000
_MAX_OFFSET = 1_000_000


def _text(params: Mapping[str, Any], name: str) -> str | None:
    value = params.get(name)
    if not isinstance(value, str):
        return None
    value = value.strip()
    if len(value) > _MAX_FIELD_CHARS:
        raise InvalidInputError(name, f"at most {_MAX_FIELD_CHARS} characters")
    return value or None


def _whole_number(raw: object, maximum: int) -> int | None:
    # ASCII digits only, and few of them: str.isdigit() accepts "²" (int() then raises), and
    # int() of thousands of digits raises too (CPython's conversion limit): both were 500s.
    if not isinstance(raw, str) or not raw.isascii() or not raw.isdigit() or len(raw) > len(str(maximum)):
        return None
    value = int(raw)
    return value if value <= maximum else None


def _tags(params: Mapping[str, Any], name: str) -> list[str] | None:
    raw = _text(params, name)
    if raw is None:
        return None
    tags = [t.strip() for t in raw.split(",") if t.strip()]
    return tags or None


def _day(params: Mapping[str, Any], name: str, *, end_of_day: bool = False) -> datetime | None:
    raw = _text(params, name)
    if raw is None:
        return None
    try:
        day = date.fromisoformat(raw)
    except ValueError:
        raise InvalidInputError(name, f"{raw!r} is not a date (YYYY-MM-DD)") from None
    start = datetime(day.year, day.month, day.day, tzinfo=UTC)
    if not end_of_day:
        return start
    try:
        return start + timedelta(days=1)
    except OverflowError:  # the day after 9999-12-31 is past datetime's range: no end bound at all
        return None


@dataclass(frozen=True)
class ListQuery:
    """The list page's filters and position, and the same as query-string pairs for links."""

    filters: EntryFilters
    cursor: str | None
    echo: dict[str, str] = field(default_factory=dict)


def list_query(params: Mapping[str, Any]) -> ListQuery:
    """The list filters from a query string (kind, source, tags, language, from, to, deleted, cursor)."""
    echo = {k: v for k in ("kind", "source", "tags", "language", "from", "to") if (v := _text(params, k))}
    deleted = params.get("deleted") == "1"
    if deleted:
        echo["deleted"] = "1"
    filters = EntryFilters(
        kind=_text(params, "kind"),
        source=_text(params, "source"),
        tags_all=_tags(params, "tags"),
        language=_text(params, "language"),
        created_after=_day(params, "from"),
        created_before=_day(params, "to", end_of_day=True),
        include_deleted=deleted,
    )
    return ListQuery(filters, _text(params, "cursor"), echo)


@dataclass(frozen=True)
class DocumentListQuery:
    """The documents page's filters and position, and the same as query-string pairs for links."""

    source_prefix: str | None
    version: str | None
    include_deleted: bool
    offset: int
    echo: dict[str, str] = field(default_factory=dict)


def document_list_query(params: Mapping[str, Any]) -> DocumentListQuery:
    """The documents filters from a query string (source_prefix, version, deleted, offset)."""
    echo = {k: v for k in ("source_prefix", "version") if (v := _text(params, k))}
    deleted = params.get("deleted") == "1"
    if deleted:
        echo["deleted"] = "1"
    offset = _whole_number(_text(params, "offset") or "0", _MAX_OFFSET)
    if offset is None:
        raise InvalidInputError("offset", f"a whole number from 0 to {_MAX_OFFSET}")
    return DocumentListQuery(_text(params, "source_prefix"), _text(params, "version"), deleted, offset, echo)


@dataclass(frozen=True)
class SearchQuery:
    """The search page's question, mode and filters (query None: show the empty form)."""

    query: str | None
    mode: str
    filters: EntryFilters
    echo: dict[str, str]
    by_document: bool = False  # one hit per document, as search(group_by="document")


def search_query(params: Mapping[str, Any]) -> SearchQuery:
    """The search form from a query string (q, mode, kind, source, tags, language, by_document)."""
    mode = _text(params, "mode") or "hybrid"
    if mode not in MODES:
        raise InvalidInputError("mode", f"{mode!r} is not one of {', '.join(MODES)}")
    by_document = _text(params, "by_document")
    if by_document not in (None, "1"):
        raise InvalidInputError("by_document", f"{by_document!r} is not 1 (the checkbox's value)")
    echoed = ("q", "kind", "source", "tags", "language", "by_document")
    echo = {k: v for k in echoed if (v := _text(params, k))}
    echo["mode"] = mode
    filters = EntryFilters(
        kind=_text(params, "kind"),
        source=_text(params, "source"),
        tags_all=_tags(params, "tags"),
        language=_text(params, "language"),
    )
    return SearchQuery(_text(params, "q"), mode, filters, echo, by_document is not None)


@dataclass(frozen=True)
class EntryEdit:
    """The fields an edit form changes, and the version the editor saw."""

    text: str
    title: str
    tags: list[str]
    kind: str | None
    language: str | None
    expected_version: int


def entry_edit(form: Mapping[str, Any]) -> EntryEdit:
    """The edit form (text, title, tags, kind, language, expected_version)."""
    text = form.get("text")
    if not isinstance(text, str):
        raise InvalidInputError("text", "is required")
    expected_version = _whole_number(form.get("expected_version"), MAX_VERSION)
    if expected_version is None:
        raise InvalidInputError(
            "expected_version", f"a whole number from 0 to {MAX_VERSION} (the version the form was opened at)"
        )
    title = form.get("title")
    return EntryEdit(
        # Browsers send textarea line breaks as CRLF; the services normalize whitespace anyway.
        text=text.replace("\r\n", "\n"),
        title=title.strip() if isinstance(title, str) else "",
        tags=_tags(form, "tags") or [],
        kind=_text(form, "kind"),
        language=_text(form, "language"),
        expected_version=expected_version,
    )
