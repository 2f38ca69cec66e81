"""Which processes use the worker: (pid, start time) pairs in a json file, guarded by a flock."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Iterator
from pathlib import Path

from pgrecall.db.holders import Holder as Holder
from pgrecall.db.holders import parse_holder


class Registry:
    """The holders file and the lock that also serializes starting a worker, both under `<home>/worker`."""

    def __init__(self, wdir: Path) -> None:
        self.lock_file = wdir / "lock"
        self.holders_file = wdir / "holders.json"

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the worker lock (an exclusive flock; released if the process dies)."""
        fd = os.open(self.lock_file, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing drops the flock

    def read(self) -> list[Holder]:
        """Live holders (call with the lock held)."""
        try:
            raw = json.loads(self.holders_file.read_text(encoding="utf-8"))
            items = raw["holders"]
            parsed = [parse_holder(item) for item in items]
            holders = [holder for holder in parsed if holder is not None]
        except (OSError, ValueError, KeyError, TypeError):
            # A missing or damaged file means nobody is registered; holders re-register on their next call.
            return []
        return [holder for holder in holders if holder.alive()]

    def write(self, holders: list[Holder]) -> None:
        """Replace the holders file atomically (call with the lock held)."""
        data = {"holders": [{"pid": h.pid, "started": h.started} for h in holders]}
        tmp = self.holders_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(data), encoding="utf-8")
        tmp.replace(self.holders_file)

    def add(self, holder: Holder) -> None:
        """Register holder (call with the lock held)."""
        holders = self.read()
        if holder not in holders:
            holders.append(holder)
        self.write(holders)

    def remove(self, holder: Holder) -> list[Holder]:
        """Unregister holder; return who remains (call with the lock held)."""
        holders = [h for h in self.read() if h != holder]
        self.write(holders)
        return holders

    def prune(self) -> list[Holder]:
        """Drop dead holders from the file; return the live ones (call with the lock held)."""
        holders = self.read()
        self.write(holders)
        return holders
