"""Where the embedded server's unix socket lives: a private directory, verified before every use.

Connections go to the socket as superuser with trust authentication, so whoever controls that
directory controls what pgrecall talks to. A short home keeps the socket in `<home>/run`; a deep
one would overflow sun_path, so the socket then lives in a mkdtemp directory (unpredictable name,
0700) whose path is recorded in `<home>/socket-dir`. Either is refused unless it is a real
directory, mode 0700, owned by the user the server runs as.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from pgrecall.db.privatedir import RunDirError, ensure_private_dir, verify_private_dir
from pgrecall.errors import DatabaseUnavailableError

SOCKET_FILE = ".s.PGSQL.5432"
RECORD_NAME = "socket-dir"
# Unix socket paths are capped at 107 bytes on Linux (sun_path); keep a margin.
_MAX_SOCKET_PATH = 100


def server_uid(server_user: str) -> int:
    """The uid that must own the socket directory: the server user when root, else this user."""
    if os.geteuid() != 0:
        return os.geteuid()
    import pwd

    try:
        return pwd.getpwnam(server_user).pw_uid
    except KeyError as exc:
        raise DatabaseUnavailableError(f"the system user '{server_user}' does not exist") from exc


def _fits(directory: Path) -> bool:
    return len(os.fsencode(str(directory / SOCKET_FILE))) <= _MAX_SOCKET_PATH


def _refuse(exc: RunDirError) -> DatabaseUnavailableError:
    return DatabaseUnavailableError(
        f"the embedded PostgreSQL's socket directory is not private: {exc}; remove that directory "
        "(pgrecall makes a private one) or point PGRECALL_HOME at a directory of this user's"
    )


def _recorded(home: Path) -> Path | None:
    try:
        text = (home / RECORD_NAME).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    path = Path(text)
    if not path.is_absolute() or not _fits(path):
        return None
    return path


def prepare(home: Path, run_dir: Path, uid: int) -> Path:
    """The directory the server will listen in, created private if needed (call under the home's lock)."""
    if _fits(run_dir):
        try:
            return ensure_private_dir(run_dir, uid)
        except RunDirError as exc:
            raise _refuse(exc) from exc
    recorded = _recorded(home)
    if recorded is not None:
        try:
            verify_private_dir(recorded, uid)
            return recorded
        except RunDirError:
            pass  # gone (tmp cleaner) or not ours: never adopt it, make a new one
    fresh = Path(tempfile.mkdtemp(prefix="pgrecall-pg-"))
    if not _fits(fresh):
        fresh.rmdir()
        raise DatabaseUnavailableError(
            f"the temporary socket directory {fresh} is too long for a unix socket; set TMPDIR shorter"
        )
    if uid != os.geteuid():
        os.chown(fresh, uid, -1)
    record = home / RECORD_NAME
    tmp = record.with_suffix(".tmp")
    tmp.write_text(str(fresh), encoding="utf-8")
    tmp.replace(record)
    return fresh


def current(home: Path, run_dir: Path, uid: int) -> Path:
    """The server's socket directory, verified now; DatabaseUnavailableError if it is not trustworthy."""
    directory = run_dir if _fits(run_dir) else _recorded(home)
    if directory is None:
        raise DatabaseUnavailableError(
            f"no socket directory is recorded in {home / RECORD_NAME}; the embedded server is not started"
        )
    try:
        verify_private_dir(directory, uid)
    except RunDirError as exc:
        raise _refuse(exc) from exc
    return directory


def discard(home: Path, run_dir: Path, uid: int) -> None:
    """After a clean stop, remove the temporary socket directory (if empty and ours) and its record."""
    if _fits(run_dir):
        return
    recorded = _recorded(home)
    if recorded is None:
        return
    try:
        verify_private_dir(recorded, uid)
        recorded.rmdir()
    except (RunDirError, OSError):
        return  # not ours, not empty (a killed server's leftovers) or gone: the next start checks it
    (home / RECORD_NAME).unlink(missing_ok=True)
