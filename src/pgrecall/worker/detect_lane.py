"""The worker's detection lane: one thread feeding the detection child process, never behind embeddings."""

from __future__ import annotations

import logging
import queue
import subprocess
import sys
import threading
from typing import Any

from pgrecall.worker.models import IDLE, LOADING, READY
from pgrecall.worker.protocol import ProtocolError, Thresholds, encode_frame, read_frame

log = logging.getLogger(__name__)


class DetectJob:
    """One detect (or warm) request; results are [iso, confidence] pairs, one per text."""

    def __init__(self, codes: tuple[str, ...], thresholds: Thresholds, texts: list[str]) -> None:
        self.codes = codes
        self.thresholds = thresholds
        self.texts = texts
        self.results: list[Any] = []
        self.error: str | None = None
        self.cancelled = False
        self.done = threading.Event()

    def finish(self, results: list[Any] | None = None, error: str | None = None) -> None:
        """Complete the job once."""
        if not self.done.is_set():
            self.results = results or []
            self.error = error
            self.done.set()


def codes_key(codes: tuple[str, ...]) -> str:
    """How status names a detector: its sorted codes, comma-separated."""
    return ",".join(codes)


class DetectLane:
    """Serializes requests to the child; restarts it after it dies."""

    def __init__(self, command: list[str] | None = None) -> None:
        self._command = command or [sys.executable, "-m", "pgrecall.worker.detect_child"]
        self._jobs: queue.Queue[DetectJob | None] = queue.Queue()
        self._child: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()
        self._states: dict[str, str] = {}
        self._thread = threading.Thread(target=self._loop, name="lane-detect", daemon=True)

    def start(self) -> None:
        """Start the lane thread (the child starts with the first request)."""
        self._thread.start()

    def submit(self, job: DetectJob) -> None:
        """Queue a job; a detector not yet built is reported 'loading' from now on."""
        with self._lock:
            key = codes_key(job.codes)
            if not self._states.get(key, IDLE).startswith(READY):
                self._states[key] = LOADING
        self._jobs.put(job)

    def states(self) -> dict[str, str]:
        """Load state per language set."""
        with self._lock:
            return dict(self._states)

    def summary(self) -> str:
        """One state for status: loading if any set is loading, else ready/failed/idle."""
        states = self.states()
        if not states:
            return IDLE
        for wanted in (LOADING, READY):
            if wanted in states.values():
                return wanted
        return next(iter(states.values()))

    def stop(self) -> None:
        """Fail queued jobs and end the child."""
        while True:
            try:
                job = self._jobs.get_nowait()
            except queue.Empty:
                break
            if job is not None:
                job.finish(error="worker shutting down")
        self._jobs.put(None)
        self._end_child()

    def _end_child(self) -> None:
        child, self._child = self._child, None
        if child is None:
            return
        try:
            if child.stdin is not None:
                child.stdin.close()
            child.wait(timeout=2)
        except (OSError, subprocess.TimeoutExpired):
            child.kill()
            child.wait()

    def _ensure_child(self) -> subprocess.Popen[bytes]:
        if self._child is not None and self._child.poll() is None:
            return self._child
        self._child = subprocess.Popen(self._command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        with self._lock:
            # A fresh child has built nothing yet.
            self._states = {k: (LOADING if v == LOADING else IDLE) for k, v in self._states.items()}
        return self._child

    def _loop(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            if job.cancelled:
                continue
            self._serve(job)

    def _serve(self, job: DetectJob) -> None:
        key = codes_key(job.codes)
        request = {
            "op": "detect",
            "codes": list(job.codes),
            "thresholds": job.thresholds.as_dict(),
            "texts": job.texts,
        }
        try:
            child = self._ensure_child()
            assert child.stdin is not None and child.stdout is not None
            child.stdin.write(encode_frame(request))
            child.stdin.flush()
            reply = read_frame(child.stdout.read)
            if reply is None:
                raise ProtocolError("detection process exited")
        except (OSError, ProtocolError) as exc:
            log.warning("detection process failed: %s", exc)
            self._end_child()
            self._set_state(key, f"failed: detection process died ({exc})")
            job.finish(error=f"detection process died: {exc}")
            return
        header = reply.header
        if header.get("ok") is True and isinstance(header.get("results"), list):
            self._set_state(key, READY)
            job.finish(results=header["results"])
        else:
            message = str(header.get("error", "malformed reply from the detection process"))
            # Only a failure of lingua itself marks the detector failed; a refused request leaves it idle.
            self._set_state(key, f"failed: {message}" if header.get("kind") == "detection" else IDLE)
            job.finish(error=message)

    def _set_state(self, key: str, state: str) -> None:
        with self._lock:
            self._states[key] = state
