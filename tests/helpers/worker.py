"""Model worker helpers for tests: deterministic texts, and stopping a home's worker for good."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import random
import shutil
import signal
import socket
from typing import Any

from pgrecall.config import Settings
from pgrecall.daemon import Holder
from pgrecall.worker import lifecycle, socket_path

_VOCABULARY = (
    "the memory store keeps short notes about projects people decisions and code reviews written by "
    "assistants during long sessions with users who ask questions about databases embeddings search "
    "ranking latency indexes vacuum replication backups migrations tokens windows"
)
WORDS = _VOCABULARY.split()


def words(n: int, seed: int) -> str:
    """A deterministic text of n words."""
    rng = random.Random(seed)
    return " ".join(rng.choice(WORDS) for _ in range(n))


def long_text(chars: int = 30_000, seed: int = 1) -> str:
    """A text of exactly `chars` characters (sentences of 20 words)."""
    out: list[str] = []
    size = 0
    i = 0
    while size < chars:
        sentence = words(20, seed * 1000 + i) + ". "
        out.append(sentence)
        size += len(sentence)
        i += 1
    return "".join(out)[:chars]


def stop(settings: Settings) -> None:
    """Stop the worker of settings.home (killing it if it will not go) and remove its socket dir."""
    path = socket_path(settings.home, create=False)
    status = lifecycle.worker_status(settings)
    if status is not None:
        if not lifecycle.stop_worker(settings, timeout=10):
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(status["pid"]), signal.SIGKILL)
        lifecycle.wait_gone(int(status["pid"]), float(status["started"]), 10)
    if path is not None and path.parent != settings.home.resolve() / "worker":
        shutil.rmtree(path.parent, ignore_errors=True)


def alive(pid: int, started: float) -> bool:
    """True while process (pid, start time) exists."""
    return Holder(pid, started).alive()


def http_request(
    method: str, route: str, payload: object = None, *, content_length: int | None = None
) -> bytes:
    """The bytes of one HTTP request to the worker (a JSON body when payload is given)."""
    body = b"" if payload is None else json.dumps(payload).encode()
    length = len(body) if content_length is None else content_length
    head = f"{method} {route} HTTP/1.1\r\nHost: worker\r\nContent-Length: {length}\r\n\r\n"
    return head.encode() + body


def read_reply(sock: socket.socket) -> tuple[int, dict[str, Any]] | None:
    """Status and JSON body of the worker's reply on sock; None if it closes without replying."""
    response = http.client.HTTPResponse(sock)
    try:
        response.begin()
        return response.status, json.loads(response.read())
    except (http.client.HTTPException, ConnectionResetError):
        return None


def exchange(path: object, payload: bytes, timeout: float = 30) -> tuple[int, dict[str, Any]] | None:
    """Send raw bytes to the worker at path on a fresh connection; its reply (or None)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        sock.connect(str(path))
        sock.sendall(payload)
        return read_reply(sock)
