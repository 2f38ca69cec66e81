"""The worker process: a unix-socket server in front of the embedding lanes and the detection lane."""

from __future__ import annotations

import contextlib
import logging
import os
import select
import signal
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psutil

from pgrecall.daemon import HoldersFile, watch_holders
from pgrecall.worker import protocol
from pgrecall.worker.admission import Admission, Limits, frame_reader, peer_pid
from pgrecall.worker.detect_lane import DetectJob, DetectLane
from pgrecall.worker.models import EmbedderHost
from pgrecall.worker.protocol import BusyError, Frame, ProtocolError, error_reply
from pgrecall.worker.rundir import RunDirError, ensure_worker_dir, socket_path, verify_private_dir
from pgrecall.worker.scheduler import Job, Scheduler

if TYPE_CHECKING:
    from pgrecall.config import Settings

log = logging.getLogger(__name__)

# How often a waiting request checks whether its caller hung up (then its work is dropped).
_CANCEL_POLL_S = 0.2


@dataclass(frozen=True)
class WorkerOptions:
    """How one worker runs; the defaults suit `pgrecall serve`."""

    home: Path
    socket: Path | None = None
    grace_s: float = 10.0
    prune_interval_s: float = 1.0
    load_delay_s: float = 0.0
    query_cap: int = 64
    unit_chars: int = 2000
    limits: Limits = field(default_factory=Limits)


class WorkerServer:
    """Accepts connections, dispatches requests, and exits when the last holder has gone."""

    def __init__(
        self, options: WorkerOptions, settings: Callable[[], Settings], identity: tuple[str, int]
    ) -> None:
        self.options = options
        self.wdir = ensure_worker_dir(options.home)
        self.holders = HoldersFile(self.wdir / "holders.json", self.wdir / "lock")
        self.socket_path = options.socket or socket_path(options.home, create=False)
        if self.socket_path is None:
            with self.holders.locked():
                self.socket_path = socket_path(options.home, create=True)
        assert self.socket_path is not None
        verify_private_dir(self.socket_path.parent)
        self.host = EmbedderHost(settings, identity, load_delay_s=options.load_delay_s)
        self.scheduler = Scheduler(self.host, query_cap=options.query_cap, unit_chars=options.unit_chars)
        self.detect = DetectLane()
        self.started = psutil.Process().create_time()
        self._stop = threading.Event()
        self.admission = Admission(options.limits)
        self._slots = threading.BoundedSemaphore(options.limits.max_connections)
        self._listener: socket.socket | None = None
        self._inode: int | None = None

    # -- socket ---------------------------------------------------------------------------------

    def bind(self) -> bool:
        """Listen on the socket; False if another worker already answers there."""
        assert self.socket_path is not None
        path = str(self.socket_path)
        if os.path.lexists(path):
            probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            probe.settimeout(1.0)
            try:
                probe.connect(path)
            except OSError:
                os.unlink(path)  # stale: nobody listens
            else:
                log.info("another worker already serves %s; exiting", path)
                return False
            finally:
                probe.close()
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        # The directory is 0700 already; a restrictive umask also closes the socket file itself.
        old = os.umask(0o177)
        try:
            listener.bind(path)
        finally:
            os.umask(old)
        listener.listen(128)
        self._listener = listener
        self._inode = os.stat(path).st_ino
        return True

    def _still_ours(self) -> bool:
        try:
            return os.stat(str(self.socket_path)).st_ino == self._inode
        except OSError:
            return False

    # -- main loop ------------------------------------------------------------------------------

    def serve(self) -> int:
        """Run until no holder remains for the grace period (or a shutdown request); exit code."""
        if not self.bind():
            return 0
        # SIGTERM/SIGINT end the worker like the last holder leaving: socket removed, replies sent.
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, lambda *_: self._request_stop())
        log.info("worker %d listening on %s (serving %s)", os.getpid(), self.socket_path, self.host.model)
        self.scheduler.start()
        self.detect.start()
        threading.Thread(target=self._accept_loop, name="accept", daemon=True).start()
        watch_holders(
            self.holders,
            grace_s=self.options.grace_s,
            interval_s=self.options.prune_interval_s,
            stop=self._stop,
            still_ours=self._still_ours,
            leave=self._unlink_socket,
        )
        self._shutdown()
        self._drain(timeout=5.0)
        return 0

    def _drain(self, timeout: float) -> None:
        """Give connection threads a moment to send their last replies (errors for failed work)."""
        deadline = time.monotonic() + timeout
        taken = 0
        while taken < self.options.limits.max_connections and self._slots.acquire(
            timeout=max(0.0, deadline - time.monotonic())
        ):
            taken += 1

    def _request_stop(self) -> None:
        self._unlink_socket()
        self._stop.set()

    def _unlink_socket(self) -> None:
        if self._still_ours():
            with contextlib.suppress(OSError):
                os.unlink(str(self.socket_path))

    def _shutdown(self) -> None:
        self._stop.set()
        if self._listener is not None:
            with contextlib.suppress(OSError):
                self._listener.close()
        self.scheduler.stop()
        self.detect.stop()

    def _accept_loop(self) -> None:
        assert self._listener is not None
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return  # listener closed
            pid = peer_pid(conn)
            if not self.admission.enter(pid):
                self._refuse(conn)
                continue
            if not self._slots.acquire(blocking=False):  # not reached: admission caps the total
                self.admission.leave(pid)
                self._refuse(conn)
                continue
            threading.Thread(target=self._connection, args=(conn, pid), name="conn", daemon=True).start()

    @staticmethod
    def _refuse(conn: socket.socket) -> None:
        with contextlib.suppress(OSError):
            conn.settimeout(1.0)
            conn.sendall(protocol.encode_frame(error_reply("too many connections", kind="busy")))
        conn.close()

    def _connection(self, conn: socket.socket, pid: int) -> None:
        limits = self.options.limits
        read, next_frame = frame_reader(conn, limits.read_timeout_s)
        reserved = [0]

        def admit(size: int) -> None:
            if not self.admission.reserve(pid, size):
                raise BusyError(f"busy: a frame of {size} bytes is over this process's share; retry")
            reserved[0] = size

        try:
            while True:
                try:
                    # Requests carry no body: only replies do (vectors).
                    frame = protocol.read_frame(read, max_body=0, admit=admit)
                except ProtocolError as exc:
                    # The stream cannot be resynchronized after a bad frame: answer, then hang up.
                    kind = "busy" if isinstance(exc, BusyError) else "bad_request"
                    conn.settimeout(limits.read_timeout_s)
                    conn.sendall(protocol.encode_frame(error_reply(str(exc), kind=kind)))
                    return
                if frame is None:
                    return
                try:
                    reply = self._dispatch(frame, conn)
                    if reply is None:
                        return  # the caller hung up while waiting
                    try:
                        data = protocol.encode_frame(*reply)
                    except ProtocolError as exc:  # e.g. vectors of a huge dimension past the body cap
                        data = protocol.encode_frame(error_reply(str(exc), kind="too_large"))
                    del frame
                    conn.settimeout(limits.read_timeout_s)
                    conn.sendall(data)
                finally:
                    self.admission.release(pid, reserved[0])
                    reserved[0] = 0
                next_frame()
        except OSError as exc:
            log.debug("connection ended: %s", exc)
        finally:
            self.admission.release(pid, reserved[0])
            conn.close()
            self.admission.leave(pid)
            self._slots.release()

    # -- requests -------------------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        """The `status` reply: identity, per-model load state, lane backlog."""
        # Read without the lock: the file is replaced atomically, and a starter holds the lock while it
        # waits for this very reply.
        holders = [h.pid for h in self.holders.read().holders]
        return {
            "ok": True,
            "protocol": protocol.PROTOCOL_VERSION,
            "pid": os.getpid(),
            "started": self.started,
            "model": self.host.model,
            "dim": self.host.dim,
            "models": {"embedder": self.host.state(), "detector": self.detect.summary()},
            "detectors": self.detect.states(),
            "pending": self.scheduler.pending(),
            "stats": self.scheduler.stats(),
            "holders": holders,
        }

    def _dispatch(self, frame: Frame, conn: socket.socket) -> tuple[dict[str, Any], bytes] | None:
        header = frame.header
        try:
            op = protocol.check_request(header)
        except ProtocolError as exc:
            return error_reply(str(exc)), b""
        if op == "status":
            return self.status(), b""
        if op == "shutdown":
            log.info("shutdown requested")
            self._request_stop()
            return {"ok": True}, b""
        if op == "warm":
            what = header.get("what", ["embedder"])
            if "embedder" in what:
                self.host.start_loading()
            if "detector" in what and "codes" in header:
                codes = protocol.check_codes(header["codes"])
                self.detect.submit(DetectJob(codes, protocol.check_thresholds(header), []))
            return self.status(), b""
        if op == "detect":
            djob = DetectJob(
                protocol.check_codes(header["codes"]), protocol.check_thresholds(header), header["texts"]
            )
            self.detect.submit(djob)
            if not self._wait(djob.done, conn, lambda message: djob.finish(error=message)):
                djob.cancelled = True
                return None
            if djob.error is not None:
                return error_reply(djob.error, kind="detection"), b""
            return {"ok": True, "results": djob.results}, b""
        return self._embed(op, header, conn)

    def _embed(
        self, op: str, header: dict[str, Any], conn: socket.socket
    ) -> tuple[dict[str, Any], bytes] | None:
        wanted = header.get("model")
        if wanted is not None and wanted != self.host.model:
            # Never hand out vectors of another model: the caller would store them under its own name.
            return error_reply(f"this worker serves {self.host.model}, not {wanted}", kind="identity"), b""
        job = Job(op, header["texts"])
        self.scheduler.submit(job)
        if not self._wait(job.done, conn, job.fail):
            job.cancelled = True
            return None
        if job.error is not None:
            return error_reply(job.error, kind="embedding"), b""
        fields, body = protocol.encode_vectors(job.matrix(self.host.dim))
        return {"ok": True, **fields}, body

    def _wait(self, done: threading.Event, conn: socket.socket, fail: Callable[[str], None]) -> bool:
        """Wait for done; False if the caller closed its end first (its work can be dropped)."""
        # poll, not select: select fails on descriptors past 1024.
        poller = select.poll()
        poller.register(conn, select.POLLIN | select.POLLHUP)
        while not done.wait(_CANCEL_POLL_S):
            if self._stop.is_set():
                # A lane may be stuck (a model still loading): answer now rather than at exit.
                fail("worker shutting down")
                return True
            if poller.poll(0):
                try:
                    peek = conn.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
                except BlockingIOError:
                    continue
                except OSError:
                    return False
                if not peek:
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
