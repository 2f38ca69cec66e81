"""The search tool (wired to the hybrid search service)."""

from __future__ import annotations

from collections.abc import Callable

from mcp.server.mcpserver import MCPServer

from pgrecall.runtime import Runtime


def register_search_tools(server: MCPServer, runtime: Runtime, current_owner: Callable[[], str]) -> None:
    """Register search on `server`."""
    return None
