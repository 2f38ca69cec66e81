"""Entry commands of the CLI (add, get, list, delete, restore): the same service the MCP tools use."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict
from typing import Annotated, Any

import typer

from pgrecall.app import App
from pgrecall.cli import _echo_json, _fail, _settings, app
from pgrecall.errors import PgrecallError
from pgrecall.store.entries import Entry, ListFilters


@contextmanager
def open_app(with_embedder: bool = True) -> Iterator[App]:
    """An open App for one CLI command; pgrecall errors become one line on stderr."""
    settings = _settings()
    try:
        with App(settings, embedder="settings" if with_embedder else None) as opened:
            yield opened
    except PgrecallError as exc:
        _fail(str(exc))


def _entry_json(entry: Entry) -> dict[str, Any]:
    data = asdict(entry)
    data["id"] = str(entry.id)
    data["vector_pending"] = entry.embedding_model is None
    return data


@app.command("add")
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
    if text == "-":
        text = typer.get_text_stream("stdin").read()
    meta = None
    if metadata is not None:
        try:
            meta = json.loads(metadata)
        except ValueError as exc:
            _fail(f"metadata: not valid JSON ({exc})")
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
            _fail(str(exc))
        out = _entry_json(written.entry)
        out["language_resolution"] = written.language.how
    _echo_json(out)


@app.command("get")
def get(entry_id: Annotated[str, typer.Argument(help="Entry id (UUID).")]) -> None:
    """Print one entry as JSON (deleted ones too, with deleted_at set)."""
    with open_app(with_embedder=False) as opened:
        try:
            entry = opened.entries.get(opened.settings.owner, entry_id, include_deleted=True)
        except PgrecallError as exc:
            _fail(str(exc))
    _echo_json(_entry_json(entry))


@app.command("list")
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
    filters = ListFilters(kind=kind, source=source, language=language, tags_all=tag, include_deleted=deleted)
    with open_app(with_embedder=False) as opened:
        try:
            page = opened.entries.list(opened.settings.owner, filters, limit=limit, cursor=cursor)
        except PgrecallError as exc:
            _fail(str(exc))
    _echo_json({"entries": [_entry_json(e) for e in page.entries], "next_cursor": page.next_cursor})


@app.command("delete")
def delete(entry_id: Annotated[str, typer.Argument(help="Entry id (UUID).")]) -> None:
    """Soft-delete an entry (restore brings it back)."""
    with open_app(with_embedder=False) as opened:
        try:
            entry = opened.entries.delete(opened.settings.owner, entry_id)
        except PgrecallError as exc:
            _fail(str(exc))
    typer.echo(f"deleted {entry.id}")


@app.command("restore")
def restore(entry_id: Annotated[str, typer.Argument(help="Entry id (UUID).")]) -> None:
    """Bring back a soft-deleted entry."""
    with open_app(with_embedder=False) as opened:
        try:
            entry = opened.entries.restore(opened.settings.owner, entry_id)
        except PgrecallError as exc:
            _fail(str(exc))
    typer.echo(f"restored {entry.id}")
