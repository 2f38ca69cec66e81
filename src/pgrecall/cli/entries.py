"""Entry commands of the CLI (add, get, list, update, delete, restore): the service the MCP tools use.

Ids may be given whole or by a unique start or end (at least 4 hex digits; `list` shows the end).
"""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import TYPE_CHECKING, Annotated, Any

import typer

from pgrecall.cli import filters as f
from pgrecall.cli import output
from pgrecall.cli.common import fail, open_app
from pgrecall.cli.filters import upto
from pgrecall.cli.output import JsonFlag
from pgrecall.domain.validation import MAX_LIST_LIMIT

if TYPE_CHECKING:
    from pgrecall.domain.entries import Entry
    from pgrecall.services.entries import Written

IdArgument = Annotated[
    str,
    typer.Argument(
        metavar="ID", help="Entry id, or a unique start or end of it (4+ hex digits, as `list` shows)."
    ),
]


def _entry_json(entry: Entry, active_model: str | None) -> dict[str, Any]:
    from pgrecall.domain.entries import vector_pending

    data = asdict(entry)
    data["id"] = str(entry.id)
    data["vector_pending"] = vector_pending(entry, active_model)
    return data


def _written_json(written: Written, active_model: str | None) -> dict[str, Any]:
    out = _entry_json(written.entry, active_model)
    out["language_resolution"] = written.language.how
    return out


def _written_line(verb: str, data: dict[str, Any]) -> str:
    pending = ", vector pending" if data["vector_pending"] else ""
    return (
        f"{verb} {data['id']} (version {data['version']}, {data['language']} "
        f"{data['language_resolution']}{pending})"
    )


def _metadata(metadata: str | None) -> dict[str, Any] | None:
    if metadata is None:
        return None
    try:
        meta = json.loads(metadata)
    except ValueError as exc:
        fail(f"metadata: not valid JSON ({exc})")
    if not isinstance(meta, dict):
        fail("metadata: must be a JSON object")
    return meta


def _read(text: str) -> str:
    return typer.get_text_stream("stdin").read() if text == "-" else text


def add(
    text: Annotated[str, typer.Argument(metavar="TEXT", help="The entry text ('-' reads standard input).")],
    title: Annotated[str | None, typer.Option(metavar="TEXT", help="Short title.")] = None,
    tag: Annotated[
        list[str] | None, typer.Option("--tag", "-t", metavar="TAG", help="A tag (repeatable).")
    ] = None,
    source: Annotated[
        str | None, typer.Option(metavar="TEXT", help="Where it came from (URL, file, conversation).")
    ] = None,
    kind: Annotated[str | None, typer.Option(metavar="KIND", help="note, fact, decision, doc, …")] = None,
    language: Annotated[
        str | None, typer.Option(metavar="CODE", help="ISO 639-1 code; omit to detect.")
    ] = None,
    metadata: Annotated[str | None, typer.Option(metavar="JSON", help="A JSON object.")] = None,
    expires: Annotated[
        str | None,
        typer.Option(metavar="WHEN", help="Stops being current then: an ISO 8601 time or a duration (30d)."),
    ] = None,
    supersedes: Annotated[
        str | None, typer.Option(metavar="ID", help="An earlier entry this one replaces (id, start or end).")
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Store one entry: on a terminal one line with its id, else (or with --json) the entry as JSON."""
    from pgrecall.errors import PgrecallError

    meta = _metadata(metadata)
    with open_app() as opened:
        owner = opened.settings.owner
        try:
            replaced = (
                opened.entries.resolve_id(owner, supersedes, include_deleted=True) if supersedes else None
            )
            body = _read(text)
            long = opened.documents.long_note(
                owner,
                body,
                title=title,
                tags=tag,
                source=source,
                metadata=meta,
                language=language,
                keeps_one_entry=bool(replaced or expires),
            )
            if long is not None:
                done = long.ingested
                out = {**_entry_json(long.first, opened.active_model), "document_id": str(done.document.id),
                       "chunks": done.document.chunk_count, "content_hash": done.document.content_hash,
                       "language_resolution": done.language.how if done.language else "kept"}  # fmt: skip
                output.emit(
                    out,
                    as_json,
                    lambda d: f"added {d['document_id']} as {d['chunks']} chunks ({d['language']})",
                )
                return
            written = opened.entries.add(
                owner,
                text=body,
                title=title,
                tags=tag,
                source=source,
                kind=kind,
                metadata=meta,
                language=language,
                expires_at=expires,
                supersedes=replaced,
            )
        except PgrecallError as exc:
            fail(str(exc))
        out = _written_json(written, opened.active_model)
    output.emit(out, as_json, lambda d: _written_line("added", d))


def get(entry_id: IdArgument, as_json: JsonFlag = False) -> None:
    """Print one entry (deleted ones too, with deleted_at set): text on a terminal, else JSON."""
    from pgrecall.errors import PgrecallError

    # The embedder loads lazily: opening it only names the active model (for vector_pending).
    with open_app() as opened:
        owner = opened.settings.owner
        try:
            ident = opened.entries.resolve_id(owner, entry_id, include_deleted=True)
            entry = opened.entries.get(owner, ident, include_deleted=True)
        except PgrecallError as exc:
            fail(str(exc))
        out = _entry_json(entry, opened.active_model)
    output.emit(out, as_json, output.entry_text)


def list_entries(
    limit: Annotated[int, typer.Option(metavar="N", help=f"Entries per page {upto(MAX_LIST_LIMIT)}.")] = 20,
    cursor: Annotated[
        str | None, typer.Option(metavar="CURSOR", help="next_cursor of the previous page.")
    ] = None,
    kind: f.Kind = None,
    source: f.Source = None,
    source_prefix: f.SourcePrefix = None,
    document: f.Document = None,
    version: f.Version = None,
    language: f.Language = None,
    tag: f.TagsAll = None,
    deleted: Annotated[
        bool, typer.Option("--deleted", help="Include soft-deleted entries (marked †).")
    ] = False,
    superseded: f.Superseded = False,
    expired: f.Expired = False,
    as_json: JsonFlag = False,
) -> None:
    """One page of entries, newest first: a table on a terminal, else JSON with the next page's cursor."""
    from pgrecall.domain.entries import EntryFilters
    from pgrecall.errors import PgrecallError

    filters = EntryFilters(
        kind=kind,
        source=source,
        source_prefix=source_prefix,
        document=document,
        version=version,
        language=language,
        tags_all=tag,
        include_deleted=deleted,
        include_superseded=superseded,
        include_expired=expired,
    )
    with open_app() as opened:
        try:
            page = opened.entries.list(opened.settings.owner, filters, limit=limit, cursor=cursor)
        except PgrecallError as exc:
            fail(str(exc))
        entries = [_entry_json(e, opened.active_model) for e in page.entries]
    out = {"entries": entries, "next_cursor": page.next_cursor}

    def render(data: dict[str, Any]) -> str:
        if not entries:
            return "no entries"
        more = f"\nmore: pgrecall list --cursor {page.next_cursor}" if page.next_cursor else ""
        return output.entries_table(entries) + more

    output.emit(out, as_json, render)


def update(
    entry_id: IdArgument,
    text: Annotated[
        str | None, typer.Option(metavar="TEXT", help="New full text ('-' reads standard input).")
    ] = None,
    title: Annotated[str | None, typer.Option(metavar="TEXT", help='New title ("" clears it).')] = None,
    tag: Annotated[
        list[str] | None,
        typer.Option("--tag", "-t", metavar="TAG", help="A tag (repeatable); the given tags replace all."),
    ] = None,
    no_tags: Annotated[bool, typer.Option("--no-tags", help="Remove every tag.")] = False,
    kind: Annotated[str | None, typer.Option(metavar="KIND", help="New kind.")] = None,
    source: Annotated[str | None, typer.Option(metavar="TEXT", help='New source ("" clears it).')] = None,
    metadata: Annotated[
        str | None, typer.Option(metavar="JSON", help="A JSON object that replaces the metadata.")
    ] = None,
    language: Annotated[
        str | None, typer.Option(metavar="CODE", help="ISO 639-1 code; changing it re-stems the entry.")
    ] = None,
    expected_version: Annotated[
        int | None,
        typer.Option(metavar="N", help="Only update if the entry is still at this version (else it fails)."),
    ] = None,
    expires: Annotated[
        str | None, typer.Option(metavar="WHEN", help='New expiry: ISO time or duration (30d); "" clears it.')
    ] = None,
    supersedes: Annotated[
        str | None, typer.Option(metavar="ID", help='An earlier entry this one replaces; "" clears it.')
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Change an entry; only the given fields change. A new text or title re-embeds it."""
    from pgrecall.errors import PgrecallError

    if tag and no_tags:
        fail("--tag and --no-tags exclude each other", 2)
    meta = _metadata(metadata)
    extra: dict[str, Any] = {}
    if title is not None:
        extra["title"] = title
    if source is not None:
        extra["source"] = source
    if expires is not None:
        extra["expires_at"] = expires
    with open_app() as opened:
        owner = opened.settings.owner
        try:
            ident = opened.entries.resolve_id(owner, entry_id)
            if supersedes is not None:
                extra["supersedes"] = (
                    opened.entries.resolve_id(owner, supersedes, include_deleted=True) if supersedes else ""
                )
            written = opened.entries.update(
                owner,
                ident,
                text=_read(text) if text is not None else None,
                tags=[] if no_tags else tag,
                kind=kind,
                metadata=meta,
                language=language,
                expected_version=expected_version,
                **extra,
            )
        except PgrecallError as exc:
            fail(str(exc))
        out = _written_json(written, opened.active_model)
    output.emit(out, as_json, lambda d: _written_line("updated", d))


def delete(entry_id: IdArgument) -> None:
    """Soft-delete an entry (restore brings it back)."""
    from pgrecall.errors import PgrecallError

    with open_app(with_embedder=False) as opened:
        owner = opened.settings.owner
        try:
            # Deleted entries too: deleting one again says so instead of "no entry".
            ident = opened.entries.resolve_id(owner, entry_id, include_deleted=True)
            entry = opened.entries.delete(owner, ident)
        except PgrecallError as exc:
            fail(str(exc))
    typer.echo(f"deleted {entry.id}")


def restore(entry_id: IdArgument) -> None:
    """Bring back a soft-deleted entry."""
    from pgrecall.errors import PgrecallError

    with open_app(with_embedder=False) as opened:
        owner = opened.settings.owner
        try:
            ident = opened.entries.resolve_id(owner, entry_id, include_deleted=True)
            entry = opened.entries.restore(owner, ident)
        except PgrecallError as exc:
            fail(str(exc))
    typer.echo(f"restored {entry.id}")


def register(app: typer.Typer) -> None:
    """Add this module's commands to the root app."""
    app.command("add")(add)
    app.command("get")(get)
    app.command("list")(list_entries)
    app.command("update")(update)
    app.command("delete")(delete)
    app.command("restore")(restore)
