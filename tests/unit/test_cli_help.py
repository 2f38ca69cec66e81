"""The CLI's help states the limits the domain enforces (built from them, never typed by hand)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from pgrecall.cli.root import app
from pgrecall.domain.activity import MAX_ACTIVITY_LIMIT, MAX_TAG_LIMIT
from pgrecall.domain.links import MAX_RELATED_LIMIT
from pgrecall.domain.validation import MAX_LIST_LIMIT, MAX_TOP_K


@pytest.mark.parametrize(
    ("command", "limit"),
    [
        ("search", MAX_TOP_K),
        ("list", MAX_LIST_LIMIT),
        ("activity", MAX_ACTIVITY_LIMIT),
        ("tags", MAX_TAG_LIMIT),
        ("related", MAX_RELATED_LIMIT),
    ],
)
def test_help_shows_the_domains_limit(command: str, limit: int, tmp_path: Path) -> None:
    env = {"PGRECALL_HOME": str(tmp_path), "HOME": str(tmp_path), "COLUMNS": "200", "NO_COLOR": "1"}
    shown = CliRunner().invoke(app, [command, "--help"], env=env)
    assert shown.exit_code == 0, shown.output
    assert f"(1-{limit})" in shown.output, shown.output
