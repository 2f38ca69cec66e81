"""Link use cases: link two entries, unlink them, and walk an entry's neighbourhood."""

from __future__ import annotations

import uuid

from pgrecall.domain.links import (
    MAX_RELATED_LIMIT,
    Direction,
    Link,
    Related,
    check_depth,
    check_direction,
    check_note,
    check_relation,
)
from pgrecall.domain.text import snippet
from pgrecall.domain.validation import check_limit
from pgrecall.errors import InvalidInputError, NotFoundError
from pgrecall.services.ids import resolve_id
from pgrecall.store.entries import EntryStore
from pgrecall.store.links import LinkStore, Neighbour


class LinkService:
    """Typed, directed links between one owner's entries."""

    def __init__(self, store: LinkStore, entries: EntryStore) -> None:
        self.store = store
        self.entries = entries

    def _id(self, owner: str, given: str | uuid.UUID, field: str = "id") -> uuid.UUID:
        return resolve_id(self.entries, owner, given, field=field)

    def _ends(self, owner: str, from_id: uuid.UUID, to_id: uuid.UUID, *, live: bool) -> None:
        found = self.store.ends(owner, [from_id, to_id])
        for field, ident in (("from_id", from_id), ("to_id", to_id)):
            if ident not in found:
                raise NotFoundError(f"{field}: no entry {ident}")
            if live and found[ident]:
                raise NotFoundError(f"{field}: entry {ident} is deleted; restore it first")

    def link(
        self, owner: str, from_id: str, to_id: str, relation: str, note: str | None = None
    ) -> tuple[Link, bool]:
        """Link from_id → to_id with `relation`; True when the link is new (a repeat keeps one)."""
        source, target = self._id(owner, from_id, "from_id"), self._id(owner, to_id, "to_id")
        if source == target:
            raise InvalidInputError("to_id", "an entry cannot link to itself")
        token = check_relation(relation)
        clean_note = check_note(note)
        self._ends(owner, source, target, live=True)
        return self.store.link(owner, source, token, target, clean_note)

    def unlink(self, owner: str, from_id: str, to_id: str, relation: str | None = None) -> list[str]:
        """Remove the links from_id → to_id (one relation, or every one); the relations removed."""
        source, target = self._id(owner, from_id, "from_id"), self._id(owner, to_id, "to_id")
        token = check_relation(relation) if relation is not None else None
        self._ends(owner, source, target, live=False)
        return self.store.unlink(owner, source, target, token)

    def related(
        self,
        owner: str,
        entry_id: str | uuid.UUID,
        *,
        relation: str | None = None,
        direction: str = "both",
        depth: int = 1,
        limit: int = 50,
    ) -> list[Related]:
        """Live entries linked to the entry, nearest first (depth 2: their neighbours too)."""
        origin = self._id(owner, entry_id)
        token = check_relation(relation) if relation is not None else None
        way: Direction = check_direction(direction)
        levels = check_depth(depth)
        check_limit(limit, "limit", MAX_RELATED_LIMIT)
        found = self.store.ends(owner, [origin])
        if origin not in found:
            raise NotFoundError(f"id: no entry {origin}")
        if found[origin]:
            raise NotFoundError(f"id: entry {origin} is deleted; restore it first")
        # Every link to a new entry is listed (two relations to one entry are two rows); an entry
        # reached at one depth is not listed again deeper, nor walked from twice.
        reached = {origin}
        listed: set[tuple[uuid.UUID, str, str, uuid.UUID]] = set()
        out: list[Related] = []
        frontier = [origin]
        for level in range(1, levels + 1):
            if not frontier or len(out) >= limit:
                break
            rows = self.store.neighbours(owner, frontier, direction=way, relation=token, limit=limit)
            frontier = []
            for row in rows:
                key = (row.id, row.relation, row.direction, row.via)
                if row.id in reached or key in listed or len(out) >= limit:
                    continue
                listed.add(key)
                out.append(_related(row, level))
                if row.id not in frontier:
                    frontier.append(row.id)
            reached.update(frontier)
        return out


def _related(row: Neighbour, depth: int) -> Related:
    return Related(
        id=str(row.id),
        title=row.title,
        snippet=snippet(row.body),
        kind=row.kind,
        content_hash=row.content_hash,
        relation=row.relation,
        direction="out" if row.direction == "out" else "in",
        depth=depth,
        via=str(row.via),
        note=row.note,
    )
