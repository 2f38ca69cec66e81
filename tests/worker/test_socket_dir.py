"""The worker's private directories: created 0700, refused when not private, short socket paths."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from pgrecall import worker
from pgrecall.db.privatedir import RunDirError
from pgrecall.db.socketdir import MAX_SOCKET_PATH_BYTES


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_worker_dir_is_created_private(tmp_path: Path) -> None:
    old = os.umask(0o000)  # even a permissive umask must not loosen it
    try:
        wdir = worker.ensure_worker_dir(tmp_path / "home")
    finally:
        os.umask(old)
    assert _mode(wdir) == 0o700
    assert os.lstat(wdir).st_uid == os.geteuid()


def test_existing_dir_with_wrong_mode_is_refused(tmp_path: Path) -> None:
    wdir = tmp_path / "home" / "worker"
    wdir.mkdir(parents=True)
    wdir.chmod(0o755)
    with pytest.raises(RunDirError, match="mode 755"):
        worker.ensure_worker_dir(tmp_path / "home")
    assert worker.socket_path(tmp_path / "home", create=False) is None


@pytest.mark.skipif(os.geteuid() != 0, reason="changing a directory's owner needs root")
def test_existing_dir_with_wrong_owner_is_refused(tmp_path: Path) -> None:
    wdir = tmp_path / "home" / "worker"
    wdir.mkdir(parents=True, mode=0o700)
    os.chown(wdir, 65534, 65534)
    with pytest.raises(RunDirError, match="owned by uid 65534"):
        worker.ensure_worker_dir(tmp_path / "home")


def test_symlink_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.mkdir(mode=0o700)
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "worker").symlink_to(target)
    with pytest.raises(RunDirError, match="not a directory"):
        worker.ensure_worker_dir(tmp_path / "home")


def test_short_home_puts_the_socket_in_the_worker_dir(tmp_path: Path) -> None:
    path = worker.socket_path(tmp_path / "h", create=True)
    assert path == (tmp_path / "h").resolve() / "worker" / "worker.sock"


def test_deep_home_gets_a_private_temp_dir_recorded_and_rechecked(tmp_path: Path) -> None:
    home = tmp_path / ("d" * 60) / ("e" * 60)
    path = worker.socket_path(home, create=True)
    assert path is not None
    try:
        assert len(os.fsencode(str(path))) <= MAX_SOCKET_PATH_BYTES
        assert _mode(path.parent) == 0o700
        record = worker.worker_dir(home) / "socket-dir"
        assert record.read_text() == str(path.parent)
        assert worker.socket_path(home, create=False) == path
        # A recorded directory that is no longer private is not trusted: a new one replaces it.
        path.parent.chmod(0o755)
        assert worker.socket_path(home, create=False) is None
        fresh = worker.socket_path(home, create=True)
        assert fresh is not None and fresh != path and _mode(fresh.parent) == 0o700
        fresh.parent.rmdir()
    finally:
        path.parent.rmdir()
