"""Issue 14: operator mistakes and damaged files end a command with one line, never a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pgrecall.db.embedded import EmbeddedServer
from tests.helpers.subprocess_server import run_pgrecall

SRC = Path(__file__).resolve().parents[2] / "src"


def _cli(home: Path, *args: str, url: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PGRECALL_")}
    env.update(PYTHONPATH=str(SRC), PGRECALL_HOME=str(home), PGRECALL_MODELS="in-process")
    if url is not None:
        env["PGRECALL_DATABASE_URL"] = url
    return run_pgrecall(env, *args, timeout=180)


def _one_line_failure(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode != 0, result.stdout
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


@pytest.mark.parametrize("verb", ["downgrade", "stamp", "upgrade"])
def test_unknown_revision_is_one_line(verb: str, db_url: str, tmp_path: Path) -> None:
    line = _one_line_failure(_cli(tmp_path / "home", "migrate", verb, "nosuchrev", url=db_url))
    assert "revision" in line and "nosuchrev" in line


def test_home_that_is_a_regular_file_is_one_line(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.write_text("not a directory")
    line = _one_line_failure(_cli(home, "migrate", "current"))
    assert "PGRECALL_HOME" in line and str(home) in line


def test_home_whose_parent_cannot_be_created_is_one_line(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("a file where a directory should be")
    home = blocker / "sub" / "home"
    line = _one_line_failure(_cli(home, "list"))
    assert "PGRECALL_HOME" in line and str(home) in line


def test_missing_import_file_is_one_line(tmp_path: Path) -> None:
    missing = tmp_path / "nothing-here.jsonl"
    line = _one_line_failure(_cli(tmp_path / "home", "import", str(missing)))
    assert line == f"pgrecall: {missing}: no such file"
    line = _one_line_failure(_cli(tmp_path / "home", "import", str(tmp_path)))
    assert line == f"pgrecall: {tmp_path}: is a directory"


@pytest.fixture
def initialized_home(pg_home: Path) -> Iterator[Path]:
    path = pg_home / f"holders-{time.monotonic_ns()}"
    assert _cli(path, "migrate", "upgrade").returncode == 0
    yield path
    EmbeddedServer(path).stop()


BAD_HOLDERS = ["[]", '{"holders": 3}', '{"holders": [{"pid": "x"}]}', "not json {", '{"holders": [true]}']


def test_malformed_holders_file_counts_as_no_holders(initialized_home: Path) -> None:
    holders = initialized_home / "holders.json"
    for content in BAD_HOLDERS:
        holders.write_text(content)
        status = _cli(initialized_home, "db", "status")
        assert status.returncode == 0, (content, status.stderr)
        assert "Traceback" not in status.stderr
        assert "holders.json" in status.stderr, content  # the warning names the file
        assert json.loads(status.stdout)["holders"] == []
    # A command that acquires and releases the server rewrites the file in its proper shape.
    holders.write_text("[]")
    current = _cli(initialized_home, "migrate", "current")
    assert current.returncode == 0 and "Traceback" not in current.stderr, current.stderr
    assert json.loads(holders.read_text())["holders"] == []
    assert not EmbeddedServer(initialized_home).running()
