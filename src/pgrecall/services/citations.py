"""Verify citations: re-hash the stored text of each cited entry and say whether it still holds."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Literal

from pgrecall.domain.text import content_hash
from pgrecall.domain.validation import MAX_CITATIONS, check_hash
from pgrecall.errors import InvalidInputError, NotFoundError
from pgrecall.services.ids import resolve_id
from pgrecall.store.entries import EntryStore

CitationStatus = Literal["valid", "changed", "deleted", "missing"]


@dataclass(frozen=True)
class CitationCheck:
    """The verdict on one citation."""

    label: str | None
    id: str | None
    content_hash: str
    status: CitationStatus
    current_hash: str | None  # the stored text's hash now, when it differs or the entry is deleted


class CitationService:
    """Re-hashes cited entries' stored text: the proof that a citation still holds."""

    def __init__(self, store: EntryStore) -> None:
        self.store = store

    def verify(self, owner: str, citations: list[tuple[str | None, str | None, str]]) -> list[CitationCheck]:
        """Check (label, id, content_hash) triples; an id-less citation is looked up by its hash."""
        return verify(self.store, owner, citations)


def verify(
    store: EntryStore, owner: str, citations: list[tuple[str | None, str | None, str]]
) -> list[CitationCheck]:
    """Check (label, id, content_hash) triples; an id-less citation is looked up by its hash."""
    if len(citations) > MAX_CITATIONS:
        raise InvalidInputError("citations", f"at most {MAX_CITATIONS} per call, got {len(citations)}")
    parsed: list[tuple[str | None, uuid.UUID | str | None, str]] = []
    for i, (label, raw_id, raw_hash) in enumerate(citations):
        cited = check_hash(raw_hash, f"citations[{i}].content_hash")
        ident: uuid.UUID | str | None = None
        if raw_id:
            try:
                ident = resolve_id(store, owner, raw_id, field=f"citations[{i}].id")
            except NotFoundError:
                ident = raw_id.strip()  # a part of no entry's id: missing, as an unknown UUID is
        parsed.append((label, ident, cited))
    out: list[CitationCheck] = []
    for label, ident, cited in parsed:
        if isinstance(ident, str):
            out.append(CitationCheck(label, ident, cited, "missing", None))
            continue
        if ident is None:
            matches = store.by_hash(owner, cited, 1)
            if not matches:
                out.append(CitationCheck(label, None, cited, "missing", None))
                continue
            ident = matches[0].id
        entry = store.find(owner, ident)
        if entry is None:
            out.append(CitationCheck(label, str(ident), cited, "missing", None))
            continue
        # Recomputed from the stored text, not read from the column: this is the proof.
        current = content_hash(entry.body)
        if entry.deleted:
            status: CitationStatus = "deleted"
        elif current == cited:
            status = "valid"
        else:
            status = "changed"
        out.append(CitationCheck(label, str(ident), cited, status, None if status == "valid" else current))
    return out
