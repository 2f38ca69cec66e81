"""The MCP resources: an owner's stats, tags and recent changes, and each entry by URI."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS
from pydantic import BaseModel

from pgrecall.mcp.document_schemas import DocumentDetailOut
from pgrecall.mcp.errors import run_blocking
from pgrecall.mcp.notifications import (
    DOCUMENT_TEMPLATE,
    ENTRY_TEMPLATE,
    RECENT_URI,
    STATS_URI,
    TAGS_URI,
    ChangeNotifier,
    OwnerScopedBus,
)
from pgrecall.mcp.runtime import Runtime
from pgrecall.mcp.schemas import EntryDetailOut, StatsResult

T = TypeVar("T")
JSON = "application/json"


class TagOut(BaseModel):
    """A tag and how many live entries carry it."""

    tag: str
    entries: int


class TagsOut(BaseModel):
    """pgrecall://tags."""

    tags: list[TagOut]
    truncated: bool


class ChangeOut(BaseModel):
    """One recent change to an entry."""

    id: str
    title: str | None
    snippet: str | None  # only for an untitled entry: the title already says which entry it is
    kind: str
    change: str
    at: datetime


class RecentOut(BaseModel):
    """pgrecall://recent."""

    changes: list[ChangeOut]


def _compact(model: BaseModel, *, exclude_none: bool = False) -> str:
    return model.model_dump_json(exclude_none=exclude_none)


async def _read(runtime: Runtime, read: Callable[[], T]) -> T:
    """Wait for the App, run a blocking read; a caller's mistake becomes INVALID_PARAMS, naming it."""
    try:
        await runtime.wait_open()
        return await run_blocking(read)
    except ToolError as exc:
        if getattr(exc, "error_kind", None) in ("invalid_input", "not_found"):
            raise MCPError(INVALID_PARAMS, str(exc)) from exc
        raise ResourceError(str(exc)) from exc


def register_resources(
    server: MCPServer, runtime: Runtime, current_owner: Callable[[], str], bus: OwnerScopedBus
) -> None:
    """Register the resources on `server`, and the resources/subscribe notifications after writes."""
    ChangeNotifier(bus).install(server)

    @server.resource(
        STATS_URI,
        name="stats",
        title="Memory statistics",
        description="Counts of your entries by language and kind, pending vectors, embedding model.",
        mime_type=JSON,
    )
    async def stats() -> str:
        owner = current_owner()
        figures = await _read(runtime, lambda: runtime.app.entries.stats(owner))
        return _compact(StatsResult.of(figures))

    @server.resource(
        TAGS_URI,
        name="tags",
        title="Tags in use",
        description="Your tags with the number of live entries carrying each, most used first.",
        mime_type=JSON,
    )
    async def tags() -> str:
        owner = current_owner()
        found = await _read(runtime, lambda: runtime.app.activity.tags(owner))
        return _compact(
            TagsOut(
                tags=[TagOut(tag=t.tag, entries=t.entries) for t in found.tags], truncated=found.truncated
            )
        )

    @server.resource(
        RECENT_URI,
        name="recent",
        title="Recent changes",
        description="Your last 20 changes (added, updated, deleted), newest first.",
        mime_type=JSON,
    )
    async def recent() -> str:
        owner = current_owner()
        changes = await _read(runtime, lambda: runtime.app.activity.recent(owner))
        return _compact(
            RecentOut(
                changes=[
                    ChangeOut(
                        id=str(c.id),
                        title=c.title,
                        snippet=c.snippet or None,
                        kind=c.kind,
                        change=c.change,
                        at=c.at,
                    )
                    for c in changes
                ]
            ),
            exclude_none=True,
        )

    @server.resource(
        ENTRY_TEMPLATE,
        name="entry",
        title="Entry",
        description="One of your entries with its full text and metadata (the same as get_entry).",
        mime_type=JSON,
    )
    async def entry(id: str) -> str:
        owner = current_owner()
        found = await _read(runtime, lambda: runtime.app.entries.get(owner, id))
        chain = await _read(runtime, lambda: runtime.app.entries.chain(owner, found.id))
        return _compact(EntryDetailOut.detail(found, runtime.active_model, chain))

    @server.resource(
        DOCUMENT_TEMPLATE,
        name="document",
        title="Document",
        description="One of your documents with its outline (the same as get_document).",
        mime_type=JSON,
    )
    async def document(id: str) -> str:
        owner = current_owner()
        found, sections = await _read(runtime, lambda: runtime.app.documents.outline(owner, id))
        return _compact(DocumentDetailOut.of(found, sections, None))
