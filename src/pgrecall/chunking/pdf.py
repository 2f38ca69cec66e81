"""PDF: the text layer with pypdf, one part per page, page offsets kept."""

from __future__ import annotations

import io
import logging
import re
from typing import Any

from pypdf import PdfReader
from pypdf.errors import DependencyError

from pgrecall.chunking.decode import first_line, normalize
from pgrecall.chunking.model import DocumentError, Heading

PAGE_SEPARATOR = "\n\n"


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text[:120]


def extract(
    data: bytes,
) -> tuple[str, str | None, dict[str, Any], tuple[tuple[int, int], ...], tuple[Heading, ...]]:
    """(text, title, metadata, page spans, headings): pages joined by a blank line, page n at index
    n-1; the headings are the PDF's outline (bookmarks) where the text shows them."""
    # pypdf logs every recoverable oddity of a damaged file as a warning; the caller gets the
    # text or one DocumentError, not a log stream.
    logging.getLogger("pypdf").setLevel(logging.ERROR)
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            try:
                opened = reader.decrypt("")
            except DependencyError as exc:
                raise DocumentError("encrypted PDF (the cryptography package is needed)") from exc
            if not opened:
                raise DocumentError("encrypted PDF")
        texts = [normalize(page.extract_text() or "", drop_nul=True) for page in reader.pages]
        info = reader.metadata
        meta_title = (info.title or "").strip() if info is not None else ""
    except DocumentError:
        raise
    except Exception as exc:
        raise DocumentError(f"corrupt PDF: {_one_line(exc)}") from exc
    if not any(t.strip() for t in texts):
        raise DocumentError("PDF has no text layer (scanned?)")
    parts: list[str] = []
    pages: list[tuple[int, int]] = []
    pos = 0
    for text in texts:
        if text and parts:
            pos += len(PAGE_SEPARATOR)
        pages.append((pos, pos + len(text)))
        if text:
            parts.append(text)
            pos += len(text)
    joined = PAGE_SEPARATOR.join(parts)
    metadata: dict[str, Any] = {"page_count": len(texts)}
    headings = _outline(reader, joined, pages)
    return joined, meta_title or first_line(joined), metadata, tuple(pages), headings


def _outline(reader: PdfReader, text: str, pages: list[tuple[int, int]]) -> tuple[Heading, ...]:
    """The outline's entries, nested as in the outline, each where its title starts a line of its page
    (after a section number, if the text shows one).

    An entry whose title is not found at a line start of its page (or the next, a title at a page's
    foot) is left out rather than guessed; so is a broken outline, whole.
    """
    entries: list[tuple[int, str, int]] = []

    def walk(items: list[Any], level: int) -> None:
        for item in items:
            if isinstance(item, list):
                walk(item, level + 1)
                continue
            title = " ".join(str(getattr(item, "title", "") or "").split())
            page = reader.get_destination_page_number(item)
            if title and page is not None and 0 <= page < len(pages):
                entries.append((level, title, page))

    try:
        walk(reader.outline, 1)
    except Exception:  # a damaged outline is no reason to refuse the text
        return ()
    found: list[Heading] = []
    floor = 0
    for level, title, page in entries:
        start, end = pages[page][0], pages[min(page + 1, len(pages) - 1)][1]
        words = r"\s+".join(re.escape(word) for word in title.split())
        # A section number the outline leaves out ("Naming" shown as "2.2 Naming") is the heading's too.
        match = re.compile(rf"(?m)^[ \t]*((?:\d+(?:\.\d+)*\.?[ \t]+)?{words})").search(
            text, max(start, floor), end
        )
        if match is not None:
            found.append(Heading(level, title, match.start(1), match.end(1)))
            floor = match.end(1)
    return tuple(found)


def pages_of(pages: tuple[tuple[int, int], ...], start: int, end: int) -> list[int]:
    """The 1-based numbers of the pages that [start, end) overlaps."""
    return [n for n, (s, e) in enumerate(pages, 1) if s < e and s < end and start < e]
