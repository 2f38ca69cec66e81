"""`pgrecall debug`: look inside what pgrecall runs (the search statement, its parameters, its plan)."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from pgrecall.cli import filters as f
from pgrecall.cli.common import fail, open_app
from pgrecall.domain.validation import MAX_TOP_K

app = typer.Typer(help="Look inside what pgrecall runs.", no_args_is_help=True)


@app.command("search-sql")
def search_sql(
    query: Annotated[str, typer.Argument(help="The question, as search would get it.")],
    mode: Annotated[str, typer.Option(help="hybrid, vector or lexical.")] = "hybrid",
    top_k: Annotated[int, typer.Option("--top-k", help=f"Hits asked for {f.upto(MAX_TOP_K)}.")] = 10,
    explain: Annotated[bool, typer.Option(help="Run it: EXPLAIN (ANALYZE, BUFFERS) instead.")] = False,
) -> None:
    """Print the exact SQL statement a search runs for QUERY and its bound parameters (JSON).

    The statement is the one search sends, identifiers composed; the parameters are what it
    binds (the question's vector in full). With --explain, the plan of running it, with timings.
    Paste both into psql (as the pool's role, after `SELECT pgrecall_set_local('pgrecall.owner',
    'OWNER')`) to run it by hand.
    """
    from pgrecall.errors import PgrecallError
    from pgrecall.services.search import SearchOptions

    with open_app() as opened:
        owner = opened.settings.owner
        options = SearchOptions(mode=mode)
        try:
            if explain:
                typer.echo(opened.search.explain(owner, query, top_k=top_k, options=options))
                return
            text, bound, _ = opened.search.statement(owner, query, top_k=top_k, options=options)
        except PgrecallError as exc:
            fail(str(exc))
    typer.echo(text.strip())
    typer.echo("-- parameters")
    typer.echo(json.dumps(bound, indent=2, default=_plain, ensure_ascii=False))


def _plain(value: object) -> object:
    """JSON for what the statement binds: vectors as lists, the rest as text."""
    tolist = getattr(value, "tolist", None)
    return tolist() if callable(tolist) else str(value)


def register(root: typer.Typer) -> None:
    """Add this module's group to the root app."""
    root.add_typer(app, name="debug")
