"""The worker process: HTTP/1.1 on a private unix socket, in front of the embedding lanes and detection.

Routes (try `curl --unix-socket <home>/worker/worker.sock http://worker/status`):

* ``GET /status``: identity, load states, lane backlog, holders (JSON).
* ``POST /queries``, ``POST /passages`` with ``{"texts": [...], "model": "..."}``: float32 rows as
  ``application/octet-stream``, shape in the ``X-Shape: n,dim`` header.
* ``POST /detect`` with ``{"texts", "codes", "thresholds"}``: ``{"results": [[iso, confidence], ...]}``.
* ``POST /warm`` with ``{"what": ["embedder", "detector"], "codes", "thresholds"}``: status, at once.
* ``POST /shutdown``.

Errors are JSON ``{"ok": false, "kind": ..., "error": ...}`` with a 4xx/5xx status. The standard
library's threaded server, not an ASGI one: each connection's thread sees its own socket, which the
caps below need (SO_PEERCRED, a deadline per request), and the worker answers `status` before any
heavy import. The socket is private to one user, but that user runs many processes, and one of them
misbehaving must not leave the others without embeddings: each peer process (SO_PEERCRED, filled in
by the kernel) may hold `max_per_peer` connections and one largest request body at a time, and must
send a whole request within `read_timeout_s` of its first byte (and that byte within
`read_timeout_s` of connecting or of its last reply). Nothing is ever unpickled.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import select
import signal
import socket
import socketserver
import struct
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent import futures
from concurrent.futures import Future
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psutil

from pgrecall.daemon import watch_holders
from pgrecall.db.privatedir import RunDirError, verify_private_dir
from pgrecall.domain.language import Thresholds
from pgrecall.worker import DEFAULT_GRACE_S, PROTOCOL_VERSION, ensure_worker_dir, holders_file, socket_path
from pgrecall.worker.detection import DetectPool
from pgrecall.worker.models import EmbedderHost
from pgrecall.worker.scheduler import Job, Scheduler

if TYPE_CHECKING:
    from pgrecall.config import Settings

log = logging.getLogger(__name__)

MAX_BODY_BYTES = 32 * 1024 * 1024
# Per request: bounds the memory one request can pin in the worker.
MAX_TEXTS = 4096
MAX_TEXT_CHARS = 1_000_000
MAX_CODES = 200
# How often a waiting request checks whether its caller hung up (then its work is dropped).
_CANCEL_POLL_S = 0.2
_UCRED = struct.Struct("3i")  # pid, uid, gid


class RequestError(Exception):
    """A request the worker refuses: HTTP status, kind and message for the JSON error reply."""

    def __init__(self, message: str, *, status: int = 400, kind: str = "bad_request") -> None:
        super().__init__(message)
        self.status, self.kind = status, kind


@dataclass(frozen=True)
class Limits:
    """The caps one worker applies."""

    max_connections: int = 64
    max_per_peer: int = 16
    read_timeout_s: float = 10.0
    peer_bytes: int = MAX_BODY_BYTES  # one largest request per process at a time
    total_bytes: int = 3 * MAX_BODY_BYTES


@dataclass(frozen=True)
class WorkerOptions:
    """How one worker runs; the defaults suit `pgrecall serve`."""

    home: Path
    socket: Path | None = None
    grace_s: float = DEFAULT_GRACE_S
    prune_interval_s: float = 1.0
    load_delay_s: float = 0.0
    query_cap: int = 64
    unit_chars: int = 2000
    limits: Limits = field(default_factory=Limits)


def peer_pid(conn: socket.socket) -> int:
    """The pid of the process at the other end of a unix socket (0 where the kernel does not say)."""
    try:
        return int(_UCRED.unpack(conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _UCRED.size))[0])
    except (OSError, AttributeError):  # AttributeError: no SO_PEERCRED on this platform
        return 0


class Admission:
    """Connections and request-body bytes per peer process, against a cap per peer and in total."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self._lock = threading.Lock()
        self.connections: Counter[int] = Counter()
        self.bytes: Counter[int] = Counter()

    def claim(self, counter: Counter[int], pid: int, amount: int, per_peer: int, total: int) -> bool:
        """Count `amount` more for `pid`; False (and nothing counted) when over a cap."""
        with self._lock:
            if counter[pid] + amount > per_peer or counter.total() + amount > total:
                return False
            counter[pid] += amount
            return True

    def give_back(self, counter: Counter[int], pid: int, amount: int) -> None:
        """Undo a claim."""
        with self._lock:
            counter[pid] -= amount
            if counter[pid] <= 0:
                del counter[pid]


class _DeadlineReader(io.RawIOBase):
    """Socket reads that must complete a whole request within the read timeout of its first byte.

    A per-recv timeout would let a peer trickle one byte at a time forever.
    """

    def __init__(self, conn: socket.socket, timeout_s: float) -> None:
        self.conn, self.timeout_s = conn, timeout_s
        self.due: float | None = None

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self.due is None:
            self.conn.settimeout(self.timeout_s)
        else:
            left = self.due - time.monotonic()
            if left <= 0:
                raise TimeoutError("request not complete within the read timeout")
            self.conn.settimeout(left)
        n = self.conn.recv_into(buffer)
        if self.due is None:
            self.due = time.monotonic() + self.timeout_s
        return n


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _HttpServer

    def setup(self) -> None:
        self.connection = self.request
        self.pid = peer_pid(self.connection)
        self.reader = _DeadlineReader(self.connection, self.server.worker.options.limits.read_timeout_s)
        self.rfile = io.BufferedReader(self.reader)
        self.wfile = self.connection.makefile("wb", 0)

    def handle_one_request(self) -> None:
        super().handle_one_request()
        self.reader.due = None  # the next request's deadline starts with its first byte

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        # A request the standard parser refuses (request line, headers, method): JSON like the rest.
        self.close_connection = True
        self.wfile.write(_error_reply(RequestError(message or HTTPStatus(code).phrase, status=code)))

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s", format % args)

    def do_GET(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def _serve(self) -> None:
        worker, reserved = self.server.worker, 0
        reply: bytes | None
        try:
            try:
                length = int(self.headers.get("Content-Length", "0"))
            except ValueError:
                length = -1
            if length < 0 or "Transfer-Encoding" in self.headers:
                self.close_connection = True
                raise RequestError("a request body needs a Content-Length", status=411)
            if length > MAX_BODY_BYTES:
                self.close_connection = True  # the body stays unread
                raise RequestError(f"body of {length} bytes exceeds {MAX_BODY_BYTES}", status=413)
            admission, limits = worker.admission, worker.options.limits
            if not admission.claim(admission.bytes, self.pid, length, limits.peer_bytes, limits.total_bytes):
                self.close_connection = True
                raise RequestError(
                    f"busy: a body of {length} bytes is over this process's share; retry",
                    status=503,
                    kind="busy",
                )
            reserved = length
            body = self.rfile.read(length) if length else b""
            worker.busy.acquire()
            try:
                reply = worker.dispatch(self.command, self.path, body, self.connection)
            finally:
                worker.busy.release()
        except OSError:
            raise  # the connection failed or timed out: handle_one_request drops it
        except Exception as exc:  # a refused request, or a bug: an answer rather than a dropped connection
            if not isinstance(exc, RequestError):
                log.exception("request %s %s failed", self.command, self.path)
                exc = RequestError(f"{type(exc).__name__}: {exc}", status=500, kind="internal")
            reply = _error_reply(exc, close=self.close_connection)
        finally:
            worker.admission.give_back(worker.admission.bytes, self.pid, reserved)
        if reply is None:  # the caller hung up while waiting
            self.close_connection = True
            return
        self.connection.settimeout(worker.options.limits.read_timeout_s)
        self.wfile.write(reply)


class _HttpServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True
    block_on_close = False
    request_queue_size = 128

    def __init__(self, path: str, worker: WorkerServer) -> None:
        self.worker = worker
        super().__init__(path, _Handler)

    def server_bind(self) -> None:
        # The directory is 0700 already; a restrictive umask also closes the socket file itself.
        old = os.umask(0o177)
        try:
            super().server_bind()
        finally:
            os.umask(old)

    def process_request(self, request: Any, client_address: Any) -> None:
        admission, limits = self.worker.admission, self.worker.options.limits
        if admission.claim(
            admission.connections, peer_pid(request), 1, limits.max_per_peer, limits.max_connections
        ):
            super().process_request(request, client_address)
            return
        with contextlib.suppress(OSError):  # over a cap: told at once, never queued
            request.settimeout(1.0)
            request.sendall(_error_reply(RequestError("too many connections", status=503, kind="busy")))
        self.shutdown_request(request)

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        pid = peer_pid(request)
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.worker.admission.give_back(self.worker.admission.connections, pid, 1)

    def handle_error(self, request: Any, client_address: Any) -> None:
        log.debug("connection ended", exc_info=True)


def _reply(status: int, headers: dict[str, str], body: bytes) -> bytes:
    """One whole HTTP/1.1 response."""
    head = [f"HTTP/1.1 {status} {HTTPStatus(status).phrase}", *(f"{k}: {v}" for k, v in headers.items())]
    return "\r\n".join([*head, f"Content-Length: {len(body)}", "", ""]).encode() + body


def _error_reply(error: RequestError, *, close: bool = True) -> bytes:
    body = json.dumps({"ok": False, "kind": error.kind, "error": str(error)}).encode()
    headers = {"Content-Type": "application/json"} | ({"Connection": "close"} if close else {})
    return _reply(error.status, headers, body)


def _json(value: object) -> bytes:
    return _reply(200, {"Content-Type": "application/json"}, json.dumps(value).encode())


def _texts(payload: dict[str, Any]) -> list[str]:
    value = payload.get("texts")
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise RequestError("texts must be a list of strings")
    if len(value) > MAX_TEXTS:
        raise RequestError(f"texts has {len(value)} items, at most {MAX_TEXTS} per request")
    if any(len(item) > MAX_TEXT_CHARS for item in value):
        raise RequestError(f"a text exceeds {MAX_TEXT_CHARS} characters")
    return value


def _codes(payload: dict[str, Any]) -> tuple[str, ...]:
    value = payload.get("codes")
    if not isinstance(value, list) or len(value) > MAX_CODES:
        raise RequestError(f"codes must be a list of at most {MAX_CODES} ISO 639-1 codes")
    for code in value:
        if not (isinstance(code, str) and 2 <= len(code) <= 3 and code.isascii() and code.isalpha()):
            raise RequestError(f"bad language code {code!r}")
    return tuple(sorted({code.lower() for code in value}))


def _thresholds(payload: dict[str, Any]) -> Thresholds:
    raw = payload.get("thresholds", {})
    defaults = Thresholds().as_dict()
    if not isinstance(raw, dict) or set(raw) - set(defaults):
        raise RequestError(f"thresholds must be an object with keys among {sorted(defaults)}")
    merged = {**defaults, **raw}
    ranges = {"min_letters": (0, 100_000), "min_confidence": (0, 1), "min_ratio": (1, 1000)}
    for name, (low, high) in {**ranges, "max_chars": (1, MAX_TEXT_CHARS)}.items():
        value, integer = merged[name], isinstance(defaults[name], int)
        # bool is an int subclass; true/false must not pass for a number.
        if isinstance(value, bool) or not isinstance(value, int if integer else int | float):
            raise RequestError(f"{name} must be {'an integer' if integer else 'a number'}")
        if not low <= value <= high:
            raise RequestError(f"{name} must be in [{low}, {high}]")
        merged[name] = int(value) if integer else float(value)
    return Thresholds(**merged)


class WorkerServer:
    """Serves requests, and exits when the last holder has gone."""

    def __init__(
        self, options: WorkerOptions, settings: Callable[[], Settings], identity: tuple[str, int]
    ) -> None:
        self.options = options
        ensure_worker_dir(options.home)
        self.holders = holders_file(options.home)
        path = options.socket or socket_path(options.home, create=False)
        if path is None:
            with self.holders.locked():
                path = socket_path(options.home, create=True)
        assert path is not None
        self.socket_path = path
        verify_private_dir(path.parent)
        self.host = EmbedderHost(settings, identity, load_delay_s=options.load_delay_s)
        self.scheduler = Scheduler(self.host, query_cap=options.query_cap, unit_chars=options.unit_chars)
        self.detect = DetectPool(lambda: settings().detector)
        self.admission = Admission(options.limits)
        # Requests being served: shutdown waits (bounded) for their last replies.
        self.busy = threading.Semaphore(options.limits.max_connections)
        self.started = psutil.Process().create_time()
        self._stop = threading.Event()
        self._inode: int | None = None

    def _still_ours(self) -> bool:
        try:
            return os.stat(self.socket_path).st_ino == self._inode
        except OSError:
            return False

    def _unlink_socket(self) -> None:
        if self._still_ours():
            with contextlib.suppress(OSError):
                os.unlink(self.socket_path)

    def _request_stop(self) -> None:
        self._unlink_socket()
        self._stop.set()

    def serve(self) -> int:
        """Run until no holder remains for the grace period (or a shutdown request); exit code."""
        if self.socket_path.exists():
            probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            probe.settimeout(1.0)
            try:
                probe.connect(str(self.socket_path))
            except OSError:
                os.unlink(self.socket_path)  # stale: nobody listens
            else:
                log.info("another worker already serves %s; exiting", self.socket_path)
                return 0
            finally:
                probe.close()
        httpd = _HttpServer(str(self.socket_path), self)
        self._inode = os.stat(self.socket_path).st_ino
        # SIGTERM/SIGINT end the worker like the last holder leaving: socket removed, replies sent.
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, lambda *_: self._request_stop())
        log.info("worker %d listening on %s (serving %s)", os.getpid(), self.socket_path, self.host.model)
        self.scheduler.start()
        threading.Thread(target=httpd.serve_forever, args=(0.2,), name="http", daemon=True).start()
        watch_holders(
            self.holders,
            grace_s=self.options.grace_s,
            interval_s=self.options.prune_interval_s,
            stop=self._stop,
            still_ours=self._still_ours,
            leave=self._unlink_socket,
        )
        self._stop.set()
        httpd.shutdown()
        httpd.server_close()
        self.scheduler.stop()
        self.detect.stop()
        # Requests in flight answer "shutting down" within a cancel poll; give them time to send it.
        deadline = time.monotonic() + 5.0
        for _ in range(self.options.limits.max_connections):
            if not self.busy.acquire(timeout=max(0.0, deadline - time.monotonic())):
                break
        return 0

    def status(self) -> dict[str, Any]:
        """The `status` reply: identity, per-model load state, lane backlog."""
        return {
            "ok": True,
            "protocol": PROTOCOL_VERSION,
            "pid": os.getpid(),
            "started": self.started,
            "model": self.host.model,
            "dim": self.host.dim,
            "models": {"embedder": self.host.state(), "detector": self.detect.summary()},
            "detectors": self.detect.states(),
            "pending": self.scheduler.pending(),
            "stats": self.scheduler.stats(),
            "holders": [h.pid for h in self.holders.read().holders],
        }

    def dispatch(self, method: str, route: str, body: bytes, conn: socket.socket) -> bytes | None:
        """Answer one request: the whole HTTP response; None if the caller hung up."""
        if (method, route) == ("GET", "/status"):
            return _json(self.status())
        if method != "POST" or route not in ("/warm", "/queries", "/passages", "/detect", "/shutdown"):
            raise RequestError(f"no route {method} {route}", status=404, kind="not_found")
        try:
            payload = json.loads(body or b"{}")
        except RecursionError as exc:
            raise RequestError("request body is nested too deeply") from exc
        except ValueError as exc:  # UnicodeDecodeError too
            raise RequestError(f"request body is not UTF-8 JSON: {exc}") from exc
        if not isinstance(payload, dict):
            raise RequestError("request body must be a JSON object")
        if route == "/shutdown":
            log.info("shutdown requested")
            self._request_stop()
            return _json({"ok": True})
        if route == "/warm":
            what = payload.get("what", ["embedder"])
            if not isinstance(what, list) or not set(what) <= {"embedder", "detector"}:
                raise RequestError("what must be a list among 'embedder', 'detector'")
            if "detector" in what and "codes" in payload:
                self.detect.submit(_codes(payload), _thresholds(payload), [])
            if "embedder" in what:
                self.host.start_loading()
            return _json(self.status())
        if route == "/detect":
            future = self.detect.submit(_codes(payload), _thresholds(payload), _texts(payload))
            results = self._result(future, conn, "detection")
            return None if results is None else _json({"ok": True, "results": results})
        return self._embed(route[1:], payload, conn)

    def _embed(self, kind: str, payload: dict[str, Any], conn: socket.socket) -> bytes | None:
        wanted = payload.get("model")
        if wanted is not None and wanted != self.host.model:
            # Never hand out vectors of another model: the caller would store them under its own name.
            raise RequestError(
                f"this worker serves {self.host.model}, not {wanted}", status=409, kind="identity"
            )
        import numpy as np  # on use, like everything heavy in the worker (a fast first `status`)

        job = Job(kind, _texts(payload))
        self.scheduler.submit(job)
        rows = self._result(job, conn, "embedding")
        if rows is None:
            return None
        matrix = np.stack(rows) if rows else np.zeros((0, self.host.dim), np.float32)
        headers = {"Content-Type": "application/octet-stream", "X-Shape": f"{len(matrix)},{self.host.dim}"}
        return _reply(200, headers, matrix.astype("<f4").tobytes())

    def _result(self, future: Future[Any], conn: socket.socket, kind: str) -> Any:
        """The work's result; None (and the work cancelled) if the caller hung up first.

        RequestError (503, `kind`) if the work failed, or if the worker stops first: a lane may be
        stuck (a model still loading).
        """
        if not self._wait(future, conn):
            future.cancel()
            return None
        if not future.done() or future.cancelled():
            raise RequestError("worker shutting down", status=503, kind=kind)
        if (error := future.exception()) is not None:
            raise RequestError(str(error), status=503, kind=kind)
        return future.result()

    def _wait(self, future: Future[Any], conn: socket.socket) -> bool:
        """Wait for the work (or the worker stopping); False if the caller closed its end first."""
        # poll, not select: select fails on descriptors past 1024.
        poller = select.poll()
        poller.register(conn, select.POLLIN | select.POLLHUP)
        while not futures.wait([future], _CANCEL_POLL_S).done:
            if self._stop.is_set():
                return True
            if poller.poll(0):
                try:
                    if not conn.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT):
                        return False
                except BlockingIOError:
                    continue
                except OSError:
                    return False
        return True


def run(options: WorkerOptions, settings: Callable[[], Settings], identity: tuple[str, int]) -> int:
    """Build and run a worker; exit code for the process."""
    try:
        server = WorkerServer(options, settings, identity)
    except RunDirError as exc:
        log.error("%s", exc)
        return 2
    return server.serve()
