"""The MCP server: instructions, authentication, the tools, and the health and metrics routes."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import anyio.to_thread
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp_types import CallToolResult, InputRequiredResult, TextContent
from mcp_types import Tool as MCPTool
from pydantic import AnyHttpUrl, ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from pgrecall import __version__
from pgrecall.mcp.activity_tools import register_activity_tools
from pgrecall.mcp.auth import SCOPE, DatabaseTokenVerifier
from pgrecall.mcp.document_tools import register_document_tools
from pgrecall.mcp.entry_tools import register_entry_tools
from pgrecall.mcp.errors import argument_errors
from pgrecall.mcp.link_tools import register_link_tools
from pgrecall.mcp.notifications import OwnerScopedBus
from pgrecall.mcp.observability import Metrics, rejected
from pgrecall.mcp.prompts import register_prompts
from pgrecall.mcp.resources import register_resources
from pgrecall.mcp.retrieval_tools import register_retrieval_tools
from pgrecall.mcp.runtime import Runtime
from pgrecall.mcp.text_arguments import preserve_text_arguments

INSTRUCTIONS = """\
pgrecall is a long-term memory and knowledge store. Save durable facts, decisions, preferences
and documents with add_entry; find them later with search (natural-language questions in any
language work; no language parameter is needed). Cite what you use by id and content_hash.
Prefer update_entry over adding a near-duplicate: add_entry reports similar existing entries.
When a new entry replaces an old one, pass supersedes=<old id> (the old one then drops out of
search); give short-lived facts an expires_at. Link related entries with link_entries
(depends_on, part_of, contradicts, …) and follow the links with get_related.
Resources pgrecall://stats, tags, recent and entry/{id} give an overview; prompts guide recall and review.
"""


# Keywords that constrain one JSON type only: beside a null they need no anyOf of their own.
_TYPED_KEYWORDS = frozenset(
    {
        "type", "enum", "const", "format", "pattern", "minLength", "maxLength", "minimum", "maximum",
        "exclusiveMinimum", "exclusiveMaximum", "items", "minItems", "maxItems", "additionalProperties",
    }
)  # fmt: skip


def _nullable(node: dict[str, Any]) -> dict[str, Any]:
    """`anyOf: [X, {type: null}]` written as X with "null" added to its type (and enum): the same
    values accepted, in about half the bytes of pydantic's form for an optional argument."""
    branches = node.get("anyOf")
    if not (isinstance(branches, list) and len(branches) == 2 and branches[1] == {"type": "null"}):
        return node
    branch = branches[0]
    typed = isinstance(branch, dict) and isinstance(branch.get("type"), str)
    if not (typed and set(branch) <= _TYPED_KEYWORDS):
        return node
    merged = {key: value for key, value in node.items() if key != "anyOf"}
    if set(merged) & set(branch):
        return node
    merged.update(branch, type=[branch["type"], "null"])
    if "const" in branch:
        merged["enum"] = [merged.pop("const")]
    if "enum" in merged:
        merged["enum"] = [*merged["enum"], None]
    return merged


def _lean(node: Any) -> Any:
    """A JSON schema without pydantic's generated titles ("Top K" for top_k: the name says it),
    without `"default": null` (an optional property that is left out is null already), and with
    "or null" as a type list rather than an anyOf."""
    if isinstance(node, list):
        return [_lean(item) for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in ("properties", "$defs") and isinstance(value, dict):
            out[key] = {name: _lean(sub) for name, sub in value.items()}  # names, not keywords
        elif not ((key == "title" and isinstance(value, str)) or (key == "default" and value is None)):
            out[key] = _lean(value)
    return _nullable(out)


# What a model reads of tools/list; output schemas and annotations are for the client only.
MODEL_VISIBLE_FIELDS = ("name", "description", "inputSchema")


def model_visible_bytes(tools: Sequence[MCPTool]) -> int:
    """Bytes of the tools' names, descriptions and input schemas as the client receives them
    (compact UTF-8 JSON, aliases, no nulls): the context every conversation pays for the tools."""
    visible = []
    for tool in tools:
        wire = tool.model_dump(mode="json", by_alias=True, exclude_none=True)
        visible.append({key: wire[key] for key in MODEL_VISIBLE_FIELDS if key in wire})
    return len(json.dumps(visible, ensure_ascii=False, separators=(",", ":")).encode())


class PgrecallServer(MCPServer):
    """MCPServer with a smaller tool surface: lean schemas, one-line argument errors, compact text."""

    _listed: list[MCPTool] | None = None
    # Set by create_server: rejected arguments are counted there.
    metrics: Metrics | None = None

    def add_tool(self, fn: Any, *args: Any, **kwargs: Any) -> None:
        """Register a tool (and forget the computed list); its text arguments are never read as JSON."""
        self._listed = None
        super().add_tool(fn, *args, **kwargs)
        for tool in self._tool_manager.list_tools():
            tool.fn_metadata = preserve_text_arguments(tool.fn_metadata)

    def remove_tool(self, name: str) -> None:
        """Remove a tool (and forget the computed list)."""
        self._listed = None
        super().remove_tool(name)

    async def list_tools(self) -> list[MCPTool]:
        """The tools with lean schemas (computed once: tools are fixed at start)."""
        if self._listed is None:
            self._listed = [
                tool.model_copy(
                    update={
                        "input_schema": _lean(tool.input_schema),
                        "output_schema": _lean(tool.output_schema) if tool.output_schema else None,
                    }
                )
                for tool in await super().list_tools()
            ]
        return self._listed

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Any = None
    ) -> CallToolResult | InputRequiredResult:
        """Call a tool: bad arguments read `<field>: <rule>`; the text is compact JSON."""
        try:
            result = await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if isinstance(exc, UnexpectedToolError) or not isinstance(exc.__cause__, ValidationError):
                raise
            tool = self._tool_manager.get_tool(name)
            message = argument_errors(exc.__cause__, tool.parameters if tool is not None else None)
            if self.metrics is not None and tool is not None:
                names = sorted({str(e["loc"][0]) for e in exc.__cause__.errors() if e["loc"]})
                rejected(self.metrics, name, names)
            # The cause stays: the SDK logs the rejected field names from it.
            raise ToolError(f"Error executing tool {name}: {message}") from exc.__cause__
        if (
            isinstance(result, CallToolResult)
            and result.structured_content is not None
            and not result.is_error
        ):
            # The SDK indents the text copy (~25% more bytes than compact); a client that reads the
            # text rather than structuredContent pays for every one of those bytes in its context.
            text = json.dumps(result.structured_content, ensure_ascii=False, separators=(",", ":"))
            result = result.model_copy(update={"content": [TextContent(type="text", text=text)]})
        return result


def create_server(
    runtime: Runtime, *, auth_base_url: str | None = None, read_paths: bool = False
) -> MCPServer:
    """An MCP server exposing pgrecall's tools over an already opened Runtime.

    `read_paths`: ingest_document may read server-side files under PGRECALL_INGEST_ROOTS (stdio
    only: the client is the local user; over HTTP a caller could read the server's files).

    With `auth_base_url` (the server's public http(s)://host:port), every HTTP request needs a
    bearer token from `pgrecall token create`, and each call acts as the token's owner.
    """
    auth_kwargs: dict[str, Any] = {}
    if auth_base_url is not None:
        auth_kwargs = {
            "token_verifier": DatabaseTokenVerifier(runtime.app.tokens),
            "auth": AuthSettings(
                issuer_url=AnyHttpUrl(auth_base_url),
                resource_server_url=AnyHttpUrl(f"{auth_base_url}/mcp"),
                required_scopes=[SCOPE],
            ),
        }
    bus = OwnerScopedBus()  # resource change events reach only the writing owner's listen streams
    server = PgrecallServer(
        "pgrecall",
        instructions=INSTRUCTIONS,
        version=__version__,
        warn_on_duplicate_tools=True,
        subscriptions=bus,
        **auth_kwargs,
    )
    server.metrics = runtime.metrics
    default_owner = runtime.settings.owner

    def current_owner() -> str:
        token = get_access_token()
        return token.subject if token is not None and token.subject else default_owner

    if not runtime.is_open:

        async def open_after_initialize(ctx: Any, call_next: Any) -> Any:
            # `initialize` is answered before anything heavy starts; the client's next message
            # (notifications/initialized, tools/list, …) starts opening the App in a thread.
            result = await call_next(ctx)
            if ctx.method != "initialize":
                runtime.start_opening()
            return result

        server.middleware.append(open_after_initialize)

    register_entry_tools(server, runtime, current_owner)
    register_retrieval_tools(server, runtime, current_owner)
    register_document_tools(server, runtime, current_owner, read_paths=read_paths)
    register_activity_tools(server, runtime, current_owner)
    register_link_tools(server, runtime, current_owner)
    register_resources(server, runtime, current_owner, bus)
    register_prompts(server, runtime, current_owner)

    auth_on = auth_base_url is not None

    def authenticated(request: Request) -> bool:
        # The SDK's AuthenticationMiddleware runs for every route and sets the user from the token.
        return not auth_on or bool(getattr(request.scope.get("user"), "is_authenticated", False))

    @server.custom_route("/healthz", methods=["GET"], include_in_schema=False)  # type: ignore[untyped-decorator]
    async def healthz(request: Request) -> Response:
        # Open for load balancers even when tokens are required; without a valid token the answer
        # is only the status code (no version, no error kind).
        detailed = authenticated(request)
        try:
            if not runtime.is_open:
                raise RuntimeError("the database is not open yet")
            await anyio.to_thread.run_sync(runtime.ping)
        except Exception as exc:
            body = {"status": "unavailable"} | ({"error": type(exc).__name__} if detailed else {})
            return JSONResponse(body, status_code=503)
        return JSONResponse({"status": "ok"} | ({"version": __version__} if detailed else {}))

    @server.custom_route("/metrics", methods=["GET"], include_in_schema=False)  # type: ignore[untyped-decorator]
    async def metrics(request: Request) -> Response:
        # Tool names, error kinds and volumes say who uses the store how: token holders only.
        if not authenticated(request):
            return JSONResponse(
                {"error": "invalid_token", "error_description": "a bearer token is required"},
                status_code=401,
                headers={"WWW-Authenticate": 'Bearer error="invalid_token"'},
            )
        return Response(runtime.metrics.exposition(), media_type="text/plain; version=0.0.4; charset=utf-8")

    return server
