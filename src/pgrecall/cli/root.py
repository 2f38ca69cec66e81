"""The `pgrecall` command: the root app, which registers every command group explicitly.

Command modules import only typer and the standard library at the top; everything heavier
(the database, the models, the MCP SDK) is imported by the command that needs it, so
`pgrecall --help` answers at once.
"""

from __future__ import annotations

import logging
import sys
from typing import Annotated

import typer

from pgrecall.cli import bench, common, db, entries, eval, migrate, ops, serve, tokens, transfer

app = typer.Typer(
    help="pgrecall: a memory and knowledge store for AI assistants, kept in PostgreSQL.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
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
ops.register(app)
transfer.register(app)
serve.register(app)
eval.register(app)
bench.register(app)


def main() -> None:
    """Console-script entry point."""
    app()
