"""Documents: parse Markdown, HTML, plain text, PDF and reStructuredText and cut them into chunks.

Pure functions over bytes and strings (no database). Every chunk is a verbatim span of the
normalized document: `chunk.text == document.text[chunk.start:chunk.end]`.
"""

from __future__ import annotations

from pgrecall.chunking.chunker import chunk
from pgrecall.chunking.decode import detect_format, normalize
from pgrecall.chunking.model import (
    DEFAULT_MAX_CHARS,
    DEFAULT_MIN_CHARS,
    FORMATS,
    Chunk,
    DocumentError,
    Heading,
    ParsedDocument,
)
from pgrecall.chunking.parsing import parse

__all__ = [
    "DEFAULT_MAX_CHARS",
    "DEFAULT_MIN_CHARS",
    "FORMATS",
    "Chunk",
    "DocumentError",
    "Heading",
    "ParsedDocument",
    "chunk",
    "detect_format",
    "normalize",
    "parse",
]
