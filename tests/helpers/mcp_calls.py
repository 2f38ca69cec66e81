"""Calling MCP tools in tests: one that must succeed, one that must fail."""

from __future__ import annotations

from typing import Any

from mcp import Client


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    """Call a tool that must succeed; return its structured content."""
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


async def call_error(client: Client, tool: str, **arguments: Any) -> str:
    """Call a tool that must fail; return its error text."""
    result = await client.call_tool(tool, arguments)
    assert result.is_error, result.structured_content
    text = result.content[0].text  # type: ignore[union-attr]
    assert isinstance(text, str)
    return text
