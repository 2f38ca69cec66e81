"""Operator commands of the CLI: reembed and stats."""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated

import typer

from pgrecall.cli import output
from pgrecall.cli.common import fail, open_app
from pgrecall.cli.output import JsonFlag


def reembed(
    batch_size: Annotated[int, typer.Option(min=1, max=2048, help="Entries per embedding batch.")] = 32,
) -> None:
    """Fill every pending vector for the active model (resumable; safe to interrupt and re-run)."""
    from tqdm import tqdm

    from pgrecall.errors import PgrecallError

    with open_app() as opened:
        embedder = opened.embedder
        if embedder is None:
            fail("no embedder configured")
        total = opened.maintenance.pending_total()
        with tqdm(total=total, unit="entry", desc=f"reembed {embedder.model}", disable=None) as bar:

            def advance(n: int) -> None:
                bar.update(n)

            try:
                filled = opened.maintenance.reembed(batch_size=batch_size, on_batch=advance)
            except PgrecallError as exc:
                fail(f"{exc} (finished batches are kept; run it again to resume)")
        left = opened.maintenance.pending_total()
    typer.echo(f"filled {sum(filled.values())} vectors for {embedder.model}; {left} still pending")


def stats(as_json: JsonFlag = False) -> None:
    """Entries by language and kind, pending vectors, the embedding model and the schema revision."""
    with open_app(with_embedder=True) as opened:
        figures = asdict(opened.entries.stats(opened.settings.owner))
    output.emit(figures, as_json, output.stats_text)


def register(app: typer.Typer) -> None:
    """Add this module's commands to the root app."""
    app.command("reembed")(reembed)
    app.command("stats")(stats)
