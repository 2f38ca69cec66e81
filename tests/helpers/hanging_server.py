"""A loopback TCP server that accepts connections and never answers (a hung dependency)."""

from __future__ import annotations

import http.server
import json
import socket
import socketserver
import struct
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress

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


class SlowWorker:
    """A unix-socket stand-in for the model worker: answers each vector request correctly, slowly."""

    def __init__(self, path: str, delay_s: float, dim: int) -> None:
        self.path = path
        self.delay_s = delay_s
        self.dim = dim
        self._lock = threading.Lock()
        self._requests = 0
        self._stop = threading.Event()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                texts = json.loads(self.rfile.read(int(self.headers["Content-Length"])))["texts"]
                with outer._lock:
                    outer._requests += 1
                if outer._stop.wait(outer.delay_s):
                    return
                rows = [[1.0] + [0.0] * (outer.dim - 1) for _ in texts]
                body = struct.pack(f"<{len(rows) * outer.dim}f", *(x for row in rows for x in row))
                self.send_response(200)
                self.send_header("X-Shape", f"{len(rows)},{outer.dim}")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                with suppress(OSError):  # the client gave up (its deadline): what the test is about
                    self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self._server = socketserver.ThreadingUnixStreamServer(path, Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, args=(_POLL_S,), daemon=True)
        self._thread.start()

    @property
    def requests(self) -> int:
        """Vector requests received so far."""
        with self._lock:
            return self._requests

    def close(self) -> None:
        """Stop serving."""
        self._stop.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
