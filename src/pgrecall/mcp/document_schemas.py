"""The documents tools' outputs (Pydantic at the MCP boundary)."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from pgrecall.domain.documents import Document
from pgrecall.domain.entries import Entry
from pgrecall.domain.text import snippet
from pgrecall.errors import InvalidInputError

if TYPE_CHECKING:
    from pgrecall.services.documents import Ingested, Section


class DocumentOut(BaseModel):
    """One document (its chunks are entries: search finds them)."""

    id: str
    source: str = Field(description="The path or URL it was ingested from.")
    title: str | None
    version: str | None = Field(description="Version label; several versions of a source live side by side.")
    format: str
    language: str = Field(description="Text-search config its chunks are stemmed with.")
    content_hash: str = Field(description="Hash of the whole normalized text.")
    chunk_count: int
    created_at: datetime
    updated_at: datetime
    deleted_at: datetime | None

    @classmethod
    def of(cls, document: Document) -> DocumentOut:
        return cls(
            id=str(document.id),
            source=document.source,
            title=document.title,
            version=document.version_label,
            format=document.format,
            language=document.language,
            content_hash=document.content_hash,
            chunk_count=document.chunk_count,
            created_at=document.created_at,
            updated_at=document.updated_at,
            deleted_at=document.deleted_at,
        )


class IngestOut(BaseModel):
    """What an ingest changed."""

    document: DocumentOut
    status: str = Field(
        description="created, updated, unchanged (nothing written) or moved (a file renamed: its "
        "document, ids and hashes kept under the new path)."
    )
    written: int = Field(description="Chunks stored now (new or changed text).")
    kept: int = Field(description="Chunks unchanged: same ids and hashes as before.")
    replaced: int = Field(
        description="Written chunks that supersede an earlier one (old pins still resolve)."
    )
    removed: int = Field(description="Earlier chunks whose text is gone (soft-deleted).")
    vector_pending: int = Field(description="Chunks found by words only until their vectors are filled.")

    @classmethod
    def of(cls, done: Ingested) -> IngestOut:
        return cls(
            document=DocumentOut.of(done.document),
            status=done.status,
            written=done.written,
            kept=done.kept,
            replaced=done.replaced,
            removed=done.removed,
            vector_pending=done.vector_pending,
        )


class ChunkOut(BaseModel):
    """One chunk in document order."""

    id: str = Field(description="Entry id of the chunk.")
    ordinal: int
    content_hash: str
    text: str | None = Field(description="Full text (only for the section asked for), else null.")
    snippet: str


class SectionOut(BaseModel):
    """One section of the outline."""

    path: list[str] = Field(description="Chapter › section › subsection.")
    chunks: list[ChunkOut]


class DocumentDetailOut(BaseModel):
    """A document with its outline (and one section's text when asked)."""

    document: DocumentOut
    sections: list[SectionOut]
    text: str | None = Field(default=None, description='With section "*": the whole text, as stored.')

    @classmethod
    def of(
        cls, document: Document, sections: list[Section], show: str | None, text: str | None = None
    ) -> DocumentDetailOut:
        def chunk(entry: Entry, full: bool) -> ChunkOut:
            return ChunkOut(
                id=str(entry.id),
                ordinal=entry.ordinal if entry.ordinal is not None else 0,
                content_hash=entry.content_hash,
                text=entry.body if full else None,
                snippet=snippet(entry.body),
            )

        asked = show.strip() if show else ""
        wanted = asked.lower() or None
        if wanted and not any(_matches(s.path, wanted) for s in sections):
            # Asked for a section by a name it does not have: say which it has, not the bare outline.
            names = list(dict.fromkeys(s.path[-1] for s in sections if s.path))
            listed = ", ".join(names[:12]) + (", …" if len(names) > 12 else "")
            raise InvalidInputError(
                "section", f"no section {asked!r} in this document; its sections: {listed or 'none'}"
            )
        return cls(
            document=DocumentOut.of(document),
            text=text,
            sections=[
                SectionOut(
                    path=s.path,
                    chunks=[chunk(c, wanted is not None and _matches(s.path, wanted)) for c in s.chunks],
                )
                for s in sections
            ],
        )


def _matches(path: list[str], wanted: str) -> bool:
    """A section asked for by its heading or by a ' › '-joined tail of its path (any case)."""
    joined = " › ".join(path).lower()
    return bool(path) and (path[-1].lower() == wanted or joined.endswith(wanted))


class DocumentListOut(BaseModel):
    """A page of documents."""

    documents: list[DocumentOut]
