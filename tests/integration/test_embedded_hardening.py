"""Issue 14: a hostile neighbour, a bad file or a dead postmaster against the embedded PostgreSQL.

Time limits here are hang guards (subprocess/poll bounds), never performance assertions.
"""

from __future__ import annotations

import errno
import hashlib
import logging
import os
import resource
import selectors
import signal
import stat
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from pgrecall.config import Settings
from pgrecall.db.database import Database
from pgrecall.db.embedded import EmbeddedServer
from pgrecall.errors import DatabaseUnavailableError
from tests.helpers.hanging_server import hanging_server
from tests.helpers.subprocess_server import run_pgrecall

SRC = Path(__file__).resolve().parents[2] / "src"
NOBODY = 65534


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PGRECALL_")}
    env.update(PYTHONPATH=str(SRC), PGRECALL_HOME=str(home), PGRECALL_MODELS="in-process", **extra)
    return env


def _cli(home: Path, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    return run_pgrecall(_env(home, **extra), *args, timeout=180)


def _expected_owner() -> int:
    if os.geteuid() != 0:
        return os.geteuid()
    import pwd

    return pwd.getpwnam("pgrecall").pw_uid


def _postmaster_pid(server: EmbeddedServer) -> int:
    return int((server.pgdata / "postmaster.pid").read_text().splitlines()[0])


@pytest.fixture
def short_home(pg_home: Path) -> Iterator[Path]:
    path = pg_home / f"h-{time.monotonic_ns()}"
    yield path
    EmbeddedServer(path).stop()


@pytest.fixture
def deep_home(pg_home: Path) -> Iterator[Path]:
    # Deep enough that <home>/run/.s.PGSQL.5432 overflows a unix socket path.
    path = pg_home / ("d" * 60) / ("e" * 60) / f"h-{time.monotonic_ns()}"
    path.parent.mkdir(parents=True, exist_ok=True)
    for part in (path.parent, path.parent.parent):
        part.chmod(0o755)
    yield path
    EmbeddedServer(path).stop()


# -- 1. the socket directory -------------------------------------------------------------------------
def test_deep_home_never_adopts_a_predictable_tmp_dir(deep_home: Path) -> None:
    # The directory the old code derived from the home's path: a neighbour can create it first.
    digest = hashlib.sha256(str(deep_home.resolve()).encode()).hexdigest()[:12]
    planted = Path("/tmp") / f"pgrecall-{digest}"
    planted.mkdir(exist_ok=True)
    planted.chmod(0o777)
    if os.geteuid() == 0:
        os.chown(planted, NOBODY, NOBODY)
    try:
        server = EmbeddedServer(deep_home)
        server.acquire()
        try:
            sock = server.socket_dir
            assert sock != planted
            st = os.lstat(sock)
            assert stat.S_IMODE(st.st_mode) == 0o700 and st.st_uid == _expected_owner()
            assert (sock / ".s.PGSQL.5432").exists()
            assert not (planted / ".s.PGSQL.5432").exists()
            # The planted directory was neither adopted nor touched.
            assert stat.S_IMODE(planted.stat().st_mode) == 0o777
            assert os.geteuid() != 0 or planted.stat().st_uid == NOBODY
        finally:
            server.release()
    finally:
        planted.rmdir()


def test_clients_refuse_a_socket_dir_others_can_enter(deep_home: Path) -> None:
    settings = Settings(home=deep_home, models="in-process")
    with Database(settings) as db:
        assert db.embedded is not None
        sock = db.embedded.socket_dir
        with db.connect() as conn:
            assert conn.execute("SELECT 1 AS one").fetchone() == {"one": 1}
        sock.chmod(0o777)  # what a swapped-in directory would look like
        try:
            with pytest.raises(DatabaseUnavailableError, match="not private"):
                db.embedded.url()
            with pytest.raises(DatabaseUnavailableError, match="not private"):
                db.connect().__enter__()
        finally:
            sock.chmod(0o700)
        # The record now points at someone else's directory: refused as well.
        record = deep_home / "socket-dir"
        elsewhere = Path(f"/tmp/pgrecall-planted-{time.monotonic_ns()}")
        elsewhere.mkdir(mode=0o777)
        elsewhere.chmod(0o777)
        record.write_text(str(elsewhere))
        try:
            with pytest.raises(DatabaseUnavailableError, match="not private"):
                db.embedded.url()
        finally:
            record.write_text(str(sock))
            elsewhere.rmdir()


def test_an_in_home_run_dir_others_can_enter_is_refused(short_home: Path) -> None:
    server = EmbeddedServer(short_home)
    server._ensure_server_user()
    (short_home / "run").mkdir(parents=True)
    (short_home / "run").chmod(0o777)
    # Right owner, so only the mode is wrong.
    os.chown(short_home / "run", _expected_owner(), -1)
    with pytest.raises(DatabaseUnavailableError, match="mode 777"):
        server.acquire()
    assert not server.running()


# -- 2. a dead postmaster ----------------------------------------------------------------------------
def test_killed_postmaster_is_restarted_by_its_holder(short_home: Path) -> None:
    settings = Settings(home=short_home, models="in-process")
    with Database(settings) as db:
        assert db.embedded is not None
        pool = db.make_pool()
        try:
            before = _postmaster_pid(db.embedded)
            os.kill(before, signal.SIGKILL)
            psutil.Process(before).wait(30) if psutil.pid_exists(before) else None
            answered = False
            for _ in range(240):  # bounded: the supervisor backs off up to 30 s between attempts
                try:
                    with db.connect() as conn:
                        answered = conn.execute("SELECT 1 AS one").fetchone() == {"one": 1}
                    break
                except DatabaseUnavailableError:
                    time.sleep(0.5)
            assert answered, "nobody brought the embedded PostgreSQL back"
            assert _postmaster_pid(db.embedded) != before
            # The pool reconnects to the restarted server too.
            with pool.connection() as conn:
                assert conn.execute("SELECT 2 AS two").fetchone() == {"two": 2}
        finally:
            pool.close()


def test_supervisor_outlives_running_out_of_file_descriptors(
    short_home: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 39 A: EMFILE while checking the postmaster (a connection flood) used to end the thread."""
    caplog.set_level(logging.WARNING, logger="pgrecall.db.supervisor")
    settings = Settings(home=short_home, models="in-process")
    with Database(settings) as db:
        assert db.embedded is not None and db._supervisor is not None
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        held: list[int] = []
        try:
            highest = max(int(fd) for fd in os.listdir("/proc/self/fd"))
            resource.setrlimit(resource.RLIMIT_NOFILE, (highest + 64, hard))
            for _ in range(highest + 64):  # bounded: the limit stops it first
                try:
                    held.append(os.open(os.devnull, os.O_RDONLY))
                except OSError as exc:
                    assert exc.errno == errno.EMFILE
                    break
            for _ in range(100):  # bounded: the supervisor polls once a second
                if any("check failed" in r.getMessage() for r in caplog.records):
                    break
                time.sleep(0.1)
        finally:
            for fd in held:
                os.close(fd)
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
        assert any("Too many open files" in r.getMessage() for r in caplog.records), caplog.text
        assert db._supervisor.alive()
        before = _postmaster_pid(db.embedded)
        os.kill(before, signal.SIGKILL)
        restarted = False
        for _ in range(240):  # bounded: the supervisor backs off up to 30 s between attempts
            try:
                with db.connect() as conn:
                    restarted = conn.execute("SELECT 1 AS one").fetchone() == {"one": 1}
                if restarted and _postmaster_pid(db.embedded) != before:
                    break
            except (DatabaseUnavailableError, OSError, ValueError, IndexError):
                pass  # down, or its pid file being rewritten
            time.sleep(0.5)
        assert restarted and _postmaster_pid(db.embedded) != before, caplog.text
        assert db._supervisor.alive()


_HOLDER = textwrap.dedent(
    """
    import logging, sys, time
    from pathlib import Path
    from pgrecall.config import Settings
    from pgrecall.db.database import Database
    logging.basicConfig(level=logging.WARNING, stream=sys.stdout, format="%(message)s")
    with Database(Settings(home=Path(sys.argv[1]), models="in-process")):
        print("ready", flush=True)
        time.sleep(600)
    """
)


def _lines_until(proc: subprocess.Popen[str], needle: str, bound_s: float = 60) -> list[str]:
    """Lines the process prints until one contains needle (hang guard: bound_s, then what came)."""
    assert proc.stdout is not None
    lines: list[str] = []
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        for _ in range(100):
            if not sel.select(bound_s):
                break
            line = proc.stdout.readline()
            lines.append(line)
            if not line or needle in line:
                break
    return lines


def test_db_stop_refuses_while_another_process_holds_it(short_home: Path) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(short_home)],
        env=_env(short_home),
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        server = EmbeddedServer(short_home)
        refused = _cli(short_home, "db", "stop")
        assert refused.returncode != 0
        lines = refused.stderr.strip().splitlines()
        assert len(lines) == 1 and str(holder.pid) in lines[0] and "--force" in lines[0]
        assert server.running()
        forced = _cli(short_home, "db", "stop", "--force")
        assert forced.returncode == 0, forced.stderr
        assert not server.running()
        # The holder's supervisor notices, and leaves the operator's stop alone.
        said = _lines_until(holder, "stopped by `pgrecall db stop`")
        assert any("stopped by `pgrecall db stop`" in line for line in said), said
        assert not server.running()
    finally:
        holder.kill()
        holder.wait()


# -- 3. bounded connects -----------------------------------------------------------------------------
@pytest.fixture
def silent_listener() -> Iterator[int]:
    """A loopback TCP port that accepts connections and never says a word."""
    with hanging_server() as server:
        yield server.port


@pytest.mark.slow  # waits out the 2 s connect timeout twice
def test_a_silent_server_fails_the_connect_naming_the_timeout(silent_listener: int, tmp_path: Path) -> None:
    url = f"postgresql://nobody@127.0.0.1:{silent_listener}/nothing"
    settings = Settings(home=tmp_path / "home", database_url=url, db_connect_timeout_s=2, models="in-process")
    with Database(settings) as db:
        with pytest.raises(DatabaseUnavailableError, match="PGRECALL_DB_CONNECT_TIMEOUT_S"):
            db.connect().__enter__()
        with pytest.raises(DatabaseUnavailableError, match="PGRECALL_DB_CONNECT_TIMEOUT_S"):
            db.make_pool()


@pytest.mark.parametrize("command", [["migrate", "current"], ["list"]])
def test_a_silent_server_ends_a_command_with_one_line(
    silent_listener: int, tmp_path: Path, command: list[str]
) -> None:
    url = f"postgresql://nobody@127.0.0.1:{silent_listener}/nothing"
    # The subprocess timeout is a hang guard; the old code waited for psycopg's 130 s default.
    result = subprocess.run(
        [sys.executable, "-m", "pgrecall", *command],
        env=_env(tmp_path / "home", PGRECALL_DATABASE_URL=url, PGRECALL_DB_CONNECT_TIMEOUT_S="2"),
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    assert "connect timeout" in result.stderr and "PGRECALL_DB_CONNECT_TIMEOUT_S" in result.stderr
