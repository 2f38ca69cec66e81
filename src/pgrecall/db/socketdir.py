"""Where a unix socket lives: a private directory, verified before every use.

Both shared processes of a home listen on one: the embedded PostgreSQL (clients connect as
superuser with trust authentication) and the model worker. Whoever controls the directory
controls what pgrecall talks to, so it is refused unless it is a real directory, mode 0700, owned
by the user the process runs as. A short home keeps the socket in a directory of the home; a deep
one would overflow sun_path, so the socket then lives in a mkdtemp directory (unpredictable name,
0700) whose path is recorded in a file of the home and re-checked every time it is read.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from pgrecall.db.privatedir import RunDirError, ensure_private_dir, verify_private_dir
from pgrecall.errors import DatabaseUnavailableError

# Linux sun_path is 108 bytes including the terminating NUL.
MAX_SOCKET_PATH_BYTES = 107


def server_uid(server_user: str) -> int:
    """The uid that must own the socket directory: the server user when root, else this user."""
    if os.geteuid() != 0:
        return os.geteuid()
    import pwd

    try:
        return pwd.getpwnam(server_user).pw_uid
    except KeyError as exc:
        raise DatabaseUnavailableError(f"the system user '{server_user}' does not exist") from exc


@dataclass(frozen=True)
class SocketDir:
    """The directory of one socket: `preferred` when the socket's path fits, else the recorded one."""

    preferred: Path
    record: Path
    socket_name: str
    temp_prefix: str
    uid: int = field(default_factory=os.geteuid)

    def fits(self, directory: Path) -> bool:
        """True if the socket's path in `directory` fits sun_path."""
        return len(os.fsencode(str(directory / self.socket_name))) <= MAX_SOCKET_PATH_BYTES

    def _recorded(self) -> Path | None:
        try:
            path = Path(self.record.read_text(encoding="utf-8").strip())
        except (OSError, UnicodeDecodeError):
            return None
        return path if path.is_absolute() and self.fits(path) else None

    def prepare(self) -> Path:
        """The directory to listen in, created private if needed (call under the home's lock)."""
        if self.fits(self.preferred):
            return ensure_private_dir(self.preferred, self.uid)
        recorded = self._recorded()
        if recorded is not None:
            try:
                verify_private_dir(recorded, self.uid)
                return recorded
            except RunDirError:
                pass  # gone (tmp cleaner) or not ours: never adopt it, make a new one
        fresh = Path(tempfile.mkdtemp(prefix=self.temp_prefix))
        if not self.fits(fresh):
            fresh.rmdir()
            raise RunDirError(f"the temporary socket directory {fresh} is too long; set TMPDIR shorter")
        if self.uid != os.geteuid():
            os.chown(fresh, self.uid, -1)
        tmp = self.record.with_suffix(".tmp")
        tmp.write_text(str(fresh), encoding="utf-8")
        tmp.replace(self.record)
        return fresh

    def current(self) -> Path | None:
        """The directory, verified private now (RunDirError if not); None if none is recorded."""
        directory = self.preferred if self.fits(self.preferred) else self._recorded()
        if directory is not None:
            verify_private_dir(directory, self.uid)
        return directory

    def discard(self) -> None:
        """After a clean stop, remove a temporary directory (if empty and ours) and its record."""
        if self.fits(self.preferred):
            return
        recorded = self._recorded()
        if recorded is None:
            return
        try:
            verify_private_dir(recorded, self.uid)
            recorded.rmdir()
        except (RunDirError, OSError):
            return  # not ours, not empty (a killed process's leftovers) or gone: the next start checks it
        self.record.unlink(missing_ok=True)
