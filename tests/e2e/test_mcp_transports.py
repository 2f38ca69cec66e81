"""A real `pgrecall serve` subprocess, over stdio and over streamable HTTP."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from pgrecall.config import Settings
from tests.helpers.mcp_calls import call
from tests.helpers.subprocess_server import running_http_server
from tests.helpers.subprocess_server import server_env as _env

pytestmark = pytest.mark.anyio


async def _exercise(client: Client) -> None:
    names = {t.name for t in (await client.list_tools()).tools}
    assert {"add_entry", "get_entry", "list_entries", "stats"} <= names
    added = await call(client, "add_entry", text="Die Häuser am See sind im Winter kalt und still.")
    assert added["language"]["regconfig"] == "german"
    fetched = await call(client, "get_entry", id=added["id"])
    assert fetched["content_hash"] == added["content_hash"]
    bad = await client.call_tool("get_entry", {"id": "not-a-uuid"})
    assert bad.is_error and "id: must be a UUID" in bad.content[0].text  # type: ignore[union-attr]


async def test_stdio_subprocess(settings: Settings) -> None:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "pgrecall", "serve"], env=_env(settings)
    )
    async with Client(params) as client:
        await _exercise(client)


def test_stdio_stdout_carries_only_protocol(settings: Settings) -> None:
    messages = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "raw-test", "version": "0"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "stats", "arguments": {}}},
    ]
    proc = subprocess.Popen(
        [sys.executable, "-m", "pgrecall", "serve", "--log-level", "DEBUG"],
        env=_env(settings),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    answers: dict[int, dict[str, object]] = {}
    lines: list[str] = []
    for message in messages:
        proc.stdin.write(json.dumps(message) + "\n")
        proc.stdin.flush()
        if "id" in message:
            while message["id"] not in answers:
                line = proc.stdout.readline()
                assert line, "server closed stdout early"
                lines.append(line)
                parsed = json.loads(line)  # every stdout line must be JSON-RPC
                assert parsed["jsonrpc"] == "2.0"
                if "id" in parsed:
                    answers[parsed["id"]] = parsed
    proc.stdin.close()
    rest = proc.stdout.read()
    assert proc.stderr is not None
    stderr = proc.stderr.read()
    proc.wait(60)
    assert rest.strip() == "", rest
    assert proc.returncode == 0, stderr
    assert "result" in answers[3]
    # Logs went to stderr, as JSON lines, without entry text.
    assert any('"tool": "stats"' in line for line in stderr.splitlines())


@pytest.fixture
def http_server(settings: Settings, tmp_path: Path) -> Iterator[str]:
    with running_http_server(_env(settings), tmp_path / "server.log") as base:
        yield base


async def test_streamable_http_and_metrics(http_server: str) -> None:
    async with Client(f"{http_server}/mcp") as client:
        await _exercise(client)
    with urllib.request.urlopen(f"{http_server}/metrics", timeout=5) as response:
        metrics = response.read().decode()
    assert 'pgrecall_tool_calls_total{status="ok",tool="add_entry"} 1.0' in metrics
    assert 'pgrecall_tool_errors_total{kind="invalid_input",tool="get_entry"} 1.0' in metrics
    assert "pgrecall_tool_latency_seconds_bucket" in metrics
    assert "pgrecall_pending_vectors" in metrics
    health = json.loads(urllib.request.urlopen(f"{http_server}/healthz", timeout=5).read())
    assert health["status"] == "ok"
