"""`pgrecall activity` and `pgrecall tags`: the recent_activity and list_tags tools on the command line."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from pgrecall.cli import output
from pgrecall.cli.common import fail, open_app
from pgrecall.cli.filters import upto
from pgrecall.cli.output import JsonFlag
from pgrecall.domain.activity import MAX_ACTIVITY_LIMIT, MAX_TAG_LIMIT


def _activity_text(data: dict[str, Any]) -> str:
    rows = [
        [output.moment(c["at"]), c["change"], output.short_id(c["id"]), c["kind"], c["title"] or c["snippet"]]
        for c in data["changes"]
    ]
    lines = [f"since {output.moment(data['since'])}"]
    if rows:
        lines.append(output.table(["WHEN", "CHANGE", "ID", "KIND", "TITLE / TEXT"], rows, flex=4))
    else:
        lines.append("no changes")
    if data["next_cursor"]:
        lines.append(f"more: pgrecall activity --since {data['since_given']} --cursor {data['next_cursor']}")
    return "\n".join(lines)


def activity(
    since: Annotated[
        str,
        typer.Option(
            metavar="WHEN", help="An ISO 8601 time (no offset = UTC) or a duration back: 30m, 24h, 7d, 2w."
        ),
    ] = "7d",
    limit: Annotated[
        int, typer.Option(metavar="N", help=f"Changes per page {upto(MAX_ACTIVITY_LIMIT)}.")
    ] = 20,
    cursor: Annotated[
        str | None, typer.Option(metavar="CURSOR", help="next_cursor of the previous page.")
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """What was added, updated or deleted since a time, newest first."""
    from pgrecall.errors import PgrecallError

    with open_app(with_embedder=False) as opened:
        try:
            page = opened.activity.since(opened.settings.owner, since, limit=limit, cursor=cursor)
        except PgrecallError as exc:
            fail(str(exc))
    data = {
        "since": page.since.isoformat(),
        "since_given": since,
        "changes": [
            {
                "id": str(c.id),
                "title": c.title,
                "snippet": c.snippet or None,
                "kind": c.kind,
                "change": c.change,
                "at": c.at.isoformat(),
            }
            for c in page.changes
        ],
        "next_cursor": page.next_cursor,
    }
    output.emit(data, as_json, _activity_text)


def _tags_text(data: dict[str, Any]) -> str:
    if not data["tags"]:
        return "no tags"
    rows = [[str(t["entries"]), t["tag"]] for t in data["tags"]]
    text = output.table(["ENTRIES", "TAG"], rows, flex=1)
    return text + ("\n… more: raise --limit" if data["truncated"] else "")


def tags(
    prefix: Annotated[
        str | None, typer.Option(metavar="TEXT", help="Only tags starting with this (any case).")
    ] = None,
    limit: Annotated[
        int, typer.Option(metavar="N", help=f"At most this many tags {upto(MAX_TAG_LIMIT)}.")
    ] = 100,
    as_json: JsonFlag = False,
) -> None:
    """Tags in use on live entries, with their counts, most used first."""
    from pgrecall.errors import PgrecallError

    with open_app(with_embedder=False) as opened:
        try:
            found = opened.activity.tags_with_prefix(opened.settings.owner, prefix, limit)
        except PgrecallError as exc:
            fail(str(exc))
    data = {"tags": [{"tag": t.tag, "entries": t.entries} for t in found.tags], "truncated": found.truncated}
    output.emit(data, as_json, _tags_text)


def register(app: typer.Typer) -> None:
    """Add this module's commands to the root app."""
    app.command("activity")(activity)
    app.command("tags")(tags)
