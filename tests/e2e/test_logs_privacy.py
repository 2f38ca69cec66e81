"""Privacy of a real `pgrecall serve`: no query or entry text in INFO logs, no vectors anywhere out.

Assistants store private notes and logs are shipped elsewhere, so the server logs tool names,
request ids, latencies and counts, never what was written or asked. Responses never carry an
embedding either (the default model makes 384-float vectors).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import suppress
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from pgrecall.config import Settings
from pgrecall.evaluation.embedders import free_local_port

pytestmark = pytest.mark.anyio

# Words that appear in nothing but the entries and queries sent below.
SECRETS = ["Quibblefrost", "zephyrine", "marmalade-vault", "Ostrogoth", "plinkety"]
ENTRY = "Quibblefrost keeps the zephyrine ledger in the marmalade-vault under the stairs."
UPDATED = "Quibblefrost moved the zephyrine ledger; the marmalade-vault is empty now."
QUERY = "where does Ostrogoth hide the plinkety zephyrine ledger?"
LOG_INFO = ("--log-level", "INFO")
VECTOR_TEXT = re.compile(r"\[\s*-?0\.\d+\s*,\s*-?\d")  # "[0.0123, -0.04…": a vector printed as text


def _walk(value: Any) -> Iterator[Any]:
    yield value
    if isinstance(value, dict):
        for v in value.values():
            yield from _walk(v)
    elif isinstance(value, list):
        for v in value:
            yield from _walk(v)


def _assert_no_vector(result: Any) -> None:
    """No float list of embedding size, in the structured result or in its text content."""
    payloads: list[Any] = [result.structured_content]
    for block in result.content:
        with suppress(AttributeError, ValueError):
            payloads.append(json.loads(block.text))
    for payload in payloads:
        for node in _walk(payload):
            if isinstance(node, list) and len(node) >= 64:
                assert not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in node)
        assert not VECTOR_TEXT.search(json.dumps(payload))


@pytest.fixture
def served(settings: Settings, tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """`pgrecall serve --transport http --log-level INFO`, stderr to its own file."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PGRECALL_")}
    assert settings.database_url is not None
    env.update(
        PGRECALL_DATABASE_URL=settings.database_url.get_secret_value(), PGRECALL_HOME=str(tmp_path / "h")
    )
    port = free_local_port()
    stderr_path = tmp_path / "stderr.log"
    with stderr_path.open("wb") as err, (tmp_path / "stdout.log").open("wb") as out:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "pgrecall",
                "serve",
                "--transport",
                "http",
                "--port",
                str(port),
                *LOG_INFO,
            ],
            env=env,
            stdout=out,
            stderr=err,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            with suppress(OSError), urllib.request.urlopen(f"{base}/healthz", timeout=2) as response:
                if response.status == 200:
                    break
            assert proc.poll() is None, stderr_path.read_text()
            assert time.monotonic() < deadline, "server did not become healthy"
            time.sleep(0.2)
        yield base, stderr_path
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


async def test_no_text_in_logs_and_no_vectors_in_results(served: tuple[str, Path]) -> None:
    base, stderr_path = served
    async with Client(f"{base}/mcp") as client:

        async def tool(name: str, **arguments: Any) -> dict[str, Any]:
            result = await client.call_tool(name, arguments)
            _assert_no_vector(result)
            return result.structured_content or {}

        added = await tool(
            "add_entry",
            text=ENTRY,
            title="Quibblefrost ledger",
            tags=["zephyrine"],
            source="notes/marmalade-vault.md",
            metadata={"secret": "plinkety"},
        )
        await tool("add_entry", text="Ostrogoth hides the plinkety ledger behind the clock.", language="en")
        await tool("add_entry", text=ENTRY)  # an exact duplicate: `similar` is reported
        await tool("update_entry", id=added["id"], text=UPDATED)
        await tool("get_entry", id=added["id"])
        await tool("list_entries", tags_any=["zephyrine"])
        found = await tool("search", query=QUERY, explain=True, diversify=True)
        assert found["hits"], found
        await tool("search", query=QUERY, mode="vector", selected_text=ENTRY, trace=True, min_relevance=0)
        await tool("search", query=QUERY, kind="nothing-here", trace=True)  # no_matches and its reason
        built = await tool("build_context", query=QUERY, sections=["zephyrine", "plinkety"], trace=True)
        await tool(
            "verify_citations", citations=[{"content_hash": c["content_hash"]} for c in built["citations"]]
        )
        await tool("stats")
        # Rejections are logged too: their messages must not carry the text either.
        await tool("add_entry", text=ENTRY + " " + "plinkety " * 20_000)
        await tool("search", query=QUERY * 30)
        await tool("search", query=QUERY, top_k=99)

    log = stderr_path.read_text()
    lines = [line for line in log.splitlines() if line.strip()]
    calls = [json.loads(line) for line in lines if '"logger": "pgrecall.calls"' in line]
    assert len(calls) >= 12, "the tool calls were logged"
    for line in lines:
        for secret in SECRETS:
            assert secret.lower() not in line.lower(), f"{secret!r} leaked into the log: {line[:300]}"
        assert not VECTOR_TEXT.search(line), f"a vector in the log: {line[:300]}"
