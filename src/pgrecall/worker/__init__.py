"""One model runtime per PGRECALL_HOME: a worker process holding the embedder and language detection.

Clients talk to it over HTTP on a private unix socket (server.py). For the rest of pgrecall:

* ``WorkerEmbedder.from_settings(settings)`` — an Embedder (model/dim known without loading);
  ``.client.start()`` at server start, ``.ready()`` / ``.state()`` before a search, ``.wait_ready(t)``.
* ``WorkerDetector(embedder.client).detect(text, codes, thresholds)`` — a ``Detection``.
* ``client.close()`` at process exit (a killed process is pruned anyway); ``lifecycle.stop_worker``,
  ``lifecycle.worker_status`` for a ``pgrecall worker stop|status`` command.

The worker itself: ``python -m pgrecall.worker --home DIR`` (started by lifecycle.ensure_worker).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from pgrecall.db.privatedir import RunDirError, ensure_private_dir, verify_private_dir
from pgrecall.db.socketdir import SocketDir

if TYPE_CHECKING:
    from pgrecall.daemon import HoldersFile

# Reported by `status`; a starter replaces a worker that speaks another version (after an upgrade).
# 2: HTTP on the socket (1 was a custom binary frame protocol).
PROTOCOL_VERSION = 2
SOCKET_NAME = "worker.sock"
# How long a worker stays up after its last holder left, unless its starter says (`serve` passes
# PGRECALL_WORKER_IDLE_S).
DEFAULT_GRACE_S = 10.0


def worker_dir(home: Path) -> Path:
    """Where the worker keeps its lock, holders file, log and (if short enough) its socket."""
    return home.expanduser().resolve() / "worker"


def ensure_worker_dir(home: Path) -> Path:
    """`<home>/worker`, created 0700 if missing and checked if present (RunDirError if not private)."""
    return ensure_private_dir(worker_dir(home))


def holders_file(home: Path) -> HoldersFile:
    """The worker's holders file and the lock that serializes starting it."""
    # Imported here: the detection process imports this package, and psutil would stay resident there.
    from pgrecall.daemon import HoldersFile

    wdir = worker_dir(home)
    return HoldersFile(wdir / "holders.json", wdir / "lock")


def socket_path(home: Path, *, create: bool) -> Path | None:
    """The worker socket's path; create makes its private directory (call under the worker lock).

    Without create, None means there is no trustworthy socket location (yet).
    """
    wdir = worker_dir(home)
    where = SocketDir(wdir, wdir / "socket-dir", SOCKET_NAME, "pgrecall-w-")
    if create:
        ensure_worker_dir(home)
        return where.prepare() / SOCKET_NAME
    try:
        verify_private_dir(wdir)  # it holds the record
        directory = where.current()
    except RunDirError:
        return None
    return None if directory is None else directory / SOCKET_NAME
