"""The `pgrecall` command line: config, db, migrate, and entry commands for operators."""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Any, NoReturn

import typer
from pydantic import ValidationError

from pgrecall import __version__, schema
from pgrecall.config import Settings
from pgrecall.db import Database
from pgrecall.embedded import EmbeddedServer
from pgrecall.errors import PgrecallError

app = typer.Typer(
    help="pgrecall: a memory and knowledge store for AI assistants, kept in PostgreSQL.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
db_app = typer.Typer(help="The embedded PostgreSQL server (unused when PGRECALL_DATABASE_URL is set).")
migrate_app = typer.Typer(help="Move the database schema (Alembic revisions shipped inside pgrecall).")
app.add_typer(db_app, name="db")
app.add_typer(migrate_app, name="migrate")


def _fail(message: str, code: int = 1) -> NoReturn:
    typer.echo(f"pgrecall: {message}", err=True)
    raise typer.Exit(code)


def _settings() -> Settings:
    try:
        return Settings()
    except ValidationError as exc:
        problems = "; ".join(
            f"PGRECALL_{'_'.join(str(p) for p in err['loc']).upper()}: {err['msg']}" for err in exc.errors()
        )
        _fail(f"invalid configuration: {problems}", 2)


def _echo_json(data: Any) -> None:
    typer.echo(json.dumps(data, indent=2, ensure_ascii=False, default=str))


@contextmanager
def _database(settings: Settings) -> Iterator[Database]:
    try:
        with Database(settings) as database:
            yield database
    except PgrecallError as exc:
        _fail(str(exc))


def _where(settings: Settings) -> str:
    return (
        f"embedded database in {settings.home}" if settings.embedded else "database at PGRECALL_DATABASE_URL"
    )


@app.callback()
def _main(
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log at INFO on stderr.")] = False,
) -> None:
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )


@app.command()
def version() -> None:
    """Print the pgrecall version and the schema revision it needs."""
    typer.echo(f"pgrecall {__version__} (schema {schema.head_revision()})")


@app.command("config")
def show_config() -> None:
    """Print the effective settings (secrets masked) as JSON."""
    _echo_json(_settings().masked())


# -- db -------------------------------------------------------------------------------


def _embedded_only(settings: Settings) -> EmbeddedServer:
    if not settings.embedded:
        _fail("PGRECALL_DATABASE_URL is set, so the embedded server is not used; unset it to manage it")
    return EmbeddedServer(settings.home)


@db_app.command("start")
def db_start() -> None:
    """Start the embedded server and keep it running after this command exits."""
    server = _embedded_only(_settings())
    try:
        url = server.pin()
    except PgrecallError as exc:
        _fail(str(exc))
    typer.echo(f"embedded PostgreSQL running; connect with: psql '{url}'")


@db_app.command("stop")
def db_stop() -> None:
    """Stop the embedded server (any pgrecall process using it loses its connection)."""
    server = _embedded_only(_settings())
    try:
        server.stop()
    except PgrecallError as exc:
        _fail(str(exc))
    typer.echo("embedded PostgreSQL stopped")


@db_app.command("status")
def db_status() -> None:
    """Show whether the embedded server runs, who holds it, and its URL."""
    _echo_json(_embedded_only(_settings()).status())


@db_app.command("url")
def db_url() -> None:
    """Print a libpq URL for the running embedded server (for psql); exit 1 if it is not running."""
    server = _embedded_only(_settings())
    if not server.running():
        _fail("the embedded server is not running; start it with: pgrecall db start")
    typer.echo(server.url())


# -- migrate ----------------------------------------------------------------------------


@migrate_app.command("upgrade")
def migrate_upgrade(revision: Annotated[str, typer.Argument(help="Target revision.")] = "head") -> None:
    """Upgrade the schema to REVISION (default: head)."""
    settings = _settings()
    with _database(settings) as database:
        before = schema.current_revision(database.url)
        schema.upgrade(database.url, revision)
        after = schema.current_revision(database.url)
    typer.echo(f"{_where(settings)}: {before or 'empty'} -> {after}")


@migrate_app.command("downgrade")
def migrate_downgrade(revision: Annotated[str, typer.Argument(help="Target revision, or 'base'.")]) -> None:
    """Downgrade the schema to REVISION ('base' removes every pgrecall table and its data)."""
    settings = _settings()
    with _database(settings) as database:
        before = schema.current_revision(database.url)
        schema.downgrade(database.url, revision)
        after = schema.current_revision(database.url)
    typer.echo(f"{_where(settings)}: {before or 'empty'} -> {after or 'base'}")


@migrate_app.command("current")
def migrate_current() -> None:
    """Print the revision the database is at."""
    settings = _settings()
    with _database(settings) as database:
        current = schema.current_revision(database.url)
    head = schema.head_revision()
    state = "at head" if current == head else f"head is {head}"
    typer.echo(f"{current or 'empty (no revision)'} ({state})")


@migrate_app.command("history")
def migrate_history() -> None:
    """List the revisions this pgrecall ships, oldest first."""
    for rev, down, doc in schema.history():
        typer.echo(f"{down or 'base'} -> {rev}: {doc.splitlines()[0] if doc else ''}")


@migrate_app.command("stamp")
def migrate_stamp(revision: Annotated[str, typer.Argument(help="Revision to record.")]) -> None:
    """Record REVISION as current without running any migration (for databases migrated by hand)."""
    settings = _settings()
    with _database(settings) as database:
        schema.stamp(database.url, revision)
    typer.echo(f"{_where(settings)}: stamped {revision}")


@migrate_app.command("check")
def migrate_check() -> None:
    """Exit 0 when the database is at head, 1 (with the command to run) when it is not."""
    settings = _settings()
    with _database(settings) as database:
        current = schema.current_revision(database.url)
    head = schema.head_revision()
    if current != head:
        prefix = "" if settings.embedded else "PGRECALL_DATABASE_URL=<url> "
        _fail(
            f"database at {current or 'no revision'}, head is {head}; "
            f"run: {prefix}pgrecall migrate upgrade head"
        )
    typer.echo(f"at head ({head})")


def main() -> None:
    """Console-script entry point."""
    from pgrecall import (  # noqa: F401 - the modules register their commands
        cli_bench,
        cli_entries,
        cli_eval,
        cli_ops,
        cli_serve,
        cli_tokens,
        cli_transfer,
    )

    app()
