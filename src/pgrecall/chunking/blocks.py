"""A document as a sequence of blocks (headings, prose, code, list items, tables) with offsets."""

from __future__ import annotations

from dataclasses import dataclass

from pgrecall.chunking.model import Heading, ParsedDocument
from pgrecall.chunking.segment import paragraphs, trim

# Block kinds: "heading"; "prose" is cut at sentences first when oversized; "lines" (code, list
# item, table, quote) at line boundaries first.
HEADING = "heading"
PROSE = "prose"
LINES = "lines"


@dataclass(frozen=True)
class Block:
    start: int
    end: int
    kind: str
    heading: Heading | None = None


def from_outline(doc: ParsedDocument) -> list[Block]:
    """Paragraph blocks of the text, cut around the parser's headings (HTML, PDF, rst, text).

    The HTML extractor writes a paragraph on one line, so a block of several lines there is a
    list, a table or preformatted text, cut at lines first; elsewhere line breaks wrap prose.
    """
    multi_line = LINES if doc.format == "html" else PROSE
    out: list[Block] = []
    headings = sorted(doc.headings, key=lambda h: h.start)
    i = 0
    for start, end in paragraphs(doc.text):
        pos = start
        while i < len(headings) and headings[i].start < end:
            h = headings[i]
            if h.start > pos:
                out.extend(_block(doc.text, pos, h.start, multi_line))
            if h.end > pos:
                out.append(Block(max(h.start, pos), h.end, HEADING, h))
            pos = max(pos, h.end)
            i += 1
        if pos < end:
            out.extend(_block(doc.text, pos, end, multi_line))
    return out


def _block(text: str, start: int, end: int, multi_line: str) -> list[Block]:
    start, end = trim(text, start, end)
    if end <= start:
        return []
    return [Block(start, end, multi_line if "\n" in text[start:end] else PROSE)]
