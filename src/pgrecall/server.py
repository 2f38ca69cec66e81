"""The MCP server: the tools assistants call. Thin: validate, call the services, shape the output."""

# No `from __future__ import annotations` here: the SDK evaluates tool signatures, and the
# parameter descriptions refer to values of create_server's closure.

from datetime import datetime
from typing import Annotated, Any

import anyio.to_thread
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations
from pydantic import AnyHttpUrl, Field
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from pgrecall import __version__
from pgrecall.auth import SCOPE, DatabaseTokenVerifier
from pgrecall.models import (
    AddEntryResult,
    DeleteResult,
    EntryOut,
    EntrySummary,
    LanguageOut,
    ListResult,
    SimilarEntry,
    StatsResult,
    WriteResult,
)
from pgrecall.observability import observe
from pgrecall.runtime import Runtime
from pgrecall.server_common import checked, run_blocking
from pgrecall.server_search import register_search_tools
from pgrecall.service import MAX_LIST_LIMIT, Written
from pgrecall.store.entries import ListFilters
from pgrecall.store.tokens import TokenStore
from pgrecall.validation import MAX_VERSION, as_utc, check_cursor, check_source

INSTRUCTIONS = """\
pgrecall is a long-term memory and knowledge store. Save durable facts, decisions, preferences
and documents with add_entry; find them later with search (natural-language questions in any
language work; no language parameter is needed). Cite what you use by id and content_hash.
Prefer update_entry over adding a near-duplicate: add_entry reports similar existing entries.
"""

_KIND_DOC = "Kind token: note (default), fact, decision, preference, doc, … (letters, digits, _ . : -)."
_LANG_DOC = (
    "ISO 639-1 code of the text's language (de, fr, es, ru, en, …) or 'simple' for no stemming. "
    "Omit it: the language is detected."
)


def _language(written: Written) -> LanguageOut:
    return LanguageOut(
        regconfig=written.language.regconfig, iso=written.language.iso, how=written.language.how
    )


def create_server(runtime: Runtime, *, auth_base_url: str | None = None) -> MCPServer:
    """An MCP server exposing pgrecall's tools over an already opened Runtime.

    With `auth_base_url` (the server's public http(s)://host:port), every HTTP request needs a
    bearer token from `pgrecall token create`, and each call acts as the token's owner.
    """
    auth_kwargs: dict[str, Any] = {}
    if auth_base_url is not None:
        auth_kwargs = {
            "token_verifier": DatabaseTokenVerifier(TokenStore(runtime.pool)),
            "auth": AuthSettings(
                issuer_url=AnyHttpUrl(auth_base_url),
                resource_server_url=AnyHttpUrl(f"{auth_base_url}/mcp"),
                required_scopes=[SCOPE],
            ),
        }
    server = MCPServer(
        "pgrecall",
        instructions=INSTRUCTIONS,
        version=__version__,
        warn_on_duplicate_tools=True,
        **auth_kwargs,
    )
    app = runtime.app
    max_text = app.settings.max_text_chars
    default_owner = app.settings.owner

    def current_owner() -> str:
        token = get_access_token()
        return token.subject if token is not None and token.subject else default_owner

    @server.tool(annotations=ToolAnnotations(destructive_hint=False, idempotent_hint=False))
    async def add_entry(
        text: Annotated[
            str,
            Field(
                description=f"The content to remember, verbatim (1-{max_text} characters). Stored as given."
            ),
        ],
        title: Annotated[str | None, Field(description="Short title (≤ 500 characters).")] = None,
        tags: Annotated[
            list[str] | None, Field(description="Tags for filtering (≤ 64, each ≤ 100 chars).")
        ] = None,
        source: Annotated[
            str | None, Field(description="Where it came from: URL, file path, conversation id (≤ 2000).")
        ] = None,
        kind: Annotated[str | None, Field(description=_KIND_DOC)] = None,
        metadata: Annotated[
            dict[str, Any] | None, Field(description="Free-form JSON object (≤ 64 KiB, ≤ 10 levels deep).")
        ] = None,
        language: Annotated[str | None, Field(description=_LANG_DOC)] = None,
        idempotency_key: Annotated[
            str | None,
            Field(
                description="Any unique string (≤ 200) for this write. Retrying with the same key never "
                "stores a second entry; the first one is returned."
            ),
        ] = None,
    ) -> AddEntryResult:
        """Store a new entry (a fact, decision, note or document) in long-term memory.

        Use it for information worth finding again later. The entry is stemmed in its own
        language (detected when `language` is omitted) and embedded for semantic search.
        Check `similar`: when an existing entry says nearly the same, prefer update_entry.
        """
        with observe(runtime.metrics, "add_entry") as call:
            written = await run_blocking(
                app.entries.add,
                current_owner(),
                text=text,
                title=title,
                tags=tags,
                source=source,
                kind=kind,
                metadata=metadata,
                language=language,
                idempotency_key=idempotency_key,
            )
            similar: list[SimilarEntry] = []
            if not written.replay:
                similar = await run_blocking(runtime.similar_entries, written.entry)
            if written.vector_pending:
                runtime.reembed.poke(written.entry.owner)
            call.fields.update(
                replay=written.replay, vector_pending=written.vector_pending, similar=len(similar)
            )
            entry = written.entry
            return AddEntryResult(
                id=str(entry.id),
                content_hash=entry.content_hash,
                language=_language(written),
                created_at=entry.created_at,
                version=entry.version,
                vector_pending=written.vector_pending,
                idempotent_replay=written.replay,
                similar=similar,
            )

    @server.tool(annotations=ToolAnnotations(destructive_hint=False, idempotent_hint=True))
    async def update_entry(
        id: Annotated[str, Field(description="Id of the entry to change (UUID).")],
        text: Annotated[str | None, Field(description="New full text; omit to keep it.")] = None,
        title: Annotated[str | None, Field(description='New title; omit to keep it, "" to clear it.')] = None,
        tags: Annotated[list[str] | None, Field(description="Replaces all tags; omit to keep them.")] = None,
        source: Annotated[str | None, Field(description='New source; omit to keep, "" to clear.')] = None,
        kind: Annotated[str | None, Field(description=_KIND_DOC)] = None,
        metadata: Annotated[
            dict[str, Any] | None, Field(description="Replaces the metadata object; omit to keep it.")
        ] = None,
        language: Annotated[
            str | None, Field(description=_LANG_DOC + " Changing it re-stems the entry.")
        ] = None,
        expected_version: Annotated[
            int | None,
            Field(
                description="Only update if the entry is still at this version (optimistic locking).",
                ge=1,
                le=MAX_VERSION,
            ),
        ] = None,
    ) -> WriteResult:
        """Change an existing entry; only the fields you pass change.

        A new text or title gets a new content_hash and a new vector; `version` goes up by one
        on every update. Use it instead of adding a near-duplicate.
        """
        with observe(runtime.metrics, "update_entry"):
            extra: dict[str, Any] = {}
            if title is not None:
                extra["title"] = title
            if source is not None:
                extra["source"] = source
            written = await run_blocking(
                app.entries.update,
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
            return WriteResult(
                entry=EntryOut.full(written.entry, runtime.active_model), language=_language(written)
            )

    @server.tool(annotations=ToolAnnotations(destructive_hint=True, idempotent_hint=False))
    async def delete_entry(
        id: Annotated[str, Field(description="Id of the entry to delete (UUID).")],
    ) -> DeleteResult:
        """Soft-delete an entry: it disappears from search and lists; restore_entry brings it back."""
        with observe(runtime.metrics, "delete_entry"):
            entry = await run_blocking(app.entries.delete, current_owner(), id)
            assert entry.deleted_at is not None
            return DeleteResult(id=str(entry.id), deleted_at=entry.deleted_at)

    @server.tool(annotations=ToolAnnotations(destructive_hint=False, idempotent_hint=False))
    async def restore_entry(
        id: Annotated[str, Field(description="Id of a soft-deleted entry (UUID).")],
    ) -> WriteResult:
        """Undo delete_entry: the entry is searchable and listed again, unchanged."""
        with observe(runtime.metrics, "restore_entry"):
            entry = await run_blocking(app.entries.restore, current_owner(), id)
            written = app.entries.as_kept(entry)
            return WriteResult(entry=EntryOut.full(entry, runtime.active_model), language=_language(written))

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    async def get_entry(
        id: Annotated[str, Field(description="Entry id (UUID), e.g. from search or list_entries.")],
    ) -> EntryOut:
        """Fetch one entry with its full text and metadata (search returns only snippets)."""
        with observe(runtime.metrics, "get_entry"):
            entry = await run_blocking(app.entries.get, current_owner(), id)
            return EntryOut.full(entry, runtime.active_model)

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    async def list_entries(
        kind: Annotated[str | None, Field(description="Only this kind.")] = None,
        source: Annotated[str | None, Field(description="Only entries with exactly this source.")] = None,
        tags_all: Annotated[
            list[str] | None, Field(description="Only entries having all these tags.")
        ] = None,
        tags_any: Annotated[
            list[str] | None, Field(description="Only entries having at least one of these.")
        ] = None,
        language: Annotated[str | None, Field(description="Only this language (ISO 639-1 code).")] = None,
        created_after: Annotated[
            datetime | None, Field(description="Created at or after (ISO 8601; no offset means UTC).")
        ] = None,
        created_before: Annotated[
            datetime | None, Field(description="Created before (ISO 8601; no offset means UTC).")
        ] = None,
        include_deleted: Annotated[bool, Field(description="Also list soft-deleted entries.")] = False,
        limit: Annotated[
            int, Field(description=f"Page size, 1-{MAX_LIST_LIMIT}.", ge=1, le=MAX_LIST_LIMIT)
        ] = 20,
        cursor: Annotated[str | None, Field(description="next_cursor from the previous page.")] = None,
    ) -> ListResult:
        """Browse entries newest first, with filters and stable cursor pagination (not ranked: use search)."""
        with observe(runtime.metrics, "list_entries") as call:
            # Checked here because the list path passes them to SQL as they come: a NUL in
            # source fails inside PostgreSQL, and an overlong cursor is decoded recursively.
            clean_source, clean_cursor = checked(check_source, source), checked(check_cursor, cursor)
            filters = ListFilters(
                kind=kind,
                source=clean_source,
                language=language,
                tags_all=tags_all,
                tags_any=tags_any,
                created_after=as_utc(created_after),
                created_before=as_utc(created_before),
                include_deleted=include_deleted,
            )
            page = await run_blocking(
                app.entries.list, current_owner(), filters, limit=limit, cursor=clean_cursor
            )
            call.fields["count"] = len(page.entries)
            return ListResult(
                entries=[EntrySummary.of(e, runtime.active_model) for e in page.entries],
                next_cursor=page.next_cursor,
            )

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    async def stats() -> StatsResult:
        """Counts of entries by language and kind, pending vectors, embedding model, schema revision."""
        with observe(runtime.metrics, "stats"):
            data = await run_blocking(app.stats, current_owner())
            runtime.metrics.pending_vectors.set(data["pending_vectors"])
            return StatsResult(**data)

    register_search_tools(server, runtime, current_owner)

    @server.custom_route("/healthz", methods=["GET"], include_in_schema=False)  # type: ignore[untyped-decorator]
    async def healthz(request: Request) -> Response:
        try:
            await anyio.to_thread.run_sync(runtime.ping)
        except Exception as exc:
            return JSONResponse({"status": "unavailable", "error": type(exc).__name__}, status_code=503)
        return JSONResponse({"status": "ok", "version": __version__})

    @server.custom_route("/metrics", methods=["GET"], include_in_schema=False)  # type: ignore[untyped-decorator]
    async def metrics(request: Request) -> Response:
        return Response(runtime.metrics.exposition(), media_type="text/plain; version=0.0.4; charset=utf-8")

    return server
