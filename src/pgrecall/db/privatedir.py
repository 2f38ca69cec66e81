"""Directories only their owner may enter (0700): the embedded server's and the model worker's sockets."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from pgrecall.errors import PgrecallError


class RunDirError(PgrecallError):
    """A run directory exists but is not private to its expected owner; pgrecall refuses to use it."""


def verify_private_dir(path: Path, uid: int | None = None) -> None:
    """Raise RunDirError unless path is a real directory, mode 0700, owned by `uid` (default: this user)."""
    owner = os.geteuid() if uid is None else uid
    try:
        # lstat: a symlink is refused, whatever it points to; it could lead anywhere.
        st = os.lstat(path)
    except FileNotFoundError as exc:
        raise RunDirError(f"{path} does not exist") from exc
    if not stat.S_ISDIR(st.st_mode):
        raise RunDirError(f"{path} is not a directory (a symlink or a file is refused)")
    if st.st_uid != owner:
        whom = "this user" if owner == os.geteuid() else "the expected owner"
        raise RunDirError(f"{path} is owned by uid {st.st_uid}, not by {whom} ({owner}); refusing it")
    mode = stat.S_IMODE(st.st_mode)
    if mode != 0o700:
        raise RunDirError(
            f"{path} has mode {mode:o}, expected 700; refusing a directory others can read or enter "
            f"(remove it, or run: chmod 700 {path})"
        )


def ensure_private_dir(path: Path, uid: int | None = None) -> Path:
    """Create path with mode 0700 (owned by `uid` if given), or verify that an existing one is; return it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    else:
        # mkdir's mode is filtered by the umask; set it exactly on the directory we just made.
        os.chmod(path, 0o700)
        if uid is not None and uid != os.geteuid():
            os.chown(path, uid, -1)
    verify_private_dir(path, uid)
    return path


def write_private_file(path: Path, text: str) -> Path:
    """Replace `path` atomically with `text`, mode 0600 from the start (never readable by others)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.unlink(missing_ok=True)
    # O_EXCL | O_NOFOLLOW: never write through a planted file or symlink.
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(text)
    os.replace(tmp, path)
    return path
