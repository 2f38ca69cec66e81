"""Transfer commands of the CLI: export, import (JSON lines or memory.json) and redetect-language."""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import Iterator
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TextIO

import typer

from pgrecall.cli.common import echo_json, fail, open_app

if TYPE_CHECKING:
    import psycopg

    from pgrecall.app import App
    from pgrecall.services.transfer import RelationCounts
    from pgrecall.services.transfer.importer import ImportReport

MAX_PRINTED_ERRORS = 100


class ImportFormat(StrEnum):
    """File formats `pgrecall import` reads."""

    jsonl = "jsonl"
    memory_json = "memory-json"


class OnConflict(StrEnum):
    """What to do when an imported id already exists with different content."""

    newer = "newer"
    skip = "skip"
    overwrite = "overwrite"


@contextlib.contextmanager
def _connection(opened: App) -> Iterator[psycopg.Connection[Any]]:
    # A dedicated connection, not the pool: export and import drive their own transactions.
    from pgrecall.errors import PgrecallError

    try:
        with opened.db.connect() as conn:
            yield conn
    except PgrecallError as exc:
        fail(str(exc))


@contextlib.contextmanager
def _output(file: str) -> Iterator[TextIO]:
    """Standard output for '-', else a temp file renamed over FILE only when the export finished."""
    if file == "-":
        yield sys.stdout
        sys.stdout.flush()
        return
    target = Path(file)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent or Path("."))
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            yield fh
        os.replace(tmp, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def export(
    file: Annotated[str, typer.Argument(help="Output file, JSON lines ('-' writes to standard output).")],
    owner: Annotated[
        str | None, typer.Option(help="Only this owner's entries (default: every owner).")
    ] = None,
    with_vectors: Annotated[
        bool, typer.Option("--with-vectors", help="Include vectors with their model name and dimension.")
    ] = False,
) -> None:
    """Write every entry (deleted ones too) as JSON lines, ordered by owner, created_at, id."""
    import psycopg
    from tqdm import tqdm

    from pgrecall.errors import PgrecallError
    from pgrecall.services.transfer import export_jsonl

    if file != "-" and not Path(file).parent.is_dir():
        fail(f"{file}: directory {Path(file).parent} does not exist")
    with (
        open_app(with_embedder=False) as opened,
        _connection(opened) as conn,
        tqdm(unit="entry", desc="export", disable=None, file=sys.stderr) as bar,
        _output(file) as out,
    ):
        try:
            written = export_jsonl(
                conn,
                out,
                owner=owner,
                with_vectors=with_vectors,
                statement_timeout_ms=opened.settings.statement_timeout_ms,
                on_total=lambda n: setattr(bar, "total", n),
                on_row=lambda: bar.update(1),
            )
        except (PgrecallError, psycopg.Error) as exc:
            fail(f"export failed, nothing written: {exc}")
    n = written.documents
    with_documents = f" and {n} document{'s' if n != 1 else ''}" if n else ""
    typer.echo(f"exported {written.entries} entries{with_documents} to {file}", err=file == "-")


def _not_newer(report: ImportReport) -> str:
    # The lines --on-conflict newer refused to apply, named so they can be found and forced.
    part = f"{report.skipped_not_newer} skipped_not_newer"
    if not report.skipped_not_newer:
        return part
    first = ", ".join(f"line {line} id {ident}" for line, ident in report.skipped_not_newer_first)
    more = ", …" if report.skipped_not_newer > len(report.skipped_not_newer_first) else ""
    return f"{part} (no higher version or later updated_at than the stored entry: {first}{more})"


def _summary(file: Path, report: ImportReport, noun: str) -> str:
    if report.rolled_back:
        return f"{file}: {report.lines} {noun}, {len(report.errors)} bad: nothing imported (--atomic)"
    parts = [
        f"{report.inserted} inserted",
        f"{report.updated} updated",
        f"{report.unchanged} unchanged",
        f"{report.kept} kept (stored entry wins under --on-conflict)",
        _not_newer(report),
    ]
    if report.documents_inserted or report.documents_kept:
        documents = f"{report.documents_inserted} inserted, {report.documents_kept} already there"
        parts.append(f"documents: {documents}")
    if report.other_owner:
        parts.append(f"{report.other_owner} of other owners skipped")
    if report.ids_derived:
        parts.append(f"{report.ids_derived} without id (given one from owner + text)")
    if report.duplicates:
        parts.append(f"{report.duplicates} repeated id-less lines skipped")
    if report.links.seen:
        links = report.links
        text = f"links: {links.inserted} inserted, {links.existing} already there"
        if links.dangling:
            first = ", ".join(f"line {n}" for n in links.dangling_first)
            text += f", {links.dangling} dangling (an end is no entry of that owner: {first})"
        parts.append(text)
    parts.append(f"{len(report.errors)} bad")
    return f"{file}: {report.lines} {noun}: " + ", ".join(parts)


def _relations_line(file: Path, counts: RelationCounts) -> str:
    text = f"{file}: {counts.seen} relations: {counts.stored} stored in their entities' metadata"
    text += f", {counts.linked} linked"
    if counts.dangling:
        text += f", {counts.dangling} dangling (an end is no entity of the file; {counts.dropped} dropped)"
    if counts.duplicates:
        text += f", {counts.duplicates} repeated"
    return text


def _summary_json(
    file: Path, file_format: ImportFormat, report: ImportReport, relations: RelationCounts | None
) -> dict[str, Any]:
    from dataclasses import asdict

    out: dict[str, Any] = {
        "file": str(file),
        "format": file_format.value,
        "lines": report.lines,
        "inserted": report.inserted,
        "updated": report.updated,
        "unchanged": report.unchanged,
        "kept": report.kept,
        "skipped_not_newer": report.skipped_not_newer,
        "skipped_not_newer_first": [{"line": n, "id": i} for n, i in report.skipped_not_newer_first],
        "other_owner": report.other_owner,
        "ids_derived": report.ids_derived,
        "duplicates": report.duplicates,
        "without_vectors": report.without_vectors,
        "documents_inserted": report.documents_inserted,
        "documents_kept": report.documents_kept,
        "bad": len(report.errors),
        "rolled_back": report.rolled_back,
        "links": asdict(report.links),
    }
    if relations is not None:
        out["relations"] = asdict(relations)
    return out


def import_(
    file: Annotated[Path, typer.Argument(help="File to read.")],
    file_format: Annotated[
        ImportFormat,
        typer.Option("--format", help="jsonl: `pgrecall export` lines; memory-json: MCP memory server file."),
    ] = ImportFormat.jsonl,
    owner: Annotated[
        str | None,
        typer.Option(
            help="jsonl: only lines of this owner; memory-json: the owner to import into "
            "(default PGRECALL_OWNER)."
        ),
    ] = None,
    on_conflict: Annotated[
        OnConflict,
        typer.Option(
            "--on-conflict",
            help="An id that exists with other content: newer = the line wins only with a higher version "
            "(then a later updated_at; a line with neither never wins, it is counted as "
            "skipped_not_newer); skip = keep the stored entry; overwrite = the file wins.",
        ),
    ] = OnConflict.newer,
    atomic: Annotated[bool, typer.Option("--atomic", help="Import nothing if any line is bad.")] = False,
    batch_size: Annotated[int, typer.Option(min=1, max=10_000, help="Lines per COPY batch.")] = 500,
    reembed: Annotated[
        bool, typer.Option("--reembed", help="Afterwards fill pending vectors with the configured embedder.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as one JSON object.")] = False,
) -> None:
    """Import entries; bad lines are reported as FILE:LINE and make the exit code 1.

    A file that is plainly not of --format (the memory server's file given as jsonl, a JSON
    array…) is refused with a hint before anything is written (exit code 2).
    """
    from tqdm import tqdm

    from pgrecall.errors import PgrecallError
    from pgrecall.services.transfer import count_lines, import_jsonl, import_memory_json, wrong_format_hint
    from pgrecall.services.transfer.importer import ImportOptions, RecordValidator

    # Checked here, not by typer's exists=True: its boxed usage error is not the CLI's one line.
    if not file.exists():
        fail(f"{file}: no such file")
    if file.is_dir():
        fail(f"{file}: is a directory")
    # A hint, not a silent switch of format: --owner means a filter for jsonl but the target
    # owner for memory-json, so guessing the format would change what the command does.
    hint = wrong_format_hint(file, file_format.value)
    if hint is not None:
        fail(f"{file}: {hint}", 2)
    options = ImportOptions(owner=owner, on_conflict=on_conflict.value, atomic=atomic, batch_size=batch_size)
    relations: RelationCounts | None = None
    with open_app(with_embedder=reembed) as opened, _connection(opened) as conn:
        validator = RecordValidator(
            opened.catalog,
            opened.detector,
            max_text_chars=opened.settings.max_text_chars,
            default_owner=owner or opened.settings.owner,
            max_document_bytes=opened.settings.max_document_bytes,
        )
        timeout = opened.settings.statement_timeout_ms
        try:
            # Progress on standard error, only on a terminal (disable=None), counted in lines:
            # a quick first pass counts them.
            if file_format is ImportFormat.jsonl:
                total = count_lines(file)
                with tqdm(total=total, unit="line", desc="import", disable=None, file=sys.stderr) as bar:
                    report = import_jsonl(
                        conn, file, validator, options, statement_timeout_ms=timeout, on_line=bar.update
                    )
            else:
                with tqdm(unit="entity", desc="import", disable=None, file=sys.stderr) as bar:
                    report, graph = import_memory_json(
                        conn,
                        file,
                        validator,
                        options,
                        statement_timeout_ms=timeout,
                        on_total=lambda n: setattr(bar, "total", n),
                        on_item=lambda: bar.update(1),
                    )
                relations = graph.relations
        except PgrecallError as exc:
            fail(str(exc))
        if reembed and not report.rolled_back and opened.embedder is not None:
            total = opened.maintenance.pending_total()
            with tqdm(total=total, unit="entry", desc="reembed", disable=None, file=sys.stderr) as bar:

                def step(n: int) -> None:
                    bar.update(n)

                opened.maintenance.reembed(on_batch=step)
    for error in report.errors[:MAX_PRINTED_ERRORS]:
        typer.echo(f"{file}:{error.line}: {error.message}", err=True)
    if len(report.errors) > MAX_PRINTED_ERRORS:
        typer.echo(f"{file}: … and {len(report.errors) - MAX_PRINTED_ERRORS} more bad lines", err=True)
    if as_json:
        echo_json(_summary_json(file, file_format, report, relations))
        if report.errors:
            raise typer.Exit(1)
        return
    noun = "lines" if file_format is ImportFormat.jsonl else "entities and bad lines"
    typer.echo(_summary(file, report, noun))
    if relations is not None and not report.rolled_back:
        typer.echo(_relations_line(file, relations))
    if report.without_vectors and not reembed:
        typer.echo("entries imported without a vector are pending; fill them with: pgrecall reembed")
    if report.errors:
        raise typer.Exit(1)


def redetect_language(
    only_simple: Annotated[
        bool, typer.Option("--only-simple", help="Only entries stored as 'simple' (no stemming).")
    ] = False,
    include_explicit: Annotated[
        bool,
        typer.Option(
            "--include-explicit", help="Also re-judge languages given explicitly (kept by default)."
        ),
    ] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Count what would change; write nothing.")
    ] = False,
    batch_size: Annotated[int, typer.Option(min=1, max=10_000, help="Entries per batch.")] = 200,
    owner: Annotated[
        str | None, typer.Option(help="Only this owner's entries (default: every owner).")
    ] = None,
) -> None:
    """Detect the language of stored entries again, keeping languages given explicitly unless
    --include-explicit (content_hash and version unchanged; resumable)."""
    from tqdm import tqdm

    from pgrecall.errors import PgrecallError

    with open_app(with_embedder=False) as opened:
        total = opened.maintenance.redetect_count(owner, only_simple, include_explicit)
        with tqdm(total=total, unit="entry", desc="redetect-language", disable=None) as bar:
            try:
                report = opened.maintenance.redetect(
                    owner=owner,
                    only_simple=only_simple,
                    include_explicit=include_explicit,
                    dry_run=dry_run,
                    batch_size=batch_size,
                    on_batch=bar.update,
                )
            except PgrecallError as exc:
                fail(f"{exc} (finished batches are kept; run it again to resume)")
    typer.echo(f"scanned {report.scanned} entries" + (" (dry run: nothing written)" if dry_run else ""))
    for (old, new), count in sorted(report.transitions.items()):
        typer.echo(f"{old} -> {new}: {count}")
    typer.echo(f"unchanged: {report.unchanged}")
    typer.echo(f"kept (detector unsure): {report.kept_unsure}")
    if not include_explicit:
        typer.echo(f"kept (language given explicitly; --include-explicit re-judges): {report.kept_explicit}")
    if not dry_run:
        typer.echo(f"updated: {report.updated}; skipped (edited meanwhile): {report.skipped_edited}")


def register(app: typer.Typer) -> None:
    """Add this module's commands to the root app."""
    app.command("export")(export)
    app.command("import")(import_)
    app.command("redetect-language")(redetect_language)
