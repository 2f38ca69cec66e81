"""The first search of a fresh home fuses like every later one, in the CLI and in MCP alike.

Convex fusion needs the model's cosine scale; for the bundled model it is a constant, so the very
first `pgrecall search` (a process that exits right after) and the first search of a freshly
spawned MCP server give the same scores and the same fusion as a later search.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from pgrecall.config import Settings
from tests.helpers.mcp_calls import call
from tests.helpers.subprocess_server import run_pgrecall, server_env

pytestmark = pytest.mark.anyio
BOUND_S = 300  # only so a hang fails the test; never asserted on

ENTRIES = (
    "The boiler and radiators in the office are serviced every October before the cold months.",
    "Nightly backups of the PostgreSQL cluster start at two o'clock and are kept for thirty days.",
    "We agreed to ship the mobile app in March, after the accessibility review is finished.",
)
QUERY = "when is the heating looked at"


def _scores(result: dict[str, Any]) -> tuple[str, list[tuple[str, float]]]:
    return result["fusion"], [(hit["id"], hit["score"]) for hit in result["hits"]]


async def test_first_cli_search_first_mcp_search_and_a_later_one_agree(
    settings: Settings, tmp_path: Path
) -> None:
    home = tmp_path / "fresh-home"
    env = server_env(settings.model_copy(update={"home": home})) | {"HOME": str(tmp_path)}
    for text in ENTRIES:
        added = run_pgrecall(env, "add", text, "--json", timeout=BOUND_S)
        assert added.returncode == 0, added.stderr
    first_cli = run_pgrecall(env, "search", QUERY, "--json", timeout=BOUND_S)
    assert first_cli.returncode == 0, first_cli.stderr
    cli = json.loads(first_cli.stdout)
    assert cli["fusion"] == "convex" and cli["hits"] and not cli["degraded"]

    params = StdioServerParameters(command=sys.executable, args=["-m", "pgrecall", "serve"], env=env)
    with anyio.fail_after(BOUND_S):
        async with Client(params) as client:
            first_mcp = await call(client, "search", query=QUERY)
            later_mcp = await call(client, "search", query=QUERY)
    later_cli = json.loads(run_pgrecall(env, "search", QUERY, "--json", timeout=BOUND_S).stdout)
    assert _scores(first_mcp) == _scores(cli) == _scores(later_mcp) == _scores(later_cli)
    assert first_mcp["fusion_weights"] == cli["fusion_weights"] == later_cli["fusion_weights"]
