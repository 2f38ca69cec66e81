"""A loopback TCP server that accepts connections and never answers (a hung dependency)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager

# The accept loop wakes this often to see whether it should stop; it never runs past close().
_POLL_S = 0.05
_MAX_HELD = 1000


class HangingServer:
    """Counts the connections it accepts; holds them open, reads nothing, writes nothing."""

    def __init__(self) -> None:
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(64)
        self._listener.settimeout(_POLL_S)
        self.port: int = self._listener.getsockname()[1]
        self._held: list[socket.socket] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, name="hanging-server", daemon=True)
        self._thread.start()

    @property
    def connections(self) -> int:
        """How many connections were accepted so far."""
        with self._lock:
            return len(self._held)

    def url(self, path: str = "/v1") -> str:
        """http:// URL of this server with the given path."""
        return f"http://127.0.0.1:{self.port}{path}"

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with self._lock:
                self._held.append(conn)
                if len(self._held) >= _MAX_HELD:  # bounded: a runaway client cannot exhaust fds
                    return

    def close(self) -> None:
        """Stop accepting and drop every held connection."""
        self._stop.set()
        self._thread.join(timeout=5)
        self._listener.close()
        with self._lock:
            for conn in self._held:
                conn.close()


@contextmanager
def hanging_server() -> Iterator[HangingServer]:
    """A HangingServer for the block, closed at the end even on failure."""
    server = HangingServer()
    try:
        yield server
    finally:
        server.close()
