"""The entry tools: add, update, delete, restore, get, list, stats."""

# No `from __future__ import annotations`: the SDK evaluates tool signatures.

from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any

from mcp.server.mcpserver import MCPServer
from pydantic import Field

from pgrecall.domain.entries import EntryFilters
from pgrecall.mcp import params as p
from pgrecall.mcp.errors import run_blocking
from pgrecall.mcp.notifications import announce_write
from pgrecall.mcp.observability import observe
from pgrecall.mcp.runtime import Runtime, runtime_tool

if TYPE_CHECKING:
    from pgrecall.services.documents import LongNote
from pgrecall.mcp.schemas import (
    AddEntryResult,
    DeleteResult,
    EntryDetailOut,
    EntryOut,
    EntrySummary,
    LanguageOut,
    ListResult,
    SimilarEntry,
    StatsResult,
    WriteResult,
)


def register_entry_tools(server: MCPServer, runtime: Runtime, current_owner: Callable[[], str]) -> None:
    """Register the entry tools on `server`."""
    max_text = runtime.settings.max_text_chars

    async def _long_note_result(long: "LongNote", fields: dict[str, Any]) -> AddEntryResult:
        done, first = long.ingested, long.first
        if done.vector_pending:
            runtime.reembed.poke(first.owner)
        if done.written:
            await announce_write(str(first.id), document_id=str(done.document.id))
        fields.update(document=True, chunks=done.document.chunk_count)
        assert done.language is not None
        return AddEntryResult(
            id=str(first.id),
            content_hash=done.document.content_hash,
            language=LanguageOut.of(done.language),
            created_at=done.document.created_at,
            version=1,
            vector_pending=done.vector_pending > 0,
            idempotent_replay=done.status == "unchanged",
            similar=[],
            document_id=str(done.document.id),
            chunks=done.document.chunk_count,
        )

    @runtime_tool(server, runtime, annotations=p.annotations())
    async def add_entry(
        text: Annotated[
            str,
            Field(description=f"The content to remember, stored verbatim (1-{max_text} chars)."),
        ],
        title: p.Title = None,
        tags: p.Tags = None,
        source: p.Source = None,
        kind: p.Kind = None,
        metadata: p.Metadata = None,
        language: p.Language = None,
        idempotency_key: p.IdempotencyKey = None,
        expires_at: p.ExpiresAt = None,
        supersedes: p.Supersedes = None,
    ) -> AddEntryResult:
        """Store a fact, decision, note or document worth finding again in long-term memory.

        If `similar` shows an entry saying nearly the same, prefer update_entry.
        """
        with observe(runtime.metrics, "add_entry") as call:
            long = await run_blocking(
                runtime.app.documents.long_note,
                current_owner(),
                text,
                title=title,
                tags=tags,
                source=source,
                metadata=metadata,
                language=language,
                idempotency_key=idempotency_key,
                keeps_one_entry=bool(expires_at or supersedes),
            )
            if long is not None:
                return await _long_note_result(long, call.fields)
            written = await run_blocking(
                runtime.app.entries.add,
                current_owner(),
                text=text,
                title=title,
                tags=tags,
                source=source,
                kind=kind,
                metadata=metadata,
                language=language,
                idempotency_key=idempotency_key,
                expires_at=expires_at,
                supersedes=supersedes,
            )
            similar: list[SimilarEntry] = []
            if not written.replay:
                found = await run_blocking(
                    runtime.app.duplicates.similar_entries, written.entry, written.vector
                )
                similar = [SimilarEntry.of(s) for s in found]
            if written.vector_pending:
                runtime.reembed.poke(written.entry.owner)
            if not written.replay:
                await announce_write(str(written.entry.id))
            call.fields.update(
                replay=written.replay, vector_pending=written.vector_pending, similar=len(similar)
            )
            entry = written.entry
            return AddEntryResult(
                id=str(entry.id),
                content_hash=entry.content_hash,
                language=LanguageOut.of(written.language),
                created_at=entry.created_at,
                version=entry.version,
                vector_pending=written.vector_pending,
                idempotent_replay=written.replay,
                similar=similar,
            )

    # Not idempotent: each call bumps `version` (and expected_version makes a repeat fail).
    @runtime_tool(server, runtime, annotations=p.annotations())
    async def update_entry(
        id: Annotated[str, Field(description="Entry to change (UUID or 8+ hex digits of it).")],
        text: Annotated[str | None, Field(description="New full text; omit to keep.")] = None,
        title: Annotated[str | None, Field(description='New title; omit to keep, "" to clear.')] = None,
        tags: p.ReplacementTags = None,
        source: Annotated[str | None, Field(description='New source; omit to keep, "" to clear.')] = None,
        kind: p.Kind = None,
        metadata: Annotated[
            dict[str, Any] | None, Field(description="Replaces the metadata; omit to keep.")
        ] = None,
        language: Annotated[str | None, Field(description=p.LANGUAGE_DOC + " A change re-stems.")] = None,
        expected_version: p.ExpectedVersion = None,
        expires_at: Annotated[
            str | None,
            Field(
                description='New expiry (ISO 8601 time or duration like "30d"); omit to keep, "" to clear.',
                max_length=64,
            ),
        ] = None,
        supersedes: Annotated[
            str | None,
            Field(
                description='Id of an entry this one replaces; omit to keep, "" to clear.',
                max_length=64,
            ),
        ] = None,
    ) -> WriteResult:
        """Change an entry; only the fields passed change, and `version` goes up on every call.

        content_hash covers the text: only a new text changes it (a title change keeps it).
        """
        with observe(runtime.metrics, "update_entry"):
            extra: dict[str, Any] = {}
            if title is not None:
                extra["title"] = title
            if source is not None:
                extra["source"] = source
            if expires_at is not None:
                extra["expires_at"] = expires_at
            if supersedes is not None:
                extra["supersedes"] = supersedes
            written = await run_blocking(
                runtime.app.entries.update,
                current_owner(),
                id,
                text=text,
                tags=tags,
                kind=kind,
                metadata=metadata,
                language=language,
                expected_version=expected_version,
                **extra,
            )
            if written.vector_pending:
                runtime.reembed.poke(written.entry.owner)
            await announce_write(str(written.entry.id))
            return WriteResult(
                entry=EntryOut.full(written.entry, runtime.active_model),
                language=LanguageOut.of(written.language),
            )

    # A repeat changes nothing (it fails: no live entry), so both are idempotent.
    @runtime_tool(server, runtime, annotations=p.annotations(destructive=True, idempotent=True))
    async def delete_entry(
        id: Annotated[str, Field(description="Entry to delete (UUID or 8+ hex digits of it).")],
    ) -> DeleteResult:
        """Soft-delete an entry: gone from search and lists until restore_entry."""
        with observe(runtime.metrics, "delete_entry"):
            entry = await run_blocking(runtime.app.entries.delete, current_owner(), id)
            assert entry.deleted_at is not None
            await announce_write(str(entry.id))
            return DeleteResult(id=str(entry.id), deleted_at=entry.deleted_at)

    @runtime_tool(server, runtime, annotations=p.annotations(idempotent=True))
    async def restore_entry(
        id: Annotated[str, Field(description="A soft-deleted entry (UUID or 8+ hex digits of it).")],
    ) -> WriteResult:
        """Undo delete_entry: the entry is searchable and listed again, unchanged."""
        with observe(runtime.metrics, "restore_entry"):
            entry = await run_blocking(runtime.app.entries.restore, current_owner(), id)
            written = runtime.app.entries.as_kept(entry)
            await announce_write(str(entry.id))
            return WriteResult(
                entry=EntryOut.full(entry, runtime.active_model), language=LanguageOut.of(written.language)
            )

    @runtime_tool(server, runtime, annotations=p.READ_ONLY)
    async def get_entry(id: p.EntryId) -> EntryDetailOut:
        """One entry in full (search gives snippets), with supersedes_chain (older entries it
        replaces) and superseded_by (newer ones), nearest first."""
        with observe(runtime.metrics, "get_entry"):
            owner = current_owner()
            entry = await run_blocking(runtime.app.entries.get, owner, id)
            older, newer = await run_blocking(runtime.app.entries.chain, owner, entry.id)
            return EntryDetailOut.detail(entry, runtime.active_model, (older, newer))

    @runtime_tool(server, runtime, annotations=p.READ_ONLY)
    async def list_entries(
        kind: p.KindFilter = None,
        source: p.SourceFilter = None,
        source_prefix: p.SourcePrefix = None,
        document: p.DocumentFilter = None,
        version: p.VersionFilter = None,
        tags_all: p.TagsAll = None,
        tags_any: p.TagsAny = None,
        language: p.LanguageFilter = None,
        created_after: p.After = None,
        created_before: p.Before = None,
        updated_after: p.After = None,
        updated_before: p.Before = None,
        include_deleted: p.IncludeDeleted = False,
        include_superseded: p.IncludeSuperseded = False,
        include_expired: p.IncludeExpired = False,
        limit: p.ListLimit = 20,
        cursor: Annotated[str | None, Field(description="next_cursor of the last page.")] = None,
    ) -> ListResult:
        """Browse entries newest first, filtered, cursor-paged (unranked: to find, use search)."""
        with observe(runtime.metrics, "list_entries") as call:
            filters = EntryFilters(
                kind=kind,
                source=source,
                source_prefix=source_prefix,
                document=document,
                version=version,
                language=language,
                tags_all=tags_all,
                tags_any=tags_any,
                created_after=created_after,
                created_before=created_before,
                updated_after=updated_after,
                updated_before=updated_before,
                include_deleted=include_deleted,
                include_superseded=include_superseded,
                include_expired=include_expired,
            )
            page = await run_blocking(
                runtime.app.entries.list, current_owner(), filters, limit=limit, cursor=cursor
            )
            call.fields["count"] = len(page.entries)
            return ListResult(
                entries=[EntrySummary.of(e, runtime.active_model) for e in page.entries],
                next_cursor=page.next_cursor,
            )

    @runtime_tool(server, runtime, annotations=p.READ_ONLY)
    async def stats() -> StatsResult:
        """Entry counts by language and kind, pending vectors, embedding model, schema revision."""
        with observe(runtime.metrics, "stats"):
            figures = await run_blocking(runtime.app.entries.stats, current_owner())
            runtime.metrics.pending_vectors.set(figures.pending_vectors)
            return StatsResult.of(figures)
