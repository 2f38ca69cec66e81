"""The link tools: link_entries, unlink_entries and get_related."""

# No `from __future__ import annotations`: the SDK evaluates tool signatures.

from collections.abc import Callable
from datetime import datetime
from typing import Annotated, Literal

from mcp.server.mcpserver import MCPServer
from pydantic import BaseModel, Field

from pgrecall.domain.links import DEFAULT_RELATION, MAX_LINK_NOTE_CHARS, MAX_RELATED_LIMIT, RELATIONS
from pgrecall.mcp import params as p
from pgrecall.mcp.errors import run_blocking
from pgrecall.mcp.observability import observe
from pgrecall.mcp.runtime import Runtime, runtime_tool

# The tokens say what they mean read as "from_id <relation> to_id"; relates_to is the catch-all.
_OTHER_RELATIONS = ", ".join(token for token in RELATIONS if token != DEFAULT_RELATION)
Relation = Annotated[
    str,
    Field(
        description=f"from_id <relation> to_id: {_OTHER_RELATIONS}, or {DEFAULT_RELATION} for anything "
        "else; any case, spaces for _.",
        max_length=80,
    ),
]
FromId = Annotated[str, Field(description="Entry id where the link starts.", max_length=64)]
ToId = Annotated[str, Field(description="Entry id the link points to.", max_length=64)]


class LinkOut(BaseModel):
    """A stored link."""

    from_id: str
    relation: str
    to_id: str
    note: str | None
    created_at: datetime


class LinkResult(BaseModel):
    """Result of link_entries."""

    link: LinkOut
    created: bool = Field(
        description="False when the same link already existed (kept once; a new note replaces)."
    )


class UnlinkResult(BaseModel):
    """Result of unlink_entries."""

    removed: list[str] = Field(description="Relations removed from from_id to to_id (empty: there was none).")


class RelatedOut(BaseModel):
    """An entry reached through links."""

    id: str
    title: str | None
    snippet: str
    kind: str
    content_hash: str
    relation: str
    direction: Literal["out", "in"] = Field(
        description="out: `via` links to this entry with `relation`; in: this entry links to `via`."
    )
    depth: int = Field(description="1: linked to the entry asked about; 2: linked to one of those.")
    via: str = Field(description="The entry whose link reached this one (the asked entry at depth 1).")
    note: str | None


class RelatedResult(BaseModel):
    """Result of get_related."""

    related: list[RelatedOut] = Field(description="Depth 1 first, newest links first within a depth.")


def register_link_tools(server: MCPServer, runtime: Runtime, current_owner: Callable[[], str]) -> None:
    """Register link_entries, unlink_entries and get_related on `server`."""

    @runtime_tool(server, runtime, annotations=p.annotations(idempotent=True))
    async def link_entries(
        from_id: FromId,
        to_id: ToId,
        relation: Relation,
        note: Annotated[
            str | None,
            Field(description=f"Why they are linked (≤ {MAX_LINK_NOTE_CHARS} chars).", max_length=4000),
        ] = None,
    ) -> LinkResult:
        """Link two live entries: from_id <relation> to_id (a task depends_on a decision).

        Linking twice keeps one link; a deleted entry's links are hidden until it is restored.
        """
        with observe(runtime.metrics, "link_entries"):
            link, created = await run_blocking(
                runtime.app.links.link, current_owner(), from_id, to_id, relation, note
            )
            return LinkResult(link=LinkOut(**link.__dict__), created=created)

    @runtime_tool(server, runtime, annotations=p.annotations(destructive=True, idempotent=True))
    async def unlink_entries(
        from_id: FromId,
        to_id: ToId,
        relation: Annotated[
            str | None,
            Field(
                description="Only this relation; omit: all links from from_id to to_id.",
                max_length=80,
            ),
        ] = None,
    ) -> UnlinkResult:
        """Remove links from from_id to to_id (one direction; the reverse links stay)."""
        with observe(runtime.metrics, "unlink_entries"):
            removed = await run_blocking(runtime.app.links.unlink, current_owner(), from_id, to_id, relation)
            return UnlinkResult(removed=removed)

    @runtime_tool(server, runtime, annotations=p.READ_ONLY)
    async def get_related(
        id: p.EntryId,
        relation: Annotated[
            str | None, Field(description="Only this relation; omit: all.", max_length=80)
        ] = None,
        direction: Annotated[
            Literal["out", "in", "both"],
            Field(
                description="out: entries it links to; in: entries linking to it; both.",
                json_schema_extra=p.OR_NULL,
            ),
            p.NULL_IS_DEFAULT,
        ] = "both",
        depth: Annotated[
            int,
            Field(
                description="1: direct links; 2: also the entries linked to those.",
                ge=1,
                le=2,
                json_schema_extra=p.OR_NULL,
            ),
            p.NULL_IS_DEFAULT,
        ] = 1,
        limit: Annotated[
            int,
            Field(
                description="At most this many entries.",
                ge=1,
                le=MAX_RELATED_LIMIT,
                json_schema_extra=p.OR_NULL,
            ),
            p.NULL_IS_DEFAULT,
        ] = 50,
    ) -> RelatedResult:
        """Entries linked to an entry, with the relation and its direction (live entries only)."""
        with observe(runtime.metrics, "get_related"):
            found = await run_blocking(
                runtime.app.links.related,
                current_owner(),
                id,
                relation=relation,
                direction=direction,
                depth=depth,
                limit=limit,
            )
            return RelatedResult(related=[RelatedOut(**r.__dict__) for r in found])
