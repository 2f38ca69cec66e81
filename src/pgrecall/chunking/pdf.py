"""PDF: the text layer with pypdf, one part per page, page offsets kept."""

from __future__ import annotations

import io
import logging
from typing import Any

from pypdf import PdfReader
from pypdf.errors import DependencyError

from pgrecall.chunking.decode import first_line, normalize
from pgrecall.chunking.model import DocumentError

PAGE_SEPARATOR = "\n\n"


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text[:120]


def extract(data: bytes) -> tuple[str, str | None, dict[str, Any], tuple[tuple[int, int], ...]]:
    """(text, title, metadata, page spans): pages joined by a blank line, page n at index n-1."""
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
    return joined, meta_title or first_line(joined), metadata, tuple(pages)


def pages_of(pages: tuple[tuple[int, int], ...], start: int, end: int) -> list[int]:
    """The 1-based numbers of the pages that [start, end) overlaps."""
    return [n for n, (s, e) in enumerate(pages, 1) if s < e and s < end and start < e]
