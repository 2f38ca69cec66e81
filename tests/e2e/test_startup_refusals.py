"""Issue 39 point 10: every startup refusal is one `pgrecall:` line naming the path and the fix.

Through the real CLI in a subprocess, each with its own temporary HOME and PGRECALL_HOME.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.subprocess_server import free_port, run_pgrecall

pytestmark = pytest.mark.slow


def _commands() -> tuple[tuple[str, ...], ...]:
    return (
        ("stats",),
        ("db", "start"),
        ("db", "status"),
        ("serve", "--transport", "http", "--port", str(free_port())),
    )


@pytest.fixture
def base() -> Iterator[Path]:
    """A temporary directory the embedded server's own user may traverse when tests run as root."""
    path = Path(tempfile.mkdtemp(prefix="pgrecall-test-refusal-", dir="/tmp"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _env(base: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PGRECALL_")}
    env.update(HOME=str(base), PGRECALL_HOME=str(base / "home"), PGRECALL_MODELS="in-process")
    return env | extra


def _one_line(result: subprocess.CompletedProcess[str], *needles: str) -> str:
    stderr = result.stderr
    assert result.returncode != 0, stderr
    assert "Traceback" not in stderr, stderr
    lines = [line for line in stderr.strip().splitlines() if line.startswith("pgrecall:")]
    assert len(lines) == 1, stderr
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


def test_a_data_directory_in_the_way_is_one_line(base: Path) -> None:
    home = base / "home"
    home.mkdir()
    (home / "pgdata").write_text("not a directory")
    for command in _commands():
        _one_line(run_pgrecall(_env(base), *command), str(home / "pgdata"), "PGRECALL_HOME")


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a mode-000 directory")
def test_an_unreadable_data_directory_is_one_line(base: Path) -> None:
    home = base / "home"
    (home / "pgdata").mkdir(parents=True)
    (home / "pgdata").chmod(0)
    try:
        for command in _commands():
            _one_line(run_pgrecall(_env(base), *command), str(home / "pgdata"), "PGRECALL_HOME")
    finally:
        (home / "pgdata").chmod(0o700)


def test_a_shared_socket_directory_is_one_line(base: Path) -> None:
    run = base / "home" / "run"
    run.mkdir(parents=True)
    run.chmod(0o777)
    for command in (("stats",), ("db", "start")):
        _one_line(run_pgrecall(_env(base), *command), str(run), "remove that directory")


def test_a_home_that_is_a_file_is_one_line(base: Path) -> None:
    (base / "home").write_text("a file")
    _one_line(run_pgrecall(_env(base), "stats"), str(base / "home"), "point PGRECALL_HOME")


def test_an_unreachable_database_url_is_one_line(base: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))  # bound, not listening: connections are refused
        port = sock.getsockname()[1]
        env = _env(base, PGRECALL_DATABASE_URL=f"postgresql://u@127.0.0.1:{port}/x")
        for command in (("stats",), ("serve", "--transport", "http", "--port", str(free_port()))):
            _one_line(run_pgrecall(env, *command), "PGRECALL_DATABASE_URL", str(port))


def test_a_port_in_use_is_one_line(base: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        for command in (("serve", "--transport", "http", "--port", str(port)), ("ui", "--port", str(port))):
            _one_line(run_pgrecall(_env(base), *command), f"--port {port}", "choose another --port")
