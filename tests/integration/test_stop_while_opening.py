"""A server stopped while its database is still opening releases the embedded PostgreSQL.

A stdio server opens the database in a thread after `initialize`; Ctrl-C (or SIGTERM) closes it from
the main thread. Before this was handled, a stop that came while the embedded server was starting
left it running with no holder to stop it; so did any command interrupted in the main thread
between starting the server and registering as its holder. The pause or the interrupt inside the
start is put there by the test (the PostgreSQL is real); time limits are hang guards only.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pgrecall.app import App
from pgrecall.config import Settings
from pgrecall.db.database import Database
from pgrecall.db.embedded import EmbeddedServer
from pgrecall.errors import DatabaseUnavailableError
from pgrecall.mcp.runtime import Runtime

HANG_GUARD_S = 120


@pytest.fixture
def home(pg_home: Path) -> Iterator[Path]:
    path = pg_home / f"stop-{time.monotonic_ns()}"
    yield path
    EmbeddedServer(path).stop()


def _runtime(home: Path) -> tuple[Runtime, Settings]:
    settings = Settings(home=home, models="in-process")
    return Runtime.deferred(settings, lambda: App(settings, embedder=None)), settings


def _join_opening(runtime: Runtime) -> None:
    thread = runtime._opening
    if thread is not None:
        thread.join(HANG_GUARD_S)
        assert not thread.is_alive(), "the opening thread did not end"


def test_a_close_while_the_server_starts_waits_for_it_and_releases_it(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started, go_on = threading.Event(), threading.Event()
    register = EmbeddedServer._register

    def register_after_the_close(self: EmbeddedServer, *args: Any, **kwargs: Any) -> None:
        # The postmaster is up; this process is not yet among its holders.
        started.set()
        assert go_on.wait(HANG_GUARD_S)
        register(self, *args, **kwargs)

    monkeypatch.setattr(EmbeddedServer, "_register", register_after_the_close)
    runtime, _ = _runtime(home)
    server = EmbeddedServer(home)
    runtime.start_opening()
    assert started.wait(HANG_GUARD_S), "the embedded server never started"
    assert server.running()
    closer = threading.Thread(target=runtime.close, name="close")
    closer.start()
    closer.join(1.0)  # lets a close that does not wait return first, as Ctrl-C's did
    go_on.set()
    closer.join(HANG_GUARD_S)
    assert not closer.is_alive(), "close did not return"
    _join_opening(runtime)
    assert server.wait_stopped(HANG_GUARD_S), "the embedded PostgreSQL was left running"
    assert server.status()["holders"] == []
    assert not runtime.is_open


def test_a_close_before_the_open_begins_starts_nothing(home: Path) -> None:
    runtime, _ = _runtime(home)
    runtime.close()
    runtime.start_opening()
    _join_opening(runtime)
    assert not runtime.is_open
    assert not EmbeddedServer(home).running()


def test_a_closed_database_handle_does_not_reopen(home: Path) -> None:
    settings = Settings(home=home, models="in-process")
    db = Database(settings)
    assert db.open()
    db.close()
    assert EmbeddedServer(home).wait_stopped(HANG_GUARD_S)
    with pytest.raises(DatabaseUnavailableError, match="closed"):
        db.open()
    assert not EmbeddedServer(home).running()


def _interrupted_before_holding(monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted(self: EmbeddedServer, *args: Any, **kwargs: Any) -> None:
        raise KeyboardInterrupt  # Ctrl-C, or SIGTERM as `serve` raises it

    monkeypatch.setattr(EmbeddedServer, "_register", interrupted)


def test_an_interrupt_between_start_and_hold_stops_the_server_it_started(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _interrupted_before_holding(monkeypatch)
    server = EmbeddedServer(home)
    with pytest.raises(KeyboardInterrupt):
        Database(Settings(home=home, models="in-process")).open()
    assert server.wait_stopped(HANG_GUARD_S), "the embedded PostgreSQL was left running"
    assert server.status()["holders"] == []


def test_an_interrupt_leaves_a_server_it_did_not_start_running(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = EmbeddedServer(home)
    server.pin()  # `pgrecall db start`: up before this process came
    _interrupted_before_holding(monkeypatch)
    with pytest.raises(KeyboardInterrupt):
        Database(Settings(home=home, models="in-process")).open()
    assert server.running()


def test_an_interrupt_just_after_holding_drops_the_hold_and_stops_the_server(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    register = EmbeddedServer._register

    def registered_then_interrupted(self: EmbeddedServer, *args: Any, **kwargs: Any) -> None:
        register(self, *args, **kwargs)
        raise KeyboardInterrupt

    monkeypatch.setattr(EmbeddedServer, "_register", registered_then_interrupted)
    server = EmbeddedServer(home)
    with pytest.raises(KeyboardInterrupt):
        Database(Settings(home=home, models="in-process")).open()
    assert server.status()["holders"] == []
    assert server.wait_stopped(HANG_GUARD_S), "the embedded PostgreSQL was left running"
