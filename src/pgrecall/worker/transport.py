"""One request/reply exchange with the worker over its unix socket (blocking, with a deadline)."""

from __future__ import annotations

import socket
import time
from pathlib import Path
from typing import Any

from pgrecall.embeddings.base import EmbeddingError
from pgrecall.worker.protocol import Frame, ProtocolError, encode_frame, read_frame


class WorkerUnavailableError(EmbeddingError):
    """The worker could not be reached, died mid-request, or refused the request."""


class NotRunningError(WorkerUnavailableError):
    """Nothing listens on the socket (safe to start a worker and retry: nothing was sent)."""


def _reader(sock: socket.socket, deadline: float) -> Any:
    def read(n: int) -> bytes:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("worker reply timed out")
        sock.settimeout(remaining)
        return sock.recv(n)

    return read


def call(path: Path, header: dict[str, Any], body: bytes = b"", *, timeout: float) -> Frame:
    """Send one request and return the reply frame (an error reply is returned, not raised).

    Raises NotRunningError if the socket does not accept the connection, and WorkerUnavailableError if
    the exchange fails after connecting (the worker died, hung up or timed out mid-request).
    """
    deadline = time.monotonic() + timeout
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(min(timeout, 5.0))
        try:
            sock.connect(str(path))
        except (FileNotFoundError, ConnectionRefusedError, NotADirectoryError) as exc:
            raise NotRunningError(f"no worker listens on {path}: {exc}") from exc
        except OSError as exc:
            raise WorkerUnavailableError(f"cannot connect to the worker at {path}: {exc}") from exc
        try:
            sock.settimeout(max(0.001, deadline - time.monotonic()))
            sock.sendall(encode_frame(header, body))
            reply = read_frame(_reader(sock, deadline))
        except (OSError, ProtocolError) as exc:
            # TimeoutError is an OSError too.
            raise WorkerUnavailableError(f"worker request {header.get('op')!r} failed: {exc}") from exc
        if reply is None:
            raise WorkerUnavailableError(f"worker closed the connection during {header.get('op')!r}")
        return reply
    finally:
        sock.close()
