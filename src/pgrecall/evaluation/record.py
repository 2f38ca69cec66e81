"""The one envelope every regression command writes: what ran, on which commit and machine, when.

A result keeps its figures at the top level (docs and tests read them by path) and gains a `run`
object: the schema name, the command line, its parameters, the commit (and whether the tree had
changes), the machine, the UTC start and end, the load average before and after, and the seconds.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psutil

SCHEMA = "pgrecall-benchmark/1"
RUN_KEYS = ("schema", "command", "parameters", "commit", "machine", "started_at", "finished_at", "seconds")


def _git(*args: str) -> str | None:
    """A git answer about the checkout this package runs from; None outside one (an installed wheel)."""
    here = Path(__file__).resolve().parent
    try:
        done = subprocess.run(
            ["git", *args], cwd=here, capture_output=True, text=True, timeout=10, check=True
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip()


def commit() -> dict[str, Any]:
    """The checkout's HEAD and whether tracked files differ from it (a result of uncommitted code)."""
    head = _git("rev-parse", "HEAD")
    if head is None:
        return {"sha": None, "dirty": None}
    return {"sha": head, "dirty": bool(_git("status", "--porcelain", "--untracked-files=no"))}


def machine() -> dict[str, Any]:
    """What bounds the figures: cores, memory, platform, Python."""
    return {
        "cpus": os.cpu_count(),
        "memory_gib": round(psutil.virtual_memory().total / 2**30, 1),
        "platform": platform.platform(),
        "python": platform.python_version(),
    }


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


class Run:
    """Started when a command starts (the load average before, the clock); `finish` stamps a result."""

    def __init__(self, parameters: Mapping[str, Any], command: str | None = None) -> None:
        self.parameters = {k: str(v) if isinstance(v, Path) else v for k, v in parameters.items()}
        self.command = command if command is not None else " ".join([Path(sys.argv[0]).name, *sys.argv[1:]])
        # The code that runs is the code at the start: a commit made while a long run goes on
        # must not be credited with its figures.
        self.commit = commit()
        self.started_at = datetime.now(UTC)
        self.load_before = _load()
        self._clock = time.perf_counter()

    def finish(self, result: dict[str, Any]) -> dict[str, Any]:
        """`result` with its `run` object (replacing one it may hold)."""
        result["run"] = {
            "schema": SCHEMA,
            "command": self.command,
            "parameters": self.parameters,
            "commit": self.commit,
            "machine": machine()
            | {"loadavg_1_5_15_before": self.load_before, "loadavg_1_5_15_after": _load()},
            "started_at": self.started_at.isoformat(timespec="seconds"),
            "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "seconds": round(time.perf_counter() - self._clock, 1),
        }
        return result


def dumps(result: Mapping[str, Any]) -> str:
    """The JSON text every command writes (indented, non-ASCII kept, anything else as str)."""
    return json.dumps(result, indent=2, ensure_ascii=False, default=str)


def write(result: Mapping[str, Any], path: Path | str) -> None:
    """Write `result` to `path`, creating its folder."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(dumps(result) + "\n", encoding="utf-8")
