"""The search tool (wired to the hybrid search service)."""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

from pgrecall.runtime import Runtime


def register_search_tools(server: MCPServer, runtime: Runtime) -> None:
    """Register search on `server`."""
    return None
