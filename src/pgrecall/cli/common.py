"""Helpers every command module shares: settings, one-line failures, JSON output, an open App."""

from __future__ import annotations

import json
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, NoReturn

import typer

if TYPE_CHECKING:
    from types import FrameType

    from pgrecall.app import App
    from pgrecall.config import Settings
    from pgrecall.db.database import Database


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def stop_on_sigterm() -> None:
    """SIGTERM ends a long-running command as Ctrl-C does, through its `finally` blocks.

    Python's default would end the process on the spot, leaving the embedded PostgreSQL held by a
    dead process until the next start prunes it.
    """
    signal.signal(signal.SIGTERM, _interrupt)


def fail(message: str, code: int = 1) -> NoReturn:
    """Print `pgrecall: message` on stderr and exit with `code`."""
    typer.echo(f"pgrecall: {message}", err=True)
    raise typer.Exit(code)


def settings() -> Settings:
    """The effective settings; an invalid PGRECALL_* variable ends the command with exit code 2."""
    from pydantic import ValidationError

    from pgrecall.config import Settings

    try:
        return Settings()
    except ValidationError as exc:
        for err in exc.errors():
            variable = "PGRECALL_" + "_".join(str(p) for p in err["loc"]).upper()
            # A validator's own ValueError reads better than pydantic's "Value error, …" wrapper.
            cause = err.get("ctx", {}).get("error")
            message = str(cause) if isinstance(cause, ValueError) else err["msg"]
            message = message.removeprefix(f"{variable} ")
            typer.echo(f"pgrecall: invalid configuration: {variable}: {message}", err=True)
        raise typer.Exit(2) from None


def echo_json(data: Any) -> None:
    """Print `data` as indented JSON."""
    typer.echo(json.dumps(data, indent=2, ensure_ascii=False, default=str))


@contextmanager
def database(current: Settings) -> Iterator[Database]:
    """The database (embedded or by URL) for one command; pgrecall errors become one line."""
    from pgrecall.db.database import Database
    from pgrecall.errors import PgrecallError

    try:
        with Database(current) as opened:
            yield opened
    except PgrecallError as exc:
        fail(str(exc))


def where(current: Settings) -> str:
    """Which database a command acted on, in words."""
    return f"embedded database in {current.home}" if current.embedded else "database at PGRECALL_DATABASE_URL"


def _say_database_start(current: Settings) -> None:
    """On a terminal, one stderr line before the embedded server's start (seconds of silence otherwise)."""
    if not current.embedded or not sys.stderr.isatty():
        return
    from pgrecall.db.embedded import EmbeddedServer

    server = EmbeddedServer(current.home)
    if not server.initialized():
        typer.echo(f"pgrecall: creating the database in {current.home}…", err=True)
    elif not server.running():
        typer.echo("pgrecall: starting the database…", err=True)


@contextmanager
def open_app(with_embedder: bool = True) -> Iterator[App]:
    """An open App for one CLI command; pgrecall errors become one line on stderr."""
    from pgrecall.app import App
    from pgrecall.errors import PgrecallError

    current = settings()
    _say_database_start(current)
    try:
        with App(current, embedder="settings" if with_embedder else None) as opened:
            yield opened
    except PgrecallError as exc:
        fail(str(exc))
