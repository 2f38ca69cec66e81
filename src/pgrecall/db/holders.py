"""`<home>/holders.json`: the processes holding the embedded server, and whether it is pinned or stopped."""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

log = logging.getLogger(__name__)

_MAX_PID = 2**31 - 1


@dataclass(frozen=True)
class Holder:
    """A process that holds a shared resource open (the embedded server, the model worker)."""

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


def read_state(path: Path) -> State:
    """The state with dead holders pruned; a malformed file counts as no holders (with a warning).

    The file is our own bookkeeping, rewritten whole on every acquire and release. Refusing a damaged
    one would stop every pgrecall command until someone deletes it by hand; ignoring it at worst lets
    the last releasing process stop a server another still uses, which that holder's supervisor
    restarts. So a bad file is logged and replaced by the next write.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return State()
    except (OSError, UnicodeDecodeError) as exc:
        log.warning("%s is unreadable (%s); treating it as no live holders", path, exc)
        return State()
    try:
        raw = json.loads(text)
    except ValueError:
        log.warning("%s is not JSON; treating it as no live holders (rewritten on the next write)", path)
        return State()
    if not isinstance(raw, dict) or not isinstance(raw.get("holders", []), list):
        log.warning(
            '%s does not hold {"holders": [...]}; treating it as no live holders '
            "(it is rewritten on the next write)",
            path,
        )
        return State()
    items = raw.get("holders", [])
    holders = [h for h in map(parse_holder, items) if h is not None]
    if len(holders) != len(items):
        log.warning("%s: ignored %d malformed holder entries", path, len(items) - len(holders))
    return State([h for h in holders if h.alive()], raw.get("pinned") is True, raw.get("stopped") is True)


def write_state(path: Path, state: State) -> None:
    """Replace the file atomically with `state`."""
    data = {
        "holders": [{"pid": h.pid, "started": h.started} for h in state.holders],
        "pinned": state.pinned,
        "stopped": state.stopped,
    }
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data), encoding="utf-8")
    tmp.replace(path)
