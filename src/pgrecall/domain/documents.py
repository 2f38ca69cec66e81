"""What a document is: the stored document, its chunks' places, and how a re-ingest changes them.

A re-ingest is a diff of chunk hashes in document order (difflib's matching blocks): chunks whose
text is unchanged keep their ids and hashes (only their place may move); a changed run of chunks
is replaced pairwise, each new chunk superseding the old one it stands for, so a pin on the old
hash still resolves (as superseded); what is left over is inserted or soft-deleted.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from difflib import SequenceMatcher
from typing import Any

SECTION_SEPARATOR = " › "


@dataclass(frozen=True)
class Document:
    """One ingested document (one source in one version), as read back."""

    id: uuid.UUID
    owner: str
    source: str
    title: str | None
    version_label: str | None
    format: str
    language: str
    metadata: dict[str, Any]
    content_hash: str
    size_bytes: int | None
    mtime: datetime | None
    chunk_count: int
    created_at: datetime
    updated_at: datetime
    deleted_at: datetime | None

    @property
    def deleted(self) -> bool:
        """True once soft-deleted."""
        return self.deleted_at is not None


@dataclass(frozen=True)
class ChunkDraft:
    """A chunk about to be written: its text (a verbatim span of the document) and its place."""

    ordinal: int
    text: str
    content_hash: str
    section_path: tuple[str, ...]
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class StoredChunk:
    """A current chunk of a stored document (live, not superseded)."""

    id: uuid.UUID
    ordinal: int
    content_hash: str
    section_path: tuple[str, ...]
    tags: tuple[str, ...] = ()


@dataclass(frozen=True)
class ChunkPlan:
    """What a re-ingest writes: kept chunks (maybe moved), new ones (maybe superseding), removed ones."""

    keep: list[tuple[StoredChunk, ChunkDraft]]
    insert: list[tuple[ChunkDraft, uuid.UUID | None]]
    remove: list[StoredChunk]

    @property
    def unchanged(self) -> bool:
        """Nothing to write: same chunks, same places."""
        return (
            not self.insert
            and not self.remove
            and all(
                old.ordinal == new.ordinal and old.section_path == new.section_path for old, new in self.keep
            )
        )


def plan_chunks(old: Sequence[StoredChunk], new: Sequence[ChunkDraft]) -> ChunkPlan:
    """The smallest change from the stored chunks to the new ones, matched by hash in order."""
    before = sorted(old, key=lambda c: c.ordinal)
    matcher = SequenceMatcher(
        None, [c.content_hash for c in before], [c.content_hash for c in new], autojunk=False
    )
    plan = ChunkPlan(keep=[], insert=[], remove=[])
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            plan.keep.extend(zip(before[i1:i2], new[j1:j2], strict=True))
            continue
        paired = min(i2 - i1, j2 - j1)
        plan.insert.extend((new[j1 + k], before[i1 + k].id) for k in range(paired))
        plan.insert.extend((draft, None) for draft in new[j1 + paired : j2])
        plan.remove.extend(before[i1 + paired : i2])
    return plan


def place_parts(document_title: str | None, section_path: Sequence[str]) -> list[str]:
    """Where a chunk sits, outermost first: its document's title, then its section path."""
    parts = [p for p in (document_title, *section_path) if p]
    # The first section is often the document's own title (its H1): say it once.
    if len(parts) > 1 and parts[0] == parts[1]:
        parts = parts[1:]
    return parts


def chunk_title(document_title: str | None, section_path: Sequence[str]) -> str | None:
    """A chunk's title: its document's title and section path, so words and meaning see its context."""
    return SECTION_SEPARATOR.join(place_parts(document_title, section_path)) or None
