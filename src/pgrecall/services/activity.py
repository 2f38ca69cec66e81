"""An owner's memory at a glance: which tags are in use, and what changed lately."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

from pgrecall.domain.text import snippet
from pgrecall.store.activity import ActivityStore, Change, TagCount

RECENT_CHANGES = 20
MAX_TAGS = 500  # an owner with more tags than this gets the most used ones, and is told so

__all__ = ["MAX_TAGS", "RECENT_CHANGES", "ActivityService", "Recent", "TagCount", "Tags"]


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


class ActivityService:
    """Read-only overviews of one owner's entries."""

    def __init__(self, store: ActivityStore) -> None:
        self.store = store

    def tags(self, owner: str) -> Tags:
        """The owner's tags with their live entry counts."""
        found = self.store.tag_counts(owner, MAX_TAGS + 1)
        return Tags(found[:MAX_TAGS], truncated=len(found) > MAX_TAGS)

    def recent(self, owner: str, limit: int = RECENT_CHANGES) -> list[Recent]:
        """The owner's last `limit` changes (added, updated, deleted), newest first."""
        return [
            Recent(c.id, c.title, "" if c.title else snippet(c.body_start, 120), c.kind, c.change, c.at)
            for c in self.store.recent_changes(owner, limit)
        ]
