"""Brings the embedded PostgreSQL back when its postmaster dies under a process that holds it."""

from __future__ import annotations

import logging
import threading

from pgrecall.db.embedded import EmbeddedServer

log = logging.getLogger(__name__)


class Supervisor:
    """A daemon thread: polls the postmaster and, once it is gone, restarts it with exponential backoff.

    The restart runs under the home's lock (EmbeddedServer.revive), so several holders noticing the
    same death start one server; the others just find it running. Pools reconnect on their own.
    """

    def __init__(
        self,
        server: EmbeddedServer,
        *,
        poll_s: float = 1.0,
        first_delay_s: float = 0.5,
        max_delay_s: float = 30.0,
    ) -> None:
        self.server = server
        self.poll_s = poll_s
        self.first_delay_s = first_delay_s
        self.max_delay_s = max_delay_s
        self._halt = threading.Event()
        self._thread = threading.Thread(target=self._run, name="pgrecall-db-supervisor", daemon=True)
        self._told_stopped = False

    def start(self) -> None:
        """Start watching."""
        self._thread.start()

    def stop(self, timeout: float = 90.0) -> None:
        """Stop watching; waits (bounded) for a restart in progress to finish."""
        self._halt.set()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def alive(self) -> bool:
        """True while the watching thread runs (it only ends on stop())."""
        return self._thread.is_alive()

    def _run(self) -> None:
        # Nothing may end this thread but stop(): a server out of file descriptors (EMFILE from a
        # connection flood) makes the pid-file read fail, and a dead supervisor would leave the
        # next postmaster death unrepaired for the process's lifetime. Failures back off and retry.
        wait = self.poll_s
        while not self._halt.wait(wait):
            try:
                if self.server.postmaster_alive():
                    self._told_stopped = False
                else:
                    self._restart()
            except Exception as exc:
                wait = min(max(wait * 2, self.first_delay_s), self.max_delay_s)
                log.warning("database supervisor: check failed (%s); retrying in %.1f s", _reason(exc), wait)
            else:
                wait = self.poll_s

    def _restart(self) -> None:
        delay = self.first_delay_s
        attempt = 0
        while not self._halt.is_set():
            attempt += 1
            try:
                revived = self.server.revive()
            except Exception as exc:
                log.warning(
                    "embedded PostgreSQL is down; restart attempt %d failed (%s); next in %.1f s",
                    attempt,
                    _reason(exc),
                    delay,
                )
            else:
                if revived:
                    log.warning("embedded PostgreSQL was down; restarted it (attempt %d)", attempt)
                elif not self._told_stopped:
                    self._told_stopped = True
                    log.warning("embedded PostgreSQL was stopped by `pgrecall db stop`; not restarting it")
                return
            if self._halt.wait(delay):
                return
            delay = min(delay * 2, self.max_delay_s)


def _reason(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
