"""Links in the transfer format: a line `{"type": "link", …}` per link, after its owner's entries.

Export writes every link of an owner after that owner's entries; import reads link lines
anywhere in the file and applies them once every entry line is in, so a link may name an
entry that comes later. A link whose end is no entry of its owner (in the file or the store)
is not an error: it is counted as dangling and its line reported.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import psycopg

from pgrecall.domain.links import check_note, check_relation
from pgrecall.errors import InvalidInputError
from pgrecall.services.transfer.fields import opt_id, timestamp
from pgrecall.store.transfer_links import import_link

LINK_FIELDS = ("type", "owner", "from_id", "relation", "to_id", "note", "created_at")
MAX_REPORTED_DANGLING = 5


@dataclass(frozen=True)
class LinkLine:
    """A validated link line."""

    line: int
    owner: str
    from_id: uuid.UUID
    relation: str
    to_id: uuid.UUID
    note: str | None
    created_at: datetime | None


@dataclass
class LinkCounts:
    """What became of the file's link lines."""

    seen: int = 0
    inserted: int = 0
    existing: int = 0
    dangling: int = 0
    dangling_first: list[int] = field(default_factory=list)  # line numbers of the first few


def is_link_line(obj: Any) -> bool:
    """True for a `{"type": "link", …}` line."""
    return isinstance(obj, dict) and obj.get("type") == "link"


def parse_link(line: int, obj: dict[str, Any], owner: str) -> LinkLine:
    """Validate a link line (`owner` is the line's owner, already resolved)."""
    unknown = sorted(set(obj) - set(LINK_FIELDS))
    if unknown:
        raise InvalidInputError(
            unknown[0], f"unknown field of a link line; the fields are {', '.join(LINK_FIELDS)}"
        )
    source, target = opt_id(obj, "from_id"), opt_id(obj, "to_id")
    if source is None or target is None:
        raise InvalidInputError("from_id" if source is None else "to_id", "is required in a link line")
    if source == target:
        raise InvalidInputError("to_id", "an entry cannot link to itself")
    return LinkLine(
        line=line,
        owner=owner,
        from_id=source,
        relation=check_relation(obj.get("relation")),
        to_id=target,
        note=check_note(obj.get("note")),
        created_at=timestamp(obj, "created_at"),
    )


def apply_links(conn: psycopg.Connection[dict[str, Any]], links: list[LinkLine]) -> LinkCounts:
    """Store each link whose ends exist; the caller owns the transaction."""
    counts = LinkCounts(seen=len(links))
    for link in links:
        outcome = import_link(
            conn,
            owner=link.owner,
            from_id=link.from_id,
            relation=link.relation,
            to_id=link.to_id,
            note=link.note,
            created_at=link.created_at,
        )
        if outcome == "dangling":
            counts.dangling += 1
            if len(counts.dangling_first) < MAX_REPORTED_DANGLING:
                counts.dangling_first.append(link.line)
        elif outcome == "inserted":
            counts.inserted += 1
        else:
            counts.existing += 1
    return counts
