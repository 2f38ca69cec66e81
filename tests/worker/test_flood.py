"""Issue 39 point 9: one process of the user cannot starve the worker for the others.

A real worker process is flooded over its unix socket by this test process (partial requests,
oversized or deeply nested bodies, every connection it can open); a query from another process
must still be answered. Waits are bounded "does not hang" limits, never performance thresholds.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from pgrecall.worker import socket_path
from pgrecall.worker.server import MAX_BODY_BYTES
from tests.helpers.worker import exchange, http_request, read_reply

pytestmark = pytest.mark.slow

PER_PEER = 4
# Long enough that the flood is fully opened before the first partial requests expire, however
# loaded the machine: an expired one frees a slot and a later connection is admitted, not refused.
READ_TIMEOUT_S = 20.0
_READY = """
import sys, time
from pathlib import Path
from pgrecall.worker import socket_path
from pgrecall.worker.lifecycle import ping
for _ in range(600):  # bounded wait for the socket to answer
    path = socket_path(Path(sys.argv[1]), create=False)
    if path is not None and ping(path, timeout=5) is not None:
        sys.exit(0)
    time.sleep(0.1)
sys.exit(1)
"""
_QUERY = """
import json, sys
from pathlib import Path
from pgrecall.worker.lifecycle import call, http_client
texts = {"texts": ["where is the backup window"]}
reply = call(http_client(Path(sys.argv[1])), "/queries", texts, timeout=300)
print(json.dumps({"ok": True, "n": int(reply.headers["X-Shape"].split(",")[0])}))
"""


@pytest.fixture
def worker(home: Path) -> Iterator[Path]:
    """A worker of `home` with a small per-process cap and read timeout; yields its socket path."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PGRECALL_")} | {
        "PGRECALL_HOME": str(home)
    }
    args = ["--home", str(home), "--grace-s", "600", "--read-timeout-s", str(READ_TIMEOUT_S)]
    proc = subprocess.Popen(
        [sys.executable, "-m", "pgrecall.worker", *args, "--max-per-peer", str(PER_PEER)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        # Waited for from another process: the worker gives a connection back only after its peer
        # hangs up, so a ping of this process could still count against this process's share
        # when the flood below begins.
        ready = subprocess.run([sys.executable, "-c", _READY, str(home)], env=env, timeout=300, check=False)
        assert ready.returncode == 0 and proc.poll() is None, "the worker did not answer"
        path = socket_path(home, create=False)
        assert path is not None
        yield path
    finally:
        with contextlib.suppress(Exception):
            exchange(path, http_request("POST", "/shutdown", {}), timeout=5)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _query_from_another_process(path: Path) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", _QUERY, str(path)], capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stderr
    header: dict[str, object] = json.loads(done.stdout)
    return header


def _connect(path: Path) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(60)  # bounded: every wait below ends by a reply or a close long before
    sock.connect(str(path))
    return sock


def _reply_or_close(sock: socket.socket) -> dict[str, object] | None:
    reply = read_reply(sock)
    return None if reply is None else reply[1]


def test_a_flood_of_partial_frames_leaves_room_for_another_process(worker: Path) -> None:
    flood = [_connect(worker) for _ in range(64)]
    try:
        for sock in flood:
            # A request begun, never finished; a connection refused already may be closed.
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                sock.sendall(b"POST /queries HTTP/1.1\r\n")
        # Beyond its share the flooding process is told at once that the worker is busy.
        busy = 0
        for sock in flood[PER_PEER:]:
            reply = _reply_or_close(sock)
            assert reply is not None and reply["kind"] == "busy", reply
            busy += 1
        assert busy == 64 - PER_PEER
        # Another process is served while the flood's connections are still open.
        answer = _query_from_another_process(worker)
        assert answer["ok"] is True and answer["n"] == 1, answer
        # The partial requests are dropped after the read timeout: nothing is held for good.
        for sock in flood[:PER_PEER]:
            assert _reply_or_close(sock) is None
    finally:
        for sock in flood:
            sock.close()


def test_hostile_requests_get_a_reply_before_anything_is_allocated(worker: Path) -> None:
    with _connect(worker) as sock:  # a body over the cap is refused unread
        sock.sendall(http_request("POST", "/queries", content_length=MAX_BODY_BYTES + 1))
        reply = _reply_or_close(sock)
        assert reply is not None and f"body of {MAX_BODY_BYTES + 1} bytes" in str(reply["error"]), reply
    deep = b"[" * 200_000 + b"]" * 200_000
    with _connect(worker) as sock:  # nesting a JSON parser cannot follow: a reply, not a dead thread
        sock.sendall(http_request("POST", "/queries", content_length=len(deep)) + deep)
        reply = _reply_or_close(sock)
        assert reply is not None and "nested too deeply" in str(reply["error"]), reply
    # Two largest bodies at once from one process: one of them is refused before it is read
    # (whichever the worker reads second), the other dropped when its body does not come in time.
    pair = [_connect(worker), _connect(worker)]
    try:
        announce = http_request("POST", "/queries", content_length=MAX_BODY_BYTES)
        for sock in pair:
            sock.sendall(announce + b"{")
        replies = [_reply_or_close(sock) for sock in pair]
        kinds = sorted(str(r.get("kind")) if r is not None else "closed" for r in replies)
        assert kinds == ["busy", "closed"], replies
        answer = _query_from_another_process(worker)
        assert answer["ok"] is True, answer
    finally:
        for sock in pair:
            sock.close()
