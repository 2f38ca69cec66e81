"""Who may hold the worker's connections and memory: caps per connecting process and in total.

The socket is private to one user, but that user runs many processes (servers, CLI commands,
scripts), and one of them misbehaving must not leave the others without embeddings. Each peer
process (identified by SO_PEERCRED, which the kernel fills in and a peer cannot forge) may hold
at most `max_per_peer` connections and `peer_bytes` of frames being read or served; every
connection must send a whole frame within `read_timeout_s` of its first byte, and its first byte
within `read_timeout_s` of connecting or of its last reply. So one process can delay another's
query by at most the read timeout, however it sends.
"""

from __future__ import annotations

import socket
import struct
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from pgrecall.worker.protocol import MAX_HEADER_BYTES

_UCRED = struct.Struct("3i")  # pid, uid, gid


@dataclass(frozen=True)
class Limits:
    """The caps one worker applies."""

    max_connections: int = 64
    max_per_peer: int = 16
    read_timeout_s: float = 10.0
    peer_bytes: int = MAX_HEADER_BYTES  # one largest request per process at a time
    total_bytes: int = 3 * MAX_HEADER_BYTES


def peer_pid(conn: socket.socket) -> int:
    """The pid of the process at the other end of a unix socket (0 where the kernel does not say)."""
    try:
        raw = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _UCRED.size)
    except (OSError, AttributeError):  # AttributeError: no SO_PEERCRED on this platform
        return 0
    return int(_UCRED.unpack(raw)[0])


class Admission:
    """Counts connections and frame bytes per peer process; thread-safe."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self._lock = threading.Lock()
        self._connections: Counter[int] = Counter()
        self._bytes: Counter[int] = Counter()
        self._total_bytes = 0

    def enter(self, pid: int) -> bool:
        """Count a new connection of `pid`; False (and not counted) when it is over a cap."""
        with self._lock:
            if sum(self._connections.values()) >= self.limits.max_connections:
                return False
            if self._connections[pid] >= self.limits.max_per_peer:
                return False
            self._connections[pid] += 1
            return True

    def leave(self, pid: int) -> None:
        """A connection of `pid` has closed."""
        with self._lock:
            self._connections[pid] -= 1
            if self._connections[pid] <= 0:
                del self._connections[pid]

    def reserve(self, pid: int, size: int) -> bool:
        """Claim `size` bytes for a frame of `pid` before reading it; False when over a budget."""
        with self._lock:
            if self._bytes[pid] + size > self.limits.peer_bytes:
                return False
            if self._total_bytes + size > self.limits.total_bytes:
                return False
            self._bytes[pid] += size
            self._total_bytes += size
            return True

    def release(self, pid: int, size: int) -> None:
        """Give back bytes claimed by `reserve` (the frame has been answered)."""
        if size == 0:
            return
        with self._lock:
            self._bytes[pid] -= size
            self._total_bytes -= size
            if self._bytes[pid] <= 0:
                del self._bytes[pid]


def frame_reader(
    conn: socket.socket, read_timeout_s: float
) -> tuple[Callable[[int], bytes], Callable[[], None]]:
    """A `read` for protocol.read_frame with a deadline per frame, and the call that starts the next frame.

    Waiting for a frame's first byte may take `read_timeout_s`; from that byte on, the whole frame
    must arrive within `read_timeout_s` (a per-recv timeout would let a peer trickle one byte at a
    time forever). A timeout raises TimeoutError.
    """
    deadline: list[float | None] = [None]

    def read(n: int) -> bytes:
        due = deadline[0]
        conn.settimeout(read_timeout_s if due is None else max(0.001, due - time.monotonic()))
        if due is not None and time.monotonic() >= due:
            raise TimeoutError("frame not complete within the read timeout")
        data = conn.recv(n)
        if due is None:
            deadline[0] = time.monotonic() + read_timeout_s
        return data

    def next_frame() -> None:
        deadline[0] = None

    return read, next_frame
