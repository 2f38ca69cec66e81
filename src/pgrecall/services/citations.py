"""Verify citations: re-hash the stored text of each cited entry and say whether it still holds."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Literal

from pgrecall.domain.text import content_hash
from pgrecall.domain.validation import MAX_CITATIONS, check_hash, parse_id
from pgrecall.errors import InvalidInputError
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
    parsed: list[tuple[str | None, uuid.UUID | None, str]] = []
    for i, (label, raw_id, raw_hash) in enumerate(citations):
        ident = parse_id(raw_id, f"citations[{i}].id") if raw_id else None
        parsed.append((label, ident, check_hash(raw_hash, f"citations[{i}].content_hash")))
    out: list[CitationCheck] = []
    for label, ident, cited in parsed:
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
