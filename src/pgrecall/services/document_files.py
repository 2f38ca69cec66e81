"""Documents from files and folders on disk: reading a file safely, walking a folder, keeping it in sync.

What a document is and how its chunks are diffed is DocumentService's; this module knows the
filesystem: which files a folder holds, which are unchanged since the last run (size and mtime),
which have left it, and how to read one without hanging on a FIFO or reading past the size limit.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from fnmatch import fnmatch
from pathlib import Path

from pgrecall.chunking import DocumentError
from pgrecall.domain.documents import Document
from pgrecall.errors import InvalidInputError
from pgrecall.services.documents import DocumentService, Ingested, Progress

# Taken from a folder when no --include is given.
KNOWN_SUFFIXES = ("*.md", "*.markdown", "*.html", "*.htm", "*.txt", "*.rst", "*.pdf")


@dataclass(frozen=True)
class FileOutcome:
    """One file of a folder ingest: what happened to it, or why it was refused."""

    path: Path
    ingested: Ingested | None = None
    skipped: bool = False  # unchanged size and mtime: not read again
    error: str | None = None
    gone: Document | None = None  # the file left its folder: its document, now soft-deleted


def read_document_file(path: Path, max_bytes: int) -> bytes:
    """A regular file's bytes, never more than max_bytes; DocumentError (one line) otherwise.

    Opened without blocking and checked on the descriptor: a FIFO would hang the read (and the
    server thread with it) and a device never end, and a file swapped after a check is the file read.
    OSError as raised.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise DocumentError("not a regular file")
        with os.fdopen(fd, "rb", closefd=False) as file:
            data = file.read(max_bytes + 1)
    finally:
        os.close(fd)
    if info.st_size > max_bytes or len(data) > max_bytes:
        raise DocumentError(
            f"{max(info.st_size, len(data))} bytes exceeds the {max_bytes}-byte document limit"
        )
    return data


def _file_gone(source: str) -> bool:
    """A source that is an absolute path naming nothing on disk (a file moved or deleted)."""
    return os.path.isabs(source) and not os.path.lexists(source)


def source_of(path: Path) -> str:
    """The source a file is stored under: its absolute path, symlinks resolved."""
    return str(path.resolve())


def find_files(roots: Sequence[Path], include: Sequence[str] = (), exclude: Sequence[str] = ()) -> list[Path]:
    """The files under `roots` (recursively, symlinks not followed into loops) matching the globs.

    A glob matches the path relative to its root or the file name; with no include, every
    file of a known format (KNOWN_SUFFIXES) is taken.
    """
    patterns = list(include) or list(KNOWN_SUFFIXES)
    found: list[Path] = []
    for root in roots:
        if root.is_file():
            found.append(root)
            continue
        seen: set[tuple[int, int]] = set()
        for folder, dirs, names in os.walk(root, followlinks=True):
            here = Path(folder)
            key = (here.stat().st_dev, here.stat().st_ino)
            if key in seen:  # a symlink loop: this folder was walked already
                dirs.clear()
                continue
            seen.add(key)
            dirs.sort()
            for name in sorted(names):
                file = here / name
                rel = str(file.relative_to(root))
                if not any(fnmatch(rel, p) or fnmatch(name, p) for p in patterns):
                    continue
                if any(fnmatch(rel, p) or fnmatch(name, p) for p in exclude):
                    continue
                found.append(file)
    return found


class DocumentFiles:
    """Files and folders through DocumentService: one file, or every matching file of a folder."""

    def __init__(self, documents: DocumentService) -> None:
        self.documents = documents

    def ingest_file(
        self,
        owner: str,
        path: Path,
        *,
        version: str | None = None,
        language: str | None = None,
        progress: Progress | None = None,
        skip_unchanged: bool = True,
    ) -> FileOutcome:
        """Ingest one file; a file that cannot be read or parsed is an outcome with a one-line error."""
        try:
            info = path.stat()
            source = source_of(path)
            mtime = datetime.fromtimestamp(info.st_mtime, UTC)
            if skip_unchanged and self._unchanged_file(owner, source, version, info.st_size, mtime):
                return FileOutcome(path, skipped=True)
            data = read_document_file(path, self.documents.settings.max_document_bytes)
        except OSError as exc:
            return FileOutcome(path, error=exc.strerror or type(exc).__name__)
        except DocumentError as exc:
            return FileOutcome(path, error=str(exc))
        try:
            done = self.documents.ingest(
                owner,
                data,
                source=source,
                version=version,
                language=language,
                name=path.name,
                size_bytes=info.st_size,
                mtime=mtime,
                progress=progress,
                gone=_file_gone,
            )
        except (DocumentError, InvalidInputError) as exc:
            return FileOutcome(path, error=str(exc))
        return FileOutcome(path, ingested=done)

    def _unchanged_file(
        self, owner: str, source: str, version: str | None, size: int, mtime: datetime
    ) -> bool:
        live, _ = self.documents.store.live(owner, source, version)
        return live is not None and live.size_bytes == size and live.mtime == mtime

    def ingest_paths(
        self,
        owner: str,
        roots: Sequence[Path],
        *,
        include: Sequence[str] = (),
        exclude: Sequence[str] = (),
        version: str | None = None,
        language: str | None = None,
        remove_missing: bool = True,
        progress: Progress | None = None,
        files: Sequence[Path] | None = None,
    ) -> Iterator[FileOutcome]:
        """Ingest every matching file under `roots`; files gone from a folder are soft-deleted.

        `files`: the roots' files as `find_files` listed them for this run (a caller that counted
        them first), so the folder is walked once. Only a file that no longer exists is "gone": one
        still on disk but outside this run's globs keeps its document, so narrowing --include never
        deletes what an earlier run took.
        """
        if files is None:
            files = find_files(roots, include, exclude)
        for path in files:
            yield self.ingest_file(owner, path, version=version, language=language, progress=progress)
        if remove_missing:
            store = self.documents.store
            present = {source_of(p) for p in files}
            for root in roots:
                if not root.is_dir():
                    continue
                prefix = source_of(root).rstrip(os.sep) + os.sep
                for document in store.live_under(owner, prefix):
                    if (
                        document.source not in present
                        and (document.version_label or None) == version
                        and not os.path.lexists(document.source)
                    ):
                        yield FileOutcome(Path(document.source), gone=store.delete(owner, document.id))
