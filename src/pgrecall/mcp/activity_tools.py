"""The overview tools: what changed in a window (recent_activity) and which tags are in use (list_tags)."""

# No `from __future__ import annotations`: the SDK evaluates tool signatures.

from collections.abc import Callable
from datetime import datetime
from typing import Annotated

from mcp.server.mcpserver import MCPServer
from pydantic import BaseModel, Field

from pgrecall.domain.activity import MAX_ACTIVITY_LIMIT, MAX_TAG_LIMIT, MAX_TAG_PREFIX_CHARS
from pgrecall.mcp import params as p
from pgrecall.mcp.errors import run_blocking
from pgrecall.mcp.observability import observe
from pgrecall.mcp.runtime import Runtime, runtime_tool


class ActivityItem(BaseModel):
    """One change to an entry."""

    id: str
    title: str | None
    snippet: str | None = Field(default=None, description="Start of the text, for an untitled entry.")
    kind: str
    change: str = Field(
        description="added, updated (text, fields or a restore), deleted, or linked (this entry was "
        "linked to another: see `link`)."
    )
    at: datetime
    link: dict[str, str] | None = Field(
        default=None, description="For a linked change: the relation and the entry linked to (to_id)."
    )


class ActivityResult(BaseModel):
    """One page of recent_activity."""

    since: datetime = Field(description="Start of the window (UTC).")
    changes: list[ActivityItem] = Field(description="Newest first.")
    next_cursor: str | None = Field(description="Pass as cursor for the next page; null on the last.")


class TagCountOut(BaseModel):
    """A tag and its live entries."""

    tag: str
    entries: int


class TagsResult(BaseModel):
    """Result of list_tags."""

    tags: list[TagCountOut] = Field(description="Most used first (ties by name).")
    truncated: bool = Field(description="More tags match than `limit`.")


def register_activity_tools(server: MCPServer, runtime: Runtime, current_owner: Callable[[], str]) -> None:
    """Register recent_activity and list_tags on `server`."""

    @runtime_tool(server, runtime, annotations=p.READ_ONLY)
    async def recent_activity(
        since: Annotated[
            str,
            Field(
                description="ISO 8601 time (no offset = UTC) or duration back from now: 30m, 24h, 7d, "
                "2w (≤ 3650 days).",
                max_length=64,
            ),
        ],
        limit: Annotated[
            int,
            Field(
                description="Page size.",
                ge=1,
                le=MAX_ACTIVITY_LIMIT,
                json_schema_extra=p.OR_NULL,
            ),
            p.NULL_IS_DEFAULT,
        ] = 20,
        cursor: Annotated[str | None, Field(description="next_cursor of the last page.")] = None,
    ) -> ActivityResult:
        """Entries added, updated, deleted or linked since a time, newest first, paged.

        An entry shows its creation, latest live update and deletion (no edit history).
        """
        with observe(runtime.metrics, "recent_activity") as call:
            page = await run_blocking(
                runtime.app.activity.since, current_owner(), since, limit=limit, cursor=cursor
            )
            call.fields["count"] = len(page.changes)
            return ActivityResult(
                since=page.since,
                changes=[
                    ActivityItem(
                        id=str(c.id),
                        title=c.title,
                        snippet=c.snippet or None,
                        kind=c.kind,
                        change=c.change,
                        at=c.at,
                        link={"relation": c.relation, "to_id": str(c.to_id)} if c.relation else None,
                    )
                    for c in page.changes
                ],
                next_cursor=page.next_cursor,
            )

    @runtime_tool(server, runtime, annotations=p.READ_ONLY)
    async def list_tags(
        prefix: Annotated[
            str | None,
            Field(
                description="Tags starting with this (any case).",
                max_length=MAX_TAG_PREFIX_CHARS,
            ),
        ] = None,
        limit: Annotated[
            int,
            Field(
                description="At most this many.",
                ge=1,
                le=MAX_TAG_LIMIT,
                json_schema_extra=p.OR_NULL,
            ),
            p.NULL_IS_DEFAULT,
        ] = 100,
    ) -> TagsResult:
        """Tags on live entries with their counts, most used first: reuse them when tagging."""
        with observe(runtime.metrics, "list_tags") as call:
            found = await run_blocking(runtime.app.activity.tags_with_prefix, current_owner(), prefix, limit)
            call.fields["count"] = len(found.tags)
            return TagsResult(
                tags=[TagCountOut(tag=t.tag, entries=t.entries) for t in found.tags],
                truncated=found.truncated,
            )
