"""The `pgrecall` command: the root app, which registers every command group explicitly.

Command modules import only typer and the standard library at the top; everything heavier
(the database, the models, the MCP SDK) is imported by the command that needs it, so
`pgrecall --help` answers at once.
"""

from __future__ import annotations

import logging
import sys
from typing import Annotated, Any

import typer
import typer.core

from pgrecall.cli import (
    activity,
    bench,
    common,
    db,
    debug,
    documents,
    entries,
    eval,
    links,
    migrate,
    ops,
    search,
    serve,
    tokens,
    transfer,
    ui,
)

# Shells complete `pgrecall`, whatever started us (`python -m pgrecall` would name itself otherwise).
PROG_NAME = "pgrecall"
_TYPE_NAMES = {"str": "TEXT", "int": "INTEGER", "float": "FLOAT", "Path": "PATH", "datetime": "DATETIME"}

app = typer.Typer(
    help="pgrecall: a memory and knowledge store for AI assistants, kept in PostgreSQL.",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
)


def _plain_type(param: Any, ctx: Any) -> str | None:
    """The value placeholder help shows: the option's metavar, click's TEXT/INTEGER…, none for flags."""
    if isinstance(param, typer.core.TyperArgument):
        return None  # the argument's name already stands in the first column
    if param.metavar is not None:
        return str(param.metavar)
    if param.is_flag or param.count:
        return None
    label = str(param.display_type(ctx)).strip("<>").removeprefix("list[").removesuffix("]")
    label = label.removesuffix(" range")
    return _TYPE_NAMES.get(label) or (f"[{label}]" if "|" in label else label.upper())


# typer 0.29 shows Python types in angle brackets (`<str>`, `<bool>` even for flags) in every
# command's help; one replacement here covers every command module.
typer.core.TyperOption.display_type_rich = _plain_type  # type: ignore[method-assign,assignment]
typer.core.TyperArgument.display_type_rich = _plain_type  # type: ignore[method-assign,assignment]


def _show_version(value: bool) -> None:
    if value:
        version()
        raise typer.Exit()


@app.callback()
def _main(
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log at INFO on stderr.")] = False,
    show_version: Annotated[
        bool,
        typer.Option("--version", callback=_show_version, is_eager=True, help="Print the version and exit."),
    ] = False,
) -> None:
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )


@app.command()
def version() -> None:
    """Print the pgrecall version and the schema revision it needs."""
    from pgrecall import __version__
    from pgrecall.db import migrate as schema

    typer.echo(f"pgrecall {__version__} (schema {schema.head_revision()})")


@app.command("config")
def show_config() -> None:
    """Print the effective settings (secrets masked) as JSON."""
    common.echo_json(common.settings().masked())


app.add_typer(db.app, name="db")
app.add_typer(migrate.app, name="migrate")
app.add_typer(tokens.app, name="token")
entries.register(app)
search.register(app)
activity.register(app)
links.register(app)
ops.register(app)
transfer.register(app)
documents.register(app)
debug.register(app)
serve.register(app)
eval.register(app)
bench.register(app)
ui.register(app)


def main() -> None:
    """Console-script entry point."""
    app(prog_name=PROG_NAME)
