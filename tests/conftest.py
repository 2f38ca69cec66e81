"""Fixtures come from plugins in tests/helpers: a real embedded PostgreSQL, and MCP sessions over it.

Commands the tests start load their models in-process unless a test asks for the shared worker
(PGRECALL_MODELS=worker): a worker per temporary home would outlive its test by its idle period.

No test touches the user's real data: before anything is collected the session's HOME,
PGRECALL_HOME and XDG_* directories point into a temporary folder, and every test gets fresh ones
of its own (subprocesses inherit them). Under /tmp with mode 0755, because the embedded server runs
as its own user when the tests run as root.
"""

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ.setdefault("PGRECALL_MODELS", "in-process")

pytest_plugins = ["tests.helpers.postgres", "tests.helpers.mcp_session"]


def private_homes(base: Path) -> dict[str, str]:
    """HOME, PGRECALL_HOME and XDG_* pointed into `base` (created, mode 0755)."""
    base.mkdir(parents=True, exist_ok=True)
    base.chmod(0o755)
    paths = {
        "HOME": base / "home",
        "PGRECALL_HOME": base / "pgrecall",
        "XDG_DATA_HOME": base / "home" / ".local" / "share",
        "XDG_CONFIG_HOME": base / "home" / ".config",
        "XDG_CACHE_HOME": base / "home" / ".cache",
        "XDG_STATE_HOME": base / "home" / ".local" / "state",
    }
    for path in paths.values():
        path.mkdir(parents=True, exist_ok=True)
        path.chmod(0o755)
    return {name: str(path) for name, path in paths.items()}


_SESSION_BASE = Path(tempfile.mkdtemp(prefix="pgrecall-test-home-", dir="/tmp"))
os.environ.update(private_homes(_SESSION_BASE))


def pytest_unconfigure(config: pytest.Config) -> None:
    shutil.rmtree(_SESSION_BASE, ignore_errors=True)


@pytest.fixture(autouse=True)
def _private_home(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Fresh HOME, PGRECALL_HOME and XDG_* directories for this test and what it starts."""
    base = Path(tempfile.mkdtemp(prefix="pgrecall-test-home-", dir="/tmp"))
    for name, value in private_homes(base).items():
        monkeypatch.setenv(name, value)
    yield base
    shutil.rmtree(base, ignore_errors=True)
