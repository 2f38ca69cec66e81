"""`pgrecall link`, `unlink` and `related`: the link tools on the command line (ids as `list` shows them)."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from pgrecall.cli import output
from pgrecall.cli.common import fail, open_app
from pgrecall.cli.filters import upto
from pgrecall.cli.output import JsonFlag
from pgrecall.domain.links import MAX_RELATED_LIMIT

_ID_HELP = "Entry id, or a unique start or end of it (4+ hex digits, as `list` shows)."


def link(
    from_id: Annotated[str, typer.Argument(metavar="FROM", help=_ID_HELP)],
    relation: Annotated[str, typer.Argument(metavar="RELATION", help="depends_on, part_of, contradicts, …")],
    to_id: Annotated[str, typer.Argument(metavar="TO", help=_ID_HELP)],
    note: Annotated[str | None, typer.Option(metavar="TEXT", help="Why they are linked.")] = None,
) -> None:
    """Link two entries: FROM RELATION TO (e.g. `pgrecall link 3f2a depends_on 9c1e`)."""
    from pgrecall.errors import PgrecallError

    with open_app(with_embedder=False) as opened:
        owner = opened.settings.owner
        try:
            source = opened.entries.resolve_id(owner, from_id)
            target = opened.entries.resolve_id(owner, to_id)
            made, created = opened.links.link(owner, str(source), str(target), relation, note)
        except PgrecallError as exc:
            fail(str(exc))
    verb = "linked" if created else "already linked"
    typer.echo(f"{verb} {made.from_id} {made.relation} {made.to_id}")


def unlink(
    from_id: Annotated[str, typer.Argument(metavar="FROM", help=_ID_HELP)],
    to_id: Annotated[str, typer.Argument(metavar="TO", help=_ID_HELP)],
    relation: Annotated[
        str | None, typer.Option(metavar="RELATION", help="Only this relation (default: every one).")
    ] = None,
) -> None:
    """Remove the links from FROM to TO."""
    from pgrecall.errors import PgrecallError

    with open_app(with_embedder=False) as opened:
        owner = opened.settings.owner
        try:
            source = opened.entries.resolve_id(owner, from_id, include_deleted=True)
            target = opened.entries.resolve_id(owner, to_id, include_deleted=True)
            removed = opened.links.unlink(owner, str(source), str(target), relation)
        except PgrecallError as exc:
            fail(str(exc))
    typer.echo(f"removed {', '.join(removed)}" if removed else "no such link")


def _related_text(data: dict[str, Any]) -> str:
    if not data["related"]:
        return "no linked entries"
    rows = [
        [
            str(r["depth"]),
            ("→ " if r["direction"] == "out" else "← ") + r["relation"],
            output.short_id(r["id"]),
            r["title"] or r["snippet"],
        ]
        for r in data["related"]
    ]
    return output.table(["DEPTH", "LINK", "ID", "TITLE / TEXT"], rows, flex=3)


def related(
    entry_id: Annotated[str, typer.Argument(metavar="ID", help=_ID_HELP)],
    relation: Annotated[str | None, typer.Option(metavar="RELATION", help="Only this relation.")] = None,
    direction: Annotated[
        str, typer.Option(metavar="WAY", help="out (it links to), in (links to it) or both.")
    ] = "both",
    depth: Annotated[int, typer.Option(metavar="N", help="1, or 2 to follow the links of those too.")] = 1,
    limit: Annotated[
        int, typer.Option(metavar="N", help=f"At most this many {upto(MAX_RELATED_LIMIT)}.")
    ] = 50,
    as_json: JsonFlag = False,
) -> None:
    """Entries linked to an entry (→ it links to them, ← they link to it)."""
    from dataclasses import asdict

    from pgrecall.errors import PgrecallError

    with open_app(with_embedder=False) as opened:
        owner = opened.settings.owner
        try:
            ident = opened.entries.resolve_id(owner, entry_id)
            found = opened.links.related(
                owner, ident, relation=relation, direction=direction, depth=depth, limit=limit
            )
        except PgrecallError as exc:
            fail(str(exc))
    output.emit({"related": [asdict(r) for r in found]}, as_json, _related_text)


def register(app: typer.Typer) -> None:
    """Add this module's commands to the root app."""
    app.command("link")(link)
    app.command("unlink")(unlink)
    app.command("related")(related)
