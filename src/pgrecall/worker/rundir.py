"""The worker's private directories: `<home>/worker` (lock, holders, log) and the one holding its socket."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

from pgrecall.errors import PgrecallError

SOCKET_NAME = "worker.sock"
# Linux sun_path is 108 bytes including the terminating NUL.
MAX_SOCKET_PATH_BYTES = 107


class RunDirError(PgrecallError):
    """A worker directory exists but is not private to this user; pgrecall refuses to use it."""


def worker_dir(home: Path) -> Path:
    """Where the worker keeps its lock, holders file, log and (if short enough) its socket."""
    return home.expanduser().resolve() / "worker"


def verify_private_dir(path: Path) -> None:
    """Raise RunDirError unless path is a real directory owned by this user with mode 0700."""
    try:
        # lstat: a symlink is refused, whatever it points to; it could lead anywhere.
        st = os.lstat(path)
    except FileNotFoundError as exc:
        raise RunDirError(f"{path} does not exist") from exc
    if not stat.S_ISDIR(st.st_mode):
        raise RunDirError(f"{path} is not a directory (a symlink or a file is refused)")
    if st.st_uid != os.geteuid():
        raise RunDirError(
            f"{path} is owned by uid {st.st_uid}, not by this user ({os.geteuid()}); refusing it"
        )
    mode = stat.S_IMODE(st.st_mode)
    if mode != 0o700:
        raise RunDirError(
            f"{path} has mode {mode:o}, expected 700; refusing a directory others can read or enter "
            f"(remove it, or run: chmod 700 {path})"
        )


def ensure_private_dir(path: Path) -> Path:
    """Create path with mode 0700, or verify that an existing one is private to us; return it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    else:
        # mkdir's mode is filtered by the umask; set it exactly on the directory we just made.
        os.chmod(path, 0o700)
    verify_private_dir(path)
    return path


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
