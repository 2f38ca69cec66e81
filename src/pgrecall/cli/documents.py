"""`pgrecall ingest` (files and folders, kept in sync with --watch) and `pgrecall documents`."""

from __future__ import annotations

import signal
import sys
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from pgrecall.cli.common import fail, open_app, stop_on_sigterm
from pgrecall.cli.filters import upto
from pgrecall.cli.output import day, emit, short_id, table
from pgrecall.domain.validation import MAX_LIST_LIMIT

if TYPE_CHECKING:
    from pgrecall.app import App
    from pgrecall.services.document_files import FileOutcome


def _run(opened: App, paths: list[Path], include: list[str], exclude: list[str], version: str | None,
         language: str | None) -> Iterator[FileOutcome]:  # fmt: skip
    """One pass over the paths, with a progress bar in chunks (stderr, only on a terminal)."""
    from tqdm import tqdm

    from pgrecall.services.document_files import find_files

    owner = opened.settings.owner
    files = find_files(paths, include, exclude)
    with tqdm(total=0, unit="chunk", desc="ingest", disable=None, file=sys.stderr) as bar:
        done_before = 0

        def progress(done: int, total: int) -> None:
            nonlocal done_before
            if done <= done_before:  # a new document: its chunks join the total
                bar.total = (bar.total or 0) + total
                done_before = 0
            bar.update(done - done_before)
            done_before = done

        for index, outcome in enumerate(
            opened.document_files.ingest_paths(
                owner, paths, include=include, exclude=exclude, version=version, language=language,
                progress=progress, files=files,
            )
        ):  # fmt: skip
            done_before = 0
            bar.set_postfix_str(f"file {min(index + 1, len(files))}/{len(files)}", refresh=False)
            yield outcome


def _line(outcome: FileOutcome) -> str:
    if outcome.error is not None:
        return f"{outcome.path}: {outcome.error}"
    if outcome.skipped:
        return f"{outcome.path}: unchanged (size and mtime)"
    if outcome.gone is not None:
        return f"{outcome.path}: gone, its document soft-deleted ({short_id(str(outcome.gone.id))})"
    done = outcome.ingested
    assert done is not None
    status = done.status if done.moved_from is None else f"moved from {done.moved_from}"
    return (
        f"{outcome.path}: {status}, {done.written} chunks written, {done.kept} kept, "
        f"{done.removed} removed ({short_id(str(done.document.id))})"
    )


def ingest(
    paths: Annotated[list[Path], typer.Argument(help="Files or folders (folders recursively).")],
    include: Annotated[
        list[str] | None,
        typer.Option(
            help="Glob of files to take (repeatable; default: .md .markdown .html .htm .txt .rst .pdf)."
        ),
    ] = None,
    exclude: Annotated[
        list[str] | None, typer.Option(help="Glob of files to leave out (repeatable).")
    ] = None,
    version: Annotated[str | None, typer.Option(help="Version label of these documents.")] = None,
    language: Annotated[str | None, typer.Option(help="ISO 639-1 code; omit to detect per document.")] = None,
    watch: Annotated[bool, typer.Option(help="Keep the folders in sync until interrupted.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print only failures.")] = False,
) -> None:
    """Ingest documents: each file is parsed, cut into chunks and stored, changing only what changed.

    Unchanged files (size and mtime) are skipped, so an interrupted run resumes where it stopped.
    Files gone from a folder are soft-deleted. A file that cannot be read or parsed is reported
    (FILE: reason) and the rest still go in; the exit code is then 1.
    """
    missing = [str(p) for p in paths if not p.exists()]
    if missing:
        fail(f"{missing[0]}: no such file or folder")
    roots = [p.resolve() for p in paths]
    failed = 0
    with open_app() as opened:
        try:
            for outcome in _run(opened, roots, include or [], exclude or [], version, language):
                failed += outcome.error is not None
                if outcome.error is not None or not quiet:
                    typer.echo(_line(outcome), err=outcome.error is not None)
            if watch:
                _watch(opened, roots, include or [], exclude or [], version, language, quiet)
        except KeyboardInterrupt:
            typer.echo("pgrecall: interrupted; what was ingested is kept, run it again to go on", err=True)
            raise typer.Exit(130) from None
    if failed:
        raise typer.Exit(1)


def _watch(opened: App, roots: list[Path], include: list[str], exclude: list[str], version: str | None,
           language: str | None, quiet: bool) -> None:  # fmt: skip
    """Re-sync after every batch of file changes (inotify through watchfiles), until interrupted."""
    from watchfiles import watch

    # Ctrl-C (SIGINT) or a service manager's SIGTERM stops the watch; a process started with SIGINT
    # ignored (a background job of a shell script, a test runner's worker) would otherwise keep
    # watching through it.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    stop_on_sigterm()

    typer.echo(f"watching {', '.join(map(str, roots))} (Ctrl-C to stop)", err=True)
    for _changes in watch(*roots, debounce=500, raise_interrupt=True):
        for outcome in _run(opened, roots, include, exclude, version, language):
            if outcome.error is not None or (not quiet and not outcome.skipped):
                typer.echo(_line(outcome), err=outcome.error is not None)


def documents(
    source_prefix: Annotated[str | None, typer.Option(help="Only sources starting with this.")] = None,
    version: Annotated[str | None, typer.Option(help="Only this version label.")] = None,
    include_deleted: Annotated[bool, typer.Option(help="Also soft-deleted documents.")] = False,
    limit: Annotated[
        int, typer.Option(min=1, max=MAX_LIST_LIMIT, help=f"At most this many {upto(MAX_LIST_LIMIT)}.")
    ] = 50,
    json_out: Annotated[bool, typer.Option("--json", help="JSON even on a terminal.")] = False,
) -> None:
    """List ingested documents: id, chunks, version, updated, title and source."""
    with open_app(with_embedder=False) as opened:
        found = opened.documents.list(
            opened.settings.owner,
            source_prefix=source_prefix,
            version=version,
            include_deleted=include_deleted,
            limit=limit,
        )
    emit([_plain(asdict(d)) for d in found], json_out, _documents_table)


def _plain(row: dict[str, Any]) -> dict[str, Any]:
    return {k: (str(v) if k == "id" else v) for k, v in row.items() if k not in {"owner", "metadata"}}


def _documents_table(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return "no documents"
    cells = [
        [
            short_id(r["id"]),
            str(r["chunk_count"]),
            r["version_label"] or "",
            day(r["updated_at"]) + (" deleted" if r["deleted_at"] else ""),
            f"{r['title'] or ''} — {r['source']}",
        ]
        for r in rows
    ]
    return table(["id", "chunks", "version", "updated", "title — source"], cells, flex=4)


def register(app: typer.Typer) -> None:
    """Add this module's commands to the root app."""
    app.command("ingest")(ingest)
    app.command("documents")(documents)
