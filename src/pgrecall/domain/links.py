"""Typed, directed links between entries: the relation vocabulary and the rules of a link."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from pgrecall.errors import InvalidInputError

# A closed vocabulary: assistants pick from it instead of inventing near-synonyms
# ("depends on", "dependsOn", "requires") that no filter would ever bring together.
RELATIONS: dict[str, str] = {
    "relates_to": "a general connection (the default for anything else)",
    "depends_on": "needs the other to hold or to work",
    "part_of": "is a part or a section of the other",
    "contradicts": "says the opposite of the other",
    "supports": "gives evidence for the other",
    "refines": "makes the other more precise",
    "derived_from": "was made from the other",
    "example_of": "is an instance of the other",
    "mentions": "names the other",
    "answers": "answers the question the other asks",
    "implements": "carries out what the other decides",
    "blocks": "stands in the way of the other",
    "caused_by": "happened because of the other",
    "follows": "comes after the other in a sequence",
    "duplicates": "says the same as the other",
}
DEFAULT_RELATION = "relates_to"
MAX_LINK_NOTE_CHARS = 1000
MAX_RELATED_DEPTH = 2
MAX_RELATED_LIMIT = 100
Direction = Literal["out", "in", "both"]
DIRECTIONS: tuple[Direction, ...] = ("out", "in", "both")


def check_relation(value: object, field: str = "relation") -> str:
    """A relation token from RELATIONS (case and spaces forgiven: "Depends on" is depends_on)."""
    if not isinstance(value, str):
        raise InvalidInputError(field, "must be a string")
    token = "_".join(value.strip().lower().replace("-", " ").split())
    if token not in RELATIONS:
        raise InvalidInputError(field, f"unknown relation {value[:40]!r}; use one of: {', '.join(RELATIONS)}")
    return token


def check_note(value: object) -> str | None:
    """An optional short note on a link."""
    if value is None:
        return None
    if not isinstance(value, str) or "\x00" in value:
        raise InvalidInputError("note", "must be text without NUL characters")
    value = value.strip()
    if len(value) > MAX_LINK_NOTE_CHARS:
        raise InvalidInputError("note", f"is {len(value)} characters; the limit is {MAX_LINK_NOTE_CHARS}")
    return value or None


def check_direction(value: object) -> Direction:
    """out (links from the entry), in (links to it) or both."""
    for direction in DIRECTIONS:
        if value == direction:
            return direction
    raise InvalidInputError("direction", f"must be one of {', '.join(DIRECTIONS)}, got {str(value)[:20]!r}")


def check_depth(value: object) -> int:
    """1 (direct neighbours) or 2 (their neighbours too)."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_RELATED_DEPTH:
        raise InvalidInputError("depth", f"must be 1 or {MAX_RELATED_DEPTH}, got {value!r}")
    return value


@dataclass(frozen=True)
class Link:
    """One stored link."""

    from_id: str
    relation: str
    to_id: str
    note: str | None
    created_at: datetime


@dataclass(frozen=True)
class Related:
    """An entry reached from another through links, with how it was reached."""

    id: str
    title: str | None
    snippet: str
    kind: str
    content_hash: str
    relation: str
    direction: Literal["out", "in"]  # out: the link points away from the entry reached through
    depth: int
    via: str  # the entry whose link reached this one (the asked entry at depth 1)
    note: str | None
