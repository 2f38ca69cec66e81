"""The suite's home guard: the deploy tests, run as a user would run them, leave the default home alone.

The entrypoint tests strip every PGRECALL_* variable on purpose (the container sets its own); they
once started a model worker in the real default home. Here they run in a child pytest whose
environment names no home at all but a HOME of our own, and afterwards neither that HOME's
pgrecall folder nor (as root) /var/lib/pgrecall has changed.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _snapshot(path: Path) -> list[tuple[str, int]] | None:
    """Every file under `path` with its modification time (None: the folder does not exist)."""
    if not path.exists():
        return None
    return sorted((str(p), p.stat().st_mtime_ns) for p in path.rglob("*"))


@pytest.mark.slow
def test_deploy_tests_leave_the_default_home_untouched(tmp_path: Path) -> None:
    user_home = tmp_path / "user"
    user_home.mkdir()
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PGRECALL_", "XDG_")) and k not in {"HOME", "PYTEST_ADDOPTS"}
    }
    env["HOME"] = str(user_home)
    # What pgrecall uses with nothing set, for this user (as root: /var/lib/pgrecall).
    probe = [sys.executable, "-c", "from pgrecall.config import default_home; print(default_home())"]
    shown = subprocess.run(probe, env=env, capture_output=True, text=True, check=True).stdout
    default = Path(shown.strip())
    before = _snapshot(default)

    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k",
         "external_database or migrate_on_start or healthcheck", "tests/deploy/test_docker_entrypoint.py"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "passed" in done.stdout
    assert _snapshot(default) == before, f"{default} changed during the deploy tests"
    assert not (user_home / ".local" / "share" / "pgrecall").exists()
