"""Throw-away PostgreSQL servers on loopback for the Citus check: coordinator and two workers, a single node.

Given PostgreSQL binaries with the citus and vector extensions installed (--pg-bin DIR), each server
gets its own data directory under a temporary folder, listens on 127.0.0.1 on a free port (trust
authentication: loopback and this test only), and is stopped with `stop()`. initdb refuses to run
as root: as root the servers run as an existing unprivileged user the operator names (`run_as`);
no user is ever created here (ClusterError says how to make one).
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import psycopg


class ClusterError(RuntimeError):
    """The cluster cannot be started as asked (the message says how to fix it)."""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def server_user(run_as: str | None) -> str | None:
    """The user the servers run as: None (this process's) unless root, then `run_as`, which must exist."""
    if os.geteuid() != 0:
        return None
    fix = (
        "initdb refuses to run as root: run as an ordinary user, or create an unprivileged user once "
        "(useradd --system --no-create-home --shell /usr/sbin/nologin pgserver) and name it "
        "(--run-as pgserver; PGRECALL_CITUS_RUN_AS=pgserver for the test)"
    )
    if not run_as:
        raise ClusterError(fix)
    try:
        pwd.getpwnam(run_as)
    except KeyError:
        raise ClusterError(f"no user {run_as!r} on this machine; {fix}") from None
    return run_as


@dataclass
class Server:
    """One PostgreSQL server: its binaries, data directory and port."""

    bin_dir: Path
    data: Path
    port: int
    citus: bool
    user: str | None = field(default=None)

    @property
    def url(self) -> str:
        """Superuser URL over TCP on loopback."""
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _env(self) -> dict[str, str]:
        lib = str(self.bin_dir.parent / "lib")
        return {**os.environ, "LD_LIBRARY_PATH": f"{lib}:{os.environ.get('LD_LIBRARY_PATH', '')}"}

    def _run(self, *args: str) -> None:
        result = subprocess.run(
            [str(self.bin_dir / args[0]), *args[1:]], env=self._env(), user=self.user,
            capture_output=True, text=True, check=False, timeout=300,
        )  # fmt: skip
        if result.returncode != 0:
            raise RuntimeError(f"{args[0]} failed: {result.stdout}\n{result.stderr}")

    def start(self) -> None:
        """initdb (first time), configure, and start; returns when it accepts connections."""
        if not (self.data / "PG_VERSION").exists():
            self.data.mkdir(parents=True, exist_ok=True)
            if self.user is not None:
                entry = pwd.getpwnam(self.user)
                os.chown(self.data, entry.pw_uid, entry.pw_gid)
            self._run("initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8",
                      "--locale=C.UTF-8")  # fmt: skip
            settings = [
                "listen_addresses = '127.0.0.1'",
                f"port = {self.port}",
                f"unix_socket_directories = '{self.data}'",
                "max_connections = 200",
                "fsync = off",  # a throw-away check cluster
            ]
            if self.citus:
                # Shard moves (citus_rebalance_start) copy shards by logical replication.
                settings += [
                    "shared_preload_libraries = 'citus'",
                    "citus.max_client_connections = 150",
                    "wal_level = logical",
                    "max_replication_slots = 20",
                    "max_wal_senders = 20",
                ]
            with (self.data / "postgresql.conf").open("a") as conf:
                conf.write("\n".join(settings) + "\n")
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.data / "server.log"), "-w", "start")
        deadline = time.monotonic() + 60
        while True:
            try:
                with psycopg.connect(self.url, connect_timeout=2):
                    return
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def stop(self) -> None:
        """Stop fast (never raises: used in cleanup)."""
        with contextlib.suppress(RuntimeError, subprocess.TimeoutExpired):
            self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")


@dataclass
class Cluster:
    """A Citus coordinator and its workers, all on loopback."""

    coordinator: Server
    workers: list[Server]

    def stop(self) -> None:
        """Stop every node."""
        for server in [self.coordinator, *self.workers]:
            server.stop()


def _server(bin_dir: Path, root: Path, name: str, citus: bool, user: str | None) -> Server:
    return Server(bin_dir, root / name, _free_port(), citus, user)


def start_cluster(bin_dir: Path, root: Path, workers: int = 2, run_as: str | None = None) -> Cluster:
    """A coordinator and `workers` workers with citus and vector created and the workers added."""
    user = server_user(run_as)
    root.mkdir(parents=True, exist_ok=True)
    root.chmod(0o755)
    nodes = [_server(bin_dir, root, f"worker{i + 1}", True, user) for i in range(workers)]
    cluster = Cluster(_server(bin_dir, root, "coordinator", True, user), nodes)
    try:
        for server in [cluster.coordinator, *cluster.workers]:
            server.start()
            with psycopg.connect(server.url, autocommit=True) as conn:
                conn.execute("CREATE EXTENSION IF NOT EXISTS citus")
                conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        with psycopg.connect(cluster.coordinator.url, autocommit=True) as conn:
            conn.execute("SELECT citus_set_coordinator_host('127.0.0.1', %s)", (cluster.coordinator.port,))
            for worker in cluster.workers:
                conn.execute("SELECT citus_add_node('127.0.0.1', %s)", (worker.port,))
    except BaseException:
        cluster.stop()
        raise
    return cluster


def start_worker(cluster: Cluster, root: Path) -> Server:
    """Start one more Citus server for the cluster (not added yet: see add_node)."""
    worker = _server(
        cluster.coordinator.bin_dir, root, f"worker{len(cluster.workers) + 1}", True, cluster.coordinator.user
    )
    worker.start()
    cluster.workers.append(worker)
    return worker


def add_node(cluster: Cluster, worker: Server) -> None:
    """citus_add_node on the coordinator (shards move only with a rebalance)."""
    with psycopg.connect(cluster.coordinator.url, autocommit=True) as conn:
        conn.execute("SELECT citus_add_node('127.0.0.1', %s)", (worker.port,))


def start_single(bin_dir: Path, root: Path, run_as: str | None = None) -> Server:
    """One plain PostgreSQL (no citus preloaded) from the same binaries."""
    user = server_user(run_as)
    root.mkdir(parents=True, exist_ok=True)
    root.chmod(0o755)
    server = _server(bin_dir, root, "single", False, user)
    server.start()
    return server


@contextlib.contextmanager
def throwaway_servers(
    bin_dir: Path, prefix: str, run_as: str | None = None, keep: bool = False
) -> Iterator[tuple[Path, Cluster, Server]]:
    """A coordinator with two workers and a single node in one temporary folder, gone on exit.

    Yields (folder, cluster, single node). ClusterError (how to fix it) when they cannot start;
    `keep` leaves the servers running and the folder in place, and says where.
    """
    root = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    root.chmod(0o755)
    try:
        cluster = start_cluster(bin_dir, root / "cluster", run_as=run_as)
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)
        raise
    try:
        single = start_single(bin_dir, root, run_as=run_as)
    except BaseException:
        cluster.stop()
        shutil.rmtree(root, ignore_errors=True)
        raise
    try:
        yield root, cluster, single
    finally:
        if keep:
            print(f"servers and files left in {root}", file=sys.stderr)
        else:
            cluster.stop()
            single.stop()
            shutil.rmtree(root, ignore_errors=True)


def pgrecall_cli(url: str, home: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """`pgrecall ARGS` against `url` with a private home and in-process models (plus PGRECALL_* `env`)."""
    child = {k: v for k, v in os.environ.items() if not k.startswith("PGRECALL_")}
    child |= {"PGRECALL_DATABASE_URL": url, "PGRECALL_HOME": str(home), "PGRECALL_MODELS": "in-process"}
    child |= {f"PGRECALL_{k.upper()}": v for k, v in env.items()}
    return subprocess.run(
        [sys.executable, "-m", "pgrecall", *args], env=child, capture_output=True, text=True, timeout=600
    )
