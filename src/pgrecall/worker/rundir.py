"""The worker's private directories: `<home>/worker` (lock, holders, log) and the one holding its socket."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

# The private-directory rules live in db (the bottom layer) so the embedded server's socket shares them.
from pgrecall.db.privatedir import RunDirError, ensure_private_dir, verify_private_dir

__all__ = ["RunDirError", "ensure_private_dir", "verify_private_dir"]

SOCKET_NAME = "worker.sock"
# Linux sun_path is 108 bytes including the terminating NUL.
MAX_SOCKET_PATH_BYTES = 107


def worker_dir(home: Path) -> Path:
    """Where the worker keeps its lock, holders file, log and (if short enough) its socket."""
    return home.expanduser().resolve() / "worker"


def ensure_worker_dir(home: Path) -> Path:
    """`<home>/worker`, created 0700 if missing and checked if present."""
    return ensure_private_dir(worker_dir(home))


def _fits(path: Path) -> bool:
    return len(os.fsencode(str(path))) <= MAX_SOCKET_PATH_BYTES


def _recorded_socket(record: Path) -> Path | None:
    try:
        text = record.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    path = Path(text)
    if not path.is_absolute() or path.name != SOCKET_NAME or not _fits(path):
        return None
    try:
        verify_private_dir(path.parent)
    except RunDirError:
        return None
    return path


def socket_path(home: Path, *, create: bool) -> Path | None:
    """The worker socket's path; with create, make the private directory it needs (call under the lock).

    A deep home would overflow sun_path, so the socket then lives in a mkdtemp directory (0700) whose
    path is recorded in `<home>/worker/socket-path` and re-checked (owner, mode) every time it is read.
    Without create, None means there is no trustworthy socket location yet.
    """
    wdir = ensure_worker_dir(home) if create else worker_dir(home)
    if not create:
        try:
            verify_private_dir(wdir)
        except RunDirError:
            return None
    direct = wdir / SOCKET_NAME
    if _fits(direct):
        return direct
    record = wdir / "socket-path"
    recorded = _recorded_socket(record)
    if recorded is not None or not create:
        return recorded
    # mkdtemp makes the directory 0700 with an unpredictable name.
    fresh = Path(tempfile.mkdtemp(prefix="pgrecall-w-")) / SOCKET_NAME
    if not _fits(fresh):
        raise RunDirError(f"even the temporary socket path {fresh} exceeds {MAX_SOCKET_PATH_BYTES} bytes")
    tmp = record.with_suffix(".tmp")
    tmp.write_text(str(fresh), encoding="utf-8")
    tmp.replace(record)
    return fresh
