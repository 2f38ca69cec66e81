"""chunk(): a parsed document cut into passages that follow its headings and paragraphs."""

from __future__ import annotations

from dataclasses import dataclass

from pgrecall.chunking import markdown
from pgrecall.chunking.blocks import HEADING, PROSE, from_outline
from pgrecall.chunking.model import DEFAULT_MAX_CHARS, DEFAULT_MIN_CHARS, Chunk, Heading, ParsedDocument
from pgrecall.chunking.pdf import pages_of
from pgrecall.chunking.segment import LINES as LINE_CUTTERS
from pgrecall.chunking.segment import PROSE as PROSE_CUTTERS
from pgrecall.chunking.segment import split


@dataclass
class _Open:
    """The chunk being filled: its span, its section and whether it holds more than headings."""

    start: int
    end: int
    path: tuple[Heading, ...]
    content: bool = False


def chunk(
    doc: ParsedDocument, *, max_chars: int = DEFAULT_MAX_CHARS, min_chars: int = DEFAULT_MIN_CHARS
) -> list[Chunk]:
    """The document's chunks in order; each chunk's text is doc.text[start:end] exactly.

    A heading starts a new chunk (a run of nested headings stays with the text under them);
    consecutive blocks of one section are packed while the chunk stays within max_chars; a
    section's opening text shorter than min_chars stays with its first subsection. A block
    longer than max_chars (a long code block, list item, table or paragraph) is cut at line
    boundaries (code, lists, tables) or sentence boundaries (prose) first, the other second,
    then between words, and at max_chars only as a last resort. min_chars above max_chars
    counts as max_chars.
    """
    if max_chars < 1 or min_chars < 0:
        raise ValueError("need max_chars >= 1 and min_chars >= 0")
    min_chars = min(min_chars, max_chars)
    blocks = markdown.blocks(doc.text) if doc.format == "markdown" else from_outline(doc)
    text = doc.text
    done: list[_Open] = []
    path: tuple[Heading, ...] = ()
    current: _Open | None = None

    def close() -> None:
        nonlocal current
        if current is not None:
            done.append(current)
        current = None

    for block in blocks:
        if block.kind == HEADING and block.heading is not None:
            heading = block.heading
            if current is None or not _continues(current, path, heading, min_chars):
                close()
            path = (*tuple(h for h in path if h.level < heading.level), heading)
            if current is not None and block.end - current.start > max_chars:
                close()
            if block.end - block.start <= max_chars:
                if current is None:
                    current = _Open(block.start, block.end, path)
                current.end = block.end
                if not current.content:
                    current.path = path  # leading headings deepen the chunk's section
                continue
        cutters = PROSE_CUTTERS if block.kind in (PROSE, HEADING) else LINE_CUTTERS
        span = (block.start, block.end)
        if current is not None and not current.content and block.end - current.start > max_chars:
            # Headings alone make no passage: they are cut together with the text under them.
            span = (current.start, block.end)
            current = None
        for start, end in split(text, span, max_chars, min_chars, cutters):
            if current is not None and end - current.start > max_chars:
                close()
            if current is None:
                current = _Open(start, end, path)
            current.end = end
            current.content = True
    close()
    return [_make(doc, n, c) for n, c in enumerate(done)]


def _continues(current: _Open, path: tuple[Heading, ...], heading: Heading, min_chars: int) -> bool:
    """Whether `heading` may go into the open chunk: only a subsection of the section the text
    has reached, under headings alone or under an opening shorter than min_chars."""
    if path and heading.level <= path[-1].level:
        return False
    return not current.content or current.end - current.start < min_chars


def _make(doc: ParsedDocument, ordinal: int, c: _Open) -> Chunk:
    metadata = {"pages": pages_of(doc.pages, c.start, c.end)} if doc.pages else {}
    section = tuple(h.title for h in c.path)
    return Chunk(ordinal, doc.text[c.start : c.end], c.start, c.end, section, metadata)
