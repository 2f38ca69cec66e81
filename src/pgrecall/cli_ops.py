"""Operator commands of the CLI: reembed and stats."""

from __future__ import annotations

from typing import Annotated

import typer
from tqdm import tqdm

from pgrecall.cli import _echo_json, _fail, app
from pgrecall.cli_entries import open_app
from pgrecall.errors import PgrecallError
from pgrecall.reembed import reembed_all


@app.command("reembed")
def reembed(
    batch_size: Annotated[int, typer.Option(min=1, max=2048, help="Entries per embedding batch.")] = 32,
) -> None:
    """Fill every pending vector for the active model (resumable; safe to interrupt and re-run)."""
    with open_app() as opened:
        embedder = opened.embedder
        if embedder is None:
            _fail("no embedder configured")
        total = opened.store.pending_total(embedder.model)
        with tqdm(total=total, unit="entry", desc=f"reembed {embedder.model}", disable=None) as bar:

            def advance(n: int) -> None:
                bar.update(n)

            try:
                filled = reembed_all(opened.store, embedder, batch_size=batch_size, on_batch=advance)
            except PgrecallError as exc:
                _fail(f"{exc} (finished batches are kept; run it again to resume)")
        left = opened.store.pending_total(embedder.model)
    typer.echo(f"filled {sum(filled.values())} vectors for {embedder.model}; {left} still pending")


@app.command("stats")
def stats() -> None:
    """Entries by language and kind, pending vectors, the embedding model and the schema revision."""
    with open_app(with_embedder=True) as opened:
        _echo_json(opened.stats(opened.settings.owner))
