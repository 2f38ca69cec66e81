"""One shared process per PGRECALL_HOME, held by live processes: the lock, the holders file, the grace exit.

Both the embedded PostgreSQL (db/embedded.py) and the model worker (worker/) are such a process.
Whoever starts one takes an exclusive flock first, so processes starting together start exactly one;
every user records itself in a holders file as a (pid, process start time) pair, so a killed user is
pruned (a reused pid does not count), and the last one leaving lets the process go: the embedded
server is stopped by that user, the worker notices by itself (`watch_holders`) after a grace period.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

log = logging.getLogger(__name__)

_MAX_PID = 2**31 - 1


@dataclass(frozen=True)
class Holder:
    """A process that holds a shared process open."""

    pid: int
    started: float

    def alive(self) -> bool:
        """True if the process still exists and is the same process (pid not reused)."""
        try:
            created: float = psutil.Process(self.pid).create_time()
            return abs(created - self.started) < 1.0
        except psutil.Error:
            return False

    @classmethod
    def current(cls) -> Holder:
        """The calling process."""
        return cls(os.getpid(), psutil.Process().create_time())


@dataclass
class State:
    """Live holders; pinned: `db start` keeps it up; stopped: `db stop` asked holders not to revive it."""

    holders: list[Holder] = field(default_factory=list)
    pinned: bool = False
    stopped: bool = False


def parse_holder(item: Any) -> Holder | None:
    """A Holder from one decoded JSON item, or None if it is not {pid: int, started: number}."""
    if not isinstance(item, dict):
        return None
    pid, started = item.get("pid"), item.get("started")
    # bool is an int subclass; a pid of True is not a pid.
    if not isinstance(pid, int) or isinstance(pid, bool) or not 0 < pid <= _MAX_PID:
        return None
    if not isinstance(started, int | float) or isinstance(started, bool):
        return None
    return Holder(pid, float(started))


class HoldersFile:
    """A holders file (json) and the lock that guards it and serializes starting the shared process."""

    def __init__(self, path: Path, lock_file: Path) -> None:
        self.path = path
        self.lock_file = lock_file

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the lock (an exclusive flock, dropped by the kernel if this process dies)."""
        fd = os.open(self.lock_file, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing drops the flock

    def read(self) -> State:
        """The state with dead holders pruned; a malformed file counts as no holders (with a warning).

        The file is our own bookkeeping, rewritten whole on every change. Refusing a damaged one would
        stop every pgrecall command until someone deletes it by hand; ignoring it at worst lets the
        last releasing process stop a process another still uses, which that holder restarts. So a
        bad file is logged and replaced by the next write. Read without the lock it is still whole:
        it is replaced atomically.
        """
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return State()
        except (OSError, ValueError) as exc:  # UnicodeDecodeError is a ValueError
            log.warning("%s is unreadable (%s); treating it as no live holders", self.path, exc)
            return State()
        if not isinstance(raw, dict) or not isinstance(raw.get("holders", []), list):
            log.warning('%s does not hold {"holders": [...]}; treating it as no live holders', self.path)
            return State()
        items = raw.get("holders", [])
        holders = [h for h in map(parse_holder, items) if h is not None]
        if len(holders) != len(items):
            log.warning("%s: ignored %d malformed holder entries", self.path, len(items) - len(holders))
        return State([h for h in holders if h.alive()], raw.get("pinned") is True, raw.get("stopped") is True)

    def write(self, state: State) -> None:
        """Replace the file atomically with `state` (call with the lock held)."""
        data = {
            "holders": [{"pid": h.pid, "started": h.started} for h in state.holders],
            "pinned": state.pinned,
            "stopped": state.stopped,
        }
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data), encoding="utf-8")
        tmp.replace(self.path)

    def hold(self, state: State | None = None, *, stopped: bool | None = None) -> State:
        """Register this process (call with the lock held); the state written."""
        state = self.read() if state is None else state
        me = Holder.current()
        if me not in state.holders:
            state.holders.append(me)
        if stopped is not None:
            state.stopped = stopped
        self.write(state)
        return state

    def let_go(self) -> State:
        """Unregister this process (call with the lock held); the state left."""
        state = self.read()
        me = Holder.current()
        state.holders = [h for h in state.holders if h != me]
        self.write(state)
        return state


def wait_until(done: Callable[[], bool], timeout: float, interval_s: float = 0.05) -> bool:
    """Poll `done` until it is true or `timeout` seconds have passed; its last answer."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if done():
            return True
        time.sleep(interval_s)
    return done()


def wait_gone(pid: int, started: float, timeout: float) -> bool:
    """Poll until process (pid, start time) has exited."""
    holder = Holder(pid, started)
    return wait_until(lambda: not holder.alive(), timeout)


def log_tail(path: Path, lines: int) -> str:
    """The last lines of a shared process's log (for the error when it did not start)."""
    try:
        return "\n".join(path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def watch_holders(
    holders: HoldersFile,
    *,
    grace_s: float,
    interval_s: float,
    stop: threading.Event,
    still_ours: Callable[[], bool],
    leave: Callable[[], None],
) -> None:
    """In the shared process: return once no holder is left for `grace_s` (or on stop / not ours).

    `leave` runs under the lock when the grace period ends: a starter that takes the lock next must
    find the process gone (its socket removed), not register with one that is leaving.
    """
    empty_since: float | None = None
    while not stop.wait(interval_s):
        if not still_ours():
            log.warning("this process was replaced; exiting")
            return
        with holders.locked():
            state = holders.read()
            holders.write(state)  # pruned
            if state.holders:
                empty_since = None
                continue
            now = time.monotonic()
            empty_since = now if empty_since is None else empty_since
            if now - empty_since >= grace_s:
                leave()
                log.info("no holder left for %.1f s; exiting", grace_s)
                return
