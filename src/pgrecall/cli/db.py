"""`pgrecall db start|stop|status|url`: the embedded PostgreSQL server."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from pgrecall.cli import output
from pgrecall.cli.common import fail, settings

if TYPE_CHECKING:
    from pgrecall.config import Settings
    from pgrecall.db.embedded import EmbeddedServer

app = typer.Typer(help="The embedded PostgreSQL server (unused when PGRECALL_DATABASE_URL is set).")


def _embedded_only(current: Settings) -> EmbeddedServer:
    from pgrecall.db.embedded import EmbeddedServer

    if not current.embedded:
        fail("PGRECALL_DATABASE_URL is set, so the embedded server is not used; unset it to manage it")
    return EmbeddedServer(current.home, shared_buffers_mb=current.db_shared_buffers_mb)


def _said(exc: Exception, server: EmbeddedServer) -> str:
    from pgrecall.db.embedded import unusable_home

    return unusable_home(exc, server.home) if isinstance(exc, OSError) else str(exc)


@app.command("start")
def db_start() -> None:
    """Start the embedded server and keep it running after this command exits."""
    from pgrecall.errors import PgrecallError

    server = _embedded_only(settings())
    try:
        url = server.pin()
    except (PgrecallError, OSError) as exc:
        fail(_said(exc, server))
    typer.echo(f"embedded PostgreSQL running; connect with: psql '{url}'")


@app.command("stop")
def db_stop(
    force: Annotated[
        bool, typer.Option("--force", help="Stop it even while other pgrecall processes hold it.")
    ] = False,
) -> None:
    """Stop the embedded server; refused while other pgrecall processes use it, unless --force."""
    from pgrecall.errors import PgrecallError

    server = _embedded_only(settings())
    try:
        server.stop(force=force)
    except (PgrecallError, OSError) as exc:
        fail(_said(exc, server))
    typer.echo("embedded PostgreSQL stopped")


def _status_text(status: dict[str, Any]) -> str:
    holders = status["holders"]
    if not status["initialized"]:
        state = "not created yet (the first command creates it)"
    elif not status["running"]:
        state = "stopped"
    else:
        state = "running, kept by `pgrecall db start`" if status["pinned"] else "running"
    return output.key_values(
        [
            ("home", status["home"]),
            ("server", state),
            ("holders", ", ".join(f"pid {pid}" for pid in holders) if holders else "none"),
            ("url", status["url"]),
        ]
    )


@app.command("status")
def db_status(as_json: output.JsonFlag = False) -> None:
    """Show whether the embedded server runs, who holds it, and its URL."""
    from pgrecall.errors import PgrecallError

    server = _embedded_only(settings())
    try:
        status = server.status()
    except (PgrecallError, OSError) as exc:
        fail(_said(exc, server))
    output.emit(status, as_json, _status_text)


@app.command("url")
def db_url() -> None:
    """Print a libpq URL for the running embedded server (for psql); exit 1 if it is not running."""
    from pgrecall.errors import PgrecallError

    server = _embedded_only(settings())
    try:
        if not server.running():
            fail("the embedded server is not running; start it with: pgrecall db start")
        typer.echo(server.url())
    except (PgrecallError, OSError) as exc:
        fail(_said(exc, server))
