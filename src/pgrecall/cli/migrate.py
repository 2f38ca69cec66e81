"""`pgrecall migrate …`: move the database schema (Alembic revisions shipped inside pgrecall)."""

from __future__ import annotations

from typing import Annotated

import typer

from pgrecall.cli.common import database, fail, settings, where

app = typer.Typer(help="Move the database schema (Alembic revisions shipped inside pgrecall).")


@app.command("upgrade")
def migrate_upgrade(revision: Annotated[str, typer.Argument(help="Target revision.")] = "head") -> None:
    """Upgrade the schema to REVISION (default: head)."""
    from pgrecall.db import migrate as schema

    current = settings()
    with database(current) as db:
        before = schema.current_revision(db.url)
        schema.upgrade(db.url, revision)
        after = schema.current_revision(db.url)
    typer.echo(f"{where(current)}: {before or 'empty'} -> {after}")


@app.command("downgrade")
def migrate_downgrade(revision: Annotated[str, typer.Argument(help="Target revision, or 'base'.")]) -> None:
    """Downgrade the schema to REVISION ('base' removes every pgrecall table and its data)."""
    from pgrecall.db import migrate as schema

    current = settings()
    with database(current) as db:
        before = schema.current_revision(db.url)
        schema.downgrade(db.url, revision)
        after = schema.current_revision(db.url)
    typer.echo(f"{where(current)}: {before or 'empty'} -> {after or 'base'}")


@app.command("current")
def migrate_current() -> None:
    """Print the revision the database is at."""
    from pgrecall.db import migrate as schema

    with database(settings()) as db:
        revision = schema.current_revision(db.url)
    head = schema.head_revision()
    state = "at head" if revision == head else f"head is {head}"
    typer.echo(f"{revision or 'empty (no revision)'} ({state})")


@app.command("history")
def migrate_history() -> None:
    """List the revisions this pgrecall ships, oldest first."""
    from pgrecall.db import migrate as schema

    for rev, down, doc in schema.history():
        typer.echo(f"{down or 'base'} -> {rev}: {doc.splitlines()[0] if doc else ''}")


@app.command("stamp")
def migrate_stamp(revision: Annotated[str, typer.Argument(help="Revision to record.")]) -> None:
    """Record REVISION as current without running any migration (for databases migrated by hand)."""
    from pgrecall.db import migrate as schema

    current = settings()
    with database(current) as db:
        schema.stamp(db.url, revision)
    typer.echo(f"{where(current)}: stamped {revision}")


@app.command("check")
def migrate_check() -> None:
    """Exit 0 when the database is at head, 1 (with the command to run) when it is not."""
    from pgrecall.db import migrate as schema

    current = settings()
    with database(current) as db:
        revision = schema.current_revision(db.url)
    head = schema.head_revision()
    if revision != head:
        prefix = "" if current.embedded else "PGRECALL_DATABASE_URL=<url> "
        fail(
            f"database at {revision or 'no revision'}, head is {head}; "
            f"run: {prefix}pgrecall migrate upgrade head"
        )
    typer.echo(f"at head ({head})")


@app.command("citus")
def migrate_citus(
    undo: Annotated[
        bool, typer.Option("--undo", help="The way back: make every table a plain coordinator table again.")
    ] = False,
    prepare_node: Annotated[
        str | None,
        typer.Option(
            "--prepare-node",
            help="URL of a node about to be added (as a superuser): ready it for citus_add_node.",
        ),
    ] = None,
    check_node: Annotated[
        str | None,
        typer.Option(
            "--check-node",
            help="URL of a node about to be added: exit 1, saying what is missing, unless it is prepared.",
        ),
    ] = None,
    node_sql: Annotated[
        bool,
        typer.Option(
            "--node-sql",
            help="Print the statements a superuser runs on each worker and new node (managed services).",
        ),
    ] = False,
    allow_untested_citus: Annotated[
        bool,
        typer.Option(
            "--allow-untested-citus", help="Run on a Citus release outside the tested range (at your risk)."
        ),
    ] = False,
) -> None:
    """Distribute the store on a Citus cluster by owner (run on the coordinator, at schema head).

    --undo works at any revision: it is also the first step of upgrading a distributed store.

    Repeatable; checks the Citus version and the privileges it needs on every node before changing
    anything. To add a worker: `--prepare-node URL` (or `--check-node URL`) first, then
    citus_add_node on the coordinator, then this command again (it sets the new worker up), then
    citus_rebalance_start.
    """
    import psycopg

    from pgrecall.db import citus
    from pgrecall.db import migrate as schema
    from pgrecall.errors import PgrecallError

    echo = lambda line: typer.echo(f"  {line}")  # noqa: E731 - one indented line per step
    if node_sql:
        typer.echo(citus.node_sql(), nl=False)
        return
    node = prepare_node or check_node
    if node is not None:
        flag = "--prepare-node" if prepare_node is not None else "--check-node"
        try:
            (citus.prepare_node if prepare_node is not None else citus.check_node)(node, echo)
        except PgrecallError as exc:
            fail(f"{flag}: {exc}")
        except psycopg.Error as exc:
            fail(f"{flag}: {_first_line(exc)}")
        return
    current = settings()
    with database(current) as db:
        try:
            if undo:
                # At any revision: the way back is also how a distributed store is upgraded past a
                # migration Citus cannot run (0019 changes a generated column).
                citus.undistribute(db.url, echo)
            else:
                schema.require_head(db.url, embedded=current.embedded)
                citus.distribute(db.url, echo, allow_untested=allow_untested_citus)
        except PgrecallError as exc:
            fail(str(exc))
        except psycopg.Error as exc:
            fail(f"migrate citus stopped (run it again once fixed; done steps are kept): {_first_line(exc)}")
    typer.echo(f"{where(current)}: {'undistributed' if undo else 'distributed on Citus'}")


def _first_line(exc: Exception) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
