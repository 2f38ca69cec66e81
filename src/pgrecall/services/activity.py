"""An owner's memory at a glance: which tags are in use, and what changed lately."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime

from pgrecall.domain.activity import (
    MAX_ACTIVITY_LIMIT,
    MAX_TAG_LIMIT,
    MAX_TAG_PREFIX_CHARS,
    decode_activity_cursor,
    encode_activity_cursor,
    parse_since,
)
from pgrecall.domain.text import snippet
from pgrecall.domain.validation import check_limit
from pgrecall.errors import InvalidInputError
from pgrecall.store.activity import ActivityStore, Change, EntryChange, TagCount

RECENT_CHANGES = 20
MAX_TAGS = 500  # an owner with more tags than this gets the most used ones, and is told so

__all__ = ["MAX_TAGS", "RECENT_CHANGES", "ActivityPage", "ActivityService", "Recent", "TagCount", "Tags"]


@dataclass(frozen=True)
class Tags:
    """Tags of live entries, most used first; `truncated` when only the first MAX_TAGS are given."""

    tags: list[TagCount]
    truncated: bool


@dataclass(frozen=True)
class Recent:
    """One recent change, labelled by the entry's title or the start of its text."""

    id: uuid.UUID
    title: str | None
    snippet: str
    kind: str
    change: Change
    at: datetime
    relation: str | None = None  # a `linked` change: how and to which entry
    to_id: uuid.UUID | None = None


@dataclass(frozen=True)
class ActivityPage:
    """One page of changes in a window, newest first, and the cursor of the next page."""

    since: datetime
    changes: list[Recent]
    next_cursor: str | None


def _recent(change: EntryChange) -> Recent:
    label = "" if change.title else snippet(change.body_start, 120)
    return Recent(
        change.id, change.title, label, change.kind, change.change, change.at, change.relation, change.to_id
    )


class ActivityService:
    """Read-only overviews of one owner's entries."""

    def __init__(self, store: ActivityStore) -> None:
        self.store = store

    def tags(self, owner: str) -> Tags:
        """The owner's tags with their live entry counts."""
        found = self.store.tag_counts(owner, MAX_TAGS + 1)
        return Tags(found[:MAX_TAGS], truncated=len(found) > MAX_TAGS)

    def recent(self, owner: str, limit: int = RECENT_CHANGES) -> list[Recent]:
        """The owner's last `limit` changes (added, updated, deleted, linked), newest first."""
        return [_recent(c) for c in self.store.recent_changes(owner, limit)]

    def tags_with_prefix(self, owner: str, prefix: str | None, limit: int) -> Tags:
        """Up to `limit` tags of live entries starting with `prefix` (any case), most used first."""
        check_limit(limit, "limit", MAX_TAG_LIMIT)
        if prefix is not None and len(prefix) > MAX_TAG_PREFIX_CHARS:
            raise InvalidInputError("prefix", f"at most {MAX_TAG_PREFIX_CHARS} characters")
        if prefix is not None and "\x00" in prefix:
            raise InvalidInputError("prefix", "must not contain NUL characters")
        found = self.store.tag_counts(owner, limit + 1, prefix or None)
        return Tags(found[:limit], truncated=len(found) > limit)

    def since(self, owner: str, since: str, *, limit: int = 20, cursor: str | None = None) -> ActivityPage:
        """Changes (added, updated, deleted, linked) from `since` (ISO time or 7d, 24h…) on, newest first."""
        start = parse_since(since, datetime.now(UTC))
        check_limit(limit, "limit", MAX_ACTIVITY_LIMIT)
        after = decode_activity_cursor(cursor) if cursor is not None else None
        rows = self.store.changes_since(owner, start, limit + 1, after)
        page = rows[:limit]
        more = len(rows) > limit and page
        next_cursor = encode_activity_cursor(page[-1].at, page[-1].id, page[-1].change) if more else None
        return ActivityPage(start, [_recent(c) for c in page], next_cursor)
