"""Document use cases: ingest (parse, chunk, diff against what is stored, embed what is new), read, delete.

A document's chunks are entries (kind 'chunk'), so search, filters, pins and citations treat them
as they treat notes. Ingest is a diff (domain.documents.plan_chunks): the same content again writes
nothing; an edited section replaces only its chunks, each new one superseding the one it replaces.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from pgrecall.chunking import DocumentError, chunk, detect_format, normalize, parse
from pgrecall.config import Settings
from pgrecall.detection.first_stage import main_script
from pgrecall.domain.documents import ChunkDraft, Document, StoredChunk, chunk_title, plan_chunks
from pgrecall.domain.entries import Entry, NewEntry, embedding_text
from pgrecall.domain.language import LanguageDetector, Resolved
from pgrecall.domain.text import content_hash
from pgrecall.domain.validation import (
    MAX_LIST_LIMIT,
    check_body,
    check_idempotency_key,
    check_limit,
    check_metadata,
    check_source,
    check_tags,
    check_title,
    check_version,
    parse_id,
)
from pgrecall.embeddings.base import EmbeddingError
from pgrecall.errors import InvalidInputError
from pgrecall.services.entries import EntryService
from pgrecall.store.documents import DocumentDraft, DocumentStore

log = logging.getLogger(__name__)

CHUNK_KIND = "chunk"
_EMBED_BATCH = 16
# Sampled for language detection: enough words to be sure, cheap to detect.
DETECT_SAMPLE_CHARS = 4000

IngestStatus = Literal["created", "updated", "unchanged", "moved"]
# (chunks embedded so far, chunks to embed) while a document's new chunks are embedded.
Progress = Callable[[int, int], None]


def own_language(detector: LanguageDetector, document_script: str | None, text: str) -> Resolved | None:
    """A chunk's own language when it is written in another script than its document (whose
    `main_script` is `document_script`); None: it takes the document's (see `_chunk_languages`)."""
    if main_script(text) in (document_script, None):
        return None
    own = detector.detect(text)
    return own if own.how != "default" else None


@dataclass(frozen=True)
class Ingested:
    """What one ingest did to one document."""

    document: Document
    status: IngestStatus
    written: int  # new chunks stored (new text, or replacing changed text)
    kept: int  # chunks whose text was unchanged (same ids and hashes)
    replaced: int  # of the written ones, those superseding an earlier chunk
    removed: int  # earlier chunks soft-deleted (their text is gone from the document)
    vector_pending: int  # written chunks stored without a vector (embedder unavailable)
    language: Resolved | None = None  # how the document's language was chosen
    moved_from: str | None = None  # the source a moved file's document had (status "moved")


@dataclass(frozen=True)
class LongNote:
    """A long note stored as a document: what the ingest did, and its first chunk (its id stands for it)."""

    ingested: Ingested
    first: Entry


@dataclass(frozen=True)
class Section:
    """One section of a document's outline: its path and its chunks, in order."""

    path: list[str]
    chunks: list[Entry]


class DocumentService:
    """Ingest and read documents; the same calls for the CLI, MCP and the web page."""

    def __init__(self, settings: Settings, store: DocumentStore, entries: EntryService) -> None:
        self.settings = settings
        self.store = store
        self.entries = entries

    # -- ingest ------------------------------------------------------------------------------

    def ingest(
        self,
        owner: str,
        data: bytes,
        *,
        source: str,
        format: str | None = None,
        title: str | None = None,
        version: str | None = None,
        language: str | None = None,
        metadata: dict[str, Any] | None = None,
        tags: Sequence[str] | None = None,
        name: str | None = None,
        size_bytes: int | None = None,
        mtime: datetime | None = None,
        progress: Progress | None = None,
        gone: Callable[[str], bool] | None = None,
    ) -> Ingested:
        """Store `data` as the document of `source` (and `version`), changing only what changed.

        `gone`: whether another source no longer exists; a new source whose text a live document of
        such a source holds takes that document over (status "moved": a renamed file keeps its ids).
        """
        clean_source = check_source(source)
        if clean_source is None:
            raise InvalidInputError("source", "must name the document (a path or a URL)")
        clean_version = check_version(version)
        if len(data) > self.settings.max_document_bytes:
            raise InvalidInputError(
                "text",
                f"{len(data)} bytes exceeds the {self.settings.max_document_bytes}-byte document limit",
            )
        fmt = format.strip().lower() if format else detect_format(name or clean_source, data)
        parsed = parse(data, fmt, name=name or clean_source)
        if not parsed.text.strip():
            raise DocumentError("the document has no text")
        doc_title = check_title(title) if title else check_title(parsed.title) if parsed.title else None
        resolved = self.entries.detector.resolve(language, parsed.text[:DETECT_SAMPLE_CHARS])
        pieces = chunk(parsed, max_chars=self.settings.chunk_chars)
        # Ordinals count the kept pieces, so a document's chunks are numbered without gaps.
        kept = [p for p in pieces if p.text.strip()]
        drafts = [
            ChunkDraft(i, p.text, content_hash(p.text), tuple(p.section_path), dict(p.metadata))
            for i, p in enumerate(kept)
        ]
        doc_metadata = check_metadata({**parsed.metadata, **(metadata or {})})
        draft = DocumentDraft(
            source=clean_source,
            title=doc_title,
            version=clean_version,
            format=fmt,
            language=resolved.regconfig,
            metadata=doc_metadata,
            content_hash=content_hash(parsed.text),
            text=parsed.text,
            size_bytes=size_bytes if size_bytes is not None else len(data),
            mtime=mtime,
        )
        # Embed outside the transaction (no lock held while the model runs): what the stored
        # document lacks now is, but for a concurrent ingest, what the transaction will insert.
        _, before = self.store.live(owner, clean_source, clean_version)
        to_embed = [d for d, _ in plan_chunks(before, drafts).insert]
        languages = self._chunk_languages(language, resolved, parsed.text[:DETECT_SAMPLE_CHARS], to_embed)
        vectors = self._embed(owner, doc_title, to_embed, progress)
        # The caller's tags, else the document's own (front matter), else those it had.
        own_tags = tags if tags is not None else parsed.tags
        doc_tags = check_tags(own_tags) if own_tags is not None else None
        return self._write(owner, draft, drafts, resolved, vectors, doc_tags, languages, gone)

    def _chunk_languages(
        self, explicit: str | None, document: Resolved, sample: str, drafts: Sequence[ChunkDraft]
    ) -> dict[str, Resolved]:
        """By hash, the language of each new chunk written in another script than the document.

        Each chunk is an entry, stemmed in one language: a Japanese section of an English guide, or
        an English paragraph left untranslated in a Japanese one, is detected on its own. Within one
        script the chunk keeps the document's language: an untranslated English paragraph under a
        German heading stays German, so the heading's words keep matching German questions (detecting
        every chunk lost passages on debian-manuals' translated pages; docs/documents.md). The
        caller's language applies to every chunk; a document whose detection came back empty (the
        detector may be unavailable) detects none of its chunks either.
        """
        if (explicit is not None and explicit.strip()) or (
            document.how == "default" and document.confidence is None
        ):
            return {}
        script = main_script(sample)
        found: dict[str, Resolved] = {}
        for draft in {d.content_hash: d for d in drafts}.values():
            own = own_language(self.entries.detector, script, draft.text)
            if own is not None:
                found[draft.content_hash] = own
        return found

    def _embed(
        self, owner: str, doc_title: str | None, drafts: Sequence[ChunkDraft], progress: Progress | None
    ) -> dict[str, list[float]]:
        """Vectors of the drafts' texts by hash; an embedder failure leaves the rest pending.

        A text the owner has stored before under the same title (a moved file, another version of
        the document, a restored one) takes its stored vector: it is what embedding it again gives.
        """
        embedder = self.entries.embedder
        vectors: dict[str, list[float]] = {}
        if embedder is None:
            return vectors
        unique = {d.content_hash: d for d in drafts}
        stored = self.entries.store.vectors_by_text(owner, list(unique), embedder.model) if unique else {}
        for key, draft in unique.items():
            known = stored.get((key, chunk_title(doc_title, draft.section_path)))
            if known is not None:
                vectors[key] = known
        todo = [d for key, d in unique.items() if key not in vectors]
        for start in range(0, len(todo), _EMBED_BATCH):
            batch = todo[start : start + _EMBED_BATCH]
            texts = [embedding_text(chunk_title(doc_title, d.section_path), d.text) for d in batch]
            try:
                found = embedder.embed_passages(texts)
            except EmbeddingError as exc:
                log.warning(
                    "embedding failed; chunks stored with their vectors pending", extra={"error": str(exc)}
                )
                break
            vectors.update((d.content_hash, v) for d, v in zip(batch, found, strict=True))
            if progress is not None:
                progress(min(start + len(batch), len(todo)), len(todo))
        return vectors

    def _write(
        self,
        owner: str,
        draft: DocumentDraft,
        drafts: list[ChunkDraft],
        resolved: Resolved,
        vectors: dict[str, list[float]],
        tags: Sequence[str] | None = None,
        languages: dict[str, Resolved] | None = None,
        gone: Callable[[str], bool] | None = None,
    ) -> Ingested:
        model = self.entries.embedder.model if self.entries.embedder is not None else None
        own = languages or {}
        with self.store.writing(owner, draft.source, draft.version) as writer:
            live = writer.live(draft.source, draft.version)
            moved_from: str | None = None
            if live is None and gone is not None and (taken := writer.take_over(draft, gone)) is not None:
                live, moved_from = taken
            current = writer.current_chunks(live.id) if live is not None else []
            plan = plan_chunks(current, drafts)
            # Tags named (by the caller or the document) apply to every chunk; otherwise kept chunks
            # keep theirs (an update_entry may have changed one) and new ones take the first's.
            doc_tags = tuple(tags) if tags is not None else current[0].tags if current else ()

            def tags_of(old: StoredChunk) -> tuple[str, ...]:
                return doc_tags if tags is not None else old.tags

            retag = any(old.tags != tags_of(old) for old, _ in plan.keep)
            same = live is not None and (live.content_hash, live.title) == (draft.content_hash, draft.title)
            if live is not None and same and plan.unchanged and not retag:
                writer.set_fingerprint(live.id, draft.size_bytes, draft.mtime)
                status: IngestStatus = "unchanged" if moved_from is None else "moved"
                return Ingested(live, status, 0, len(plan.keep), 0, 0, 0, resolved, moved_from)
            document = writer.save(live.id if live is not None else None, draft)
            retitled = live is not None and live.title != draft.title
            for old, new in plan.keep:
                moved = old.ordinal != new.ordinal or old.section_path != new.section_path
                if retitled or moved or old.tags != tags_of(old):
                    title = chunk_title(draft.title, new.section_path)
                    writer.place(old.id, new.ordinal, new.section_path, title, tags_of(old))
            news = [
                self._new_chunk(
                    document,
                    d,
                    replaces,
                    own.get(d.content_hash, resolved),
                    vectors.get(d.content_hash),
                    model,
                    doc_tags,
                )
                for d, replaces in plan.insert
            ]
            writer.insert(news)
            writer.delete_chunks([c.id for c in plan.remove])
            document = writer.recount(document.id)
        return Ingested(
            document,
            "created" if live is None else "updated" if moved_from is None else "moved",
            written=len(news),
            kept=len(plan.keep),
            replaced=sum(1 for _, replaces in plan.insert if replaces is not None),
            removed=len(plan.remove),
            vector_pending=sum(1 for n in news if n.embedding is None),
            language=resolved,
            moved_from=moved_from,
        )

    @staticmethod
    def _new_chunk(
        document: Document,
        draft: ChunkDraft,
        replaces: uuid.UUID | None,
        resolved: Resolved,
        vector: list[float] | None,
        model: str | None,
        tags: Sequence[str] = (),
    ) -> NewEntry:
        return NewEntry(
            body=draft.text,
            content_hash=draft.content_hash,
            language=resolved.regconfig,
            kind=CHUNK_KIND,
            source=document.source,
            title=chunk_title(document.title, draft.section_path),
            tags=tags,
            metadata=draft.metadata,
            embedding=vector,
            embedding_model=model if vector is not None else None,
            detected_language=resolved.detected,
            language_how=resolved.how,
            language_confidence=resolved.confidence,
            supersedes=replaces,
            document_id=document.id,
            ordinal=draft.ordinal,
            section_path=list(draft.section_path),
        )

    def long_note(
        self,
        owner: str,
        text: str,
        *,
        title: str | None = None,
        tags: Sequence[str] | None = None,
        source: str | None = None,
        metadata: dict[str, Any] | None = None,
        language: str | None = None,
        idempotency_key: str | None = None,
        keeps_one_entry: bool = False,
    ) -> LongNote | None:
        """A note longer than two chunks, stored as a document of chunks (None: short, add it as an entry).

        One vector for a long text would average its passages away; as chunks, each passage is
        found as if it had been stored alone; the document keeps the whole text, exactly as given
        (get_document with section "*"). Its source is the one given, else `note:` and the
        idempotency key or the text's hash: the same long text again writes nothing.
        `keeps_one_entry`: the caller asked for what only an entry has (an expiry, a supersede link).
        """
        if keeps_one_entry or len(text) <= 2 * self.settings.chunk_chars:
            return None
        body = check_body(text, self.settings.max_text_chars)
        if normalize(body) != body:
            # Chunks are spans of the normalized text: a text that normalizing would change (CR
            # line ends, trailing spaces, decomposed accents) stays one entry, exactly as given.
            return None
        key = check_idempotency_key(idempotency_key)
        named = check_source(source) or f"note:{key or content_hash(body).removeprefix('sha256:')[:32]}"
        done = self.ingest(
            owner,
            body.encode("utf-8", "surrogatepass"),
            source=named,
            format="markdown",
            title=title,
            language=language,
            metadata=metadata,
            tags=tags,
        )
        return LongNote(done, self.store.chunks(owner, done.document.id)[0])

    # -- reading ------------------------------------------------------------------------------

    def get(self, owner: str, document_id: str | uuid.UUID, *, include_deleted: bool = False) -> Document:
        """One document by id."""
        return self.store.get(owner, parse_id(document_id), include_deleted=include_deleted)

    def text(self, owner: str, document_id: str | uuid.UUID) -> str:
        """A document's whole normalized text (every chunk is a span of it)."""
        return self.store.text(owner, parse_id(document_id))

    def outline(self, owner: str, document_id: str | uuid.UUID) -> tuple[Document, list[Section]]:
        """A document and its sections, each with its chunks in document order."""
        document = self.get(owner, document_id)
        sections: list[Section] = []
        for entry in self.store.chunks(owner, document.id):
            path = list(entry.section_path or [])
            if sections and sections[-1].path == path:
                sections[-1].chunks.append(entry)
            else:
                sections.append(Section(path, [entry]))
        return document, sections

    def list(
        self,
        owner: str,
        *,
        source_prefix: str | None = None,
        version: str | None = None,
        include_deleted: bool = False,
        limit: int = 50,
        offset: int = 0,
    ) -> list[Document]:
        """Documents by source then version."""
        check_limit(limit, "limit", MAX_LIST_LIMIT)
        if not isinstance(offset, int) or not 0 <= offset <= 1_000_000:
            raise InvalidInputError("offset", "must be an integer between 0 and 1000000")
        return self.store.list(
            owner,
            source_prefix=check_source(source_prefix, "source_prefix"),
            version=check_version(version),
            include_deleted=include_deleted,
            limit=limit,
            offset=offset,
        )

    def delete(self, owner: str, document_id: str | uuid.UUID) -> Document:
        """Soft-delete a document with its chunks (restorable)."""
        return self.store.delete(owner, parse_id(document_id))

    def restore(self, owner: str, document_id: str | uuid.UUID) -> Document:
        """Bring back a deleted document and the chunks its delete took."""
        return self.store.restore(owner, parse_id(document_id))
