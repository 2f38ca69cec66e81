"""Entry commands of the CLI (add, get, list, delete, restore): the same service the MCP tools use."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import TYPE_CHECKING, Annotated, Any

import typer

from pgrecall.cli.common import echo_json, fail, open_app

if TYPE_CHECKING:
    from pgrecall.domain.entries import Entry


def _entry_json(entry: Entry, active_model: str | None) -> dict[str, Any]:
    from pgrecall.domain.entries import vector_pending

    data = asdict(entry)
    data["id"] = str(entry.id)
    data["vector_pending"] = vector_pending(entry, active_model)
    return data


def add(
    text: Annotated[str, typer.Argument(help="The entry text ('-' reads standard input).")],
    title: Annotated[str | None, typer.Option(help="Short title.")] = None,
    tag: Annotated[list[str] | None, typer.Option("--tag", "-t", help="A tag (repeatable).")] = None,
    source: Annotated[str | None, typer.Option(help="Where it came from (URL, file, conversation).")] = None,
    kind: Annotated[str | None, typer.Option(help="note, fact, decision, doc, …")] = None,
    language: Annotated[str | None, typer.Option(help="ISO 639-1 code; omit to detect.")] = None,
    metadata: Annotated[str | None, typer.Option(help="A JSON object.")] = None,
) -> None:
    """Store one entry and print it as JSON."""
    from pgrecall.errors import PgrecallError

    if text == "-":
        text = typer.get_text_stream("stdin").read()
    meta = None
    if metadata is not None:
        try:
            meta = json.loads(metadata)
        except ValueError as exc:
            fail(f"metadata: not valid JSON ({exc})")
    with open_app() as opened:
        try:
            written = opened.entries.add(
                opened.settings.owner,
                text=text,
                title=title,
                tags=tag,
                source=source,
                kind=kind,
                metadata=meta,
                language=language,
            )
        except PgrecallError as exc:
            fail(str(exc))
        out = _entry_json(written.entry, opened.active_model)
        out["language_resolution"] = written.language.how
    echo_json(out)


def get(entry_id: Annotated[str, typer.Argument(help="Entry id (UUID).")]) -> None:
    """Print one entry as JSON (deleted ones too, with deleted_at set)."""
    from pgrecall.errors import PgrecallError

    # The embedder loads lazily: opening it only names the active model (for vector_pending).
    with open_app() as opened:
        try:
            entry = opened.entries.get(opened.settings.owner, entry_id, include_deleted=True)
        except PgrecallError as exc:
            fail(str(exc))
        echo_json(_entry_json(entry, opened.active_model))


def list_entries(
    limit: Annotated[int, typer.Option(help="Entries per page (1-200).")] = 20,
    cursor: Annotated[str | None, typer.Option(help="next_cursor of the previous page.")] = None,
    kind: Annotated[str | None, typer.Option()] = None,
    source: Annotated[str | None, typer.Option()] = None,
    language: Annotated[str | None, typer.Option(help="ISO 639-1 code.")] = None,
    tag: Annotated[list[str] | None, typer.Option("--tag", help="Entries with all these tags.")] = None,
    deleted: Annotated[bool, typer.Option("--deleted", help="Include soft-deleted entries.")] = False,
) -> None:
    """Print one page of entries, newest first, and the cursor of the next page."""
    from pgrecall.domain.entries import EntryFilters
    from pgrecall.errors import PgrecallError

    filters = EntryFilters(kind=kind, source=source, language=language, tags_all=tag, include_deleted=deleted)
    with open_app() as opened:
        try:
            page = opened.entries.list(opened.settings.owner, filters, limit=limit, cursor=cursor)
        except PgrecallError as exc:
            fail(str(exc))
        entries = [_entry_json(e, opened.active_model) for e in page.entries]
    echo_json({"entries": entries, "next_cursor": page.next_cursor})


def delete(entry_id: Annotated[str, typer.Argument(help="Entry id (UUID).")]) -> None:
    """Soft-delete an entry (restore brings it back)."""
    from pgrecall.errors import PgrecallError

    with open_app(with_embedder=False) as opened:
        try:
            entry = opened.entries.delete(opened.settings.owner, entry_id)
        except PgrecallError as exc:
            fail(str(exc))
    typer.echo(f"deleted {entry.id}")


def restore(entry_id: Annotated[str, typer.Argument(help="Entry id (UUID).")]) -> None:
    """Bring back a soft-deleted entry."""
    from pgrecall.errors import PgrecallError

    with open_app(with_embedder=False) as opened:
        try:
            entry = opened.entries.restore(opened.settings.owner, entry_id)
        except PgrecallError as exc:
            fail(str(exc))
    typer.echo(f"restored {entry.id}")


def register(app: typer.Typer) -> None:
    """Add this module's commands to the root app."""
    app.command("add")(add)
    app.command("get")(get)
    app.command("list")(list_entries)
    app.command("delete")(delete)
    app.command("restore")(restore)
