"""parse(): bytes of one format to THE normalized document."""

from __future__ import annotations

from typing import Any

from pgrecall.chunking import html, markdown, pdf, rst
from pgrecall.chunking.decode import decode, first_line, normalize
from pgrecall.chunking.model import FORMATS, DocumentError, ParsedDocument


def parse(data: bytes, fmt: str, *, name: str | None = None) -> ParsedDocument:
    """Decode, normalize and read the structure of a document of format `fmt` (one of FORMATS).

    Text formats are UTF-8 (or UTF-16 with a byte-order mark). The normalized text is NFC with
    \\n line ends, no trailing spaces and no NUL; for Markdown, plain text and reStructuredText
    it is the source itself, for HTML and PDF the extracted text. `name` (a file name or URL)
    only goes into the metadata. Every failure is a DocumentError with a one-line reason.
    """
    if fmt not in FORMATS:
        raise DocumentError(f"unknown format {fmt!r} (one of {', '.join(FORMATS)})")
    metadata: dict[str, Any] = {"name": name} if name else {}
    if fmt == "pdf":
        text, title, pdf_meta, pages, headings = pdf.extract(data)
        return ParsedDocument(text, fmt, title, {**metadata, **pdf_meta}, pages, headings)
    text = normalize(decode(data, html.declared_encoding(data) if fmt == "html" else None))
    if not text.strip():
        raise DocumentError("empty document")
    if fmt == "html":
        text, title, headings = html.extract(text)
        if not text.strip():
            raise DocumentError("empty document (no text in the HTML's main content)")
        return ParsedDocument(text, fmt, title or first_line(text), metadata, headings=headings)
    if fmt == "markdown":
        tokens = markdown.tokenize(text)
        front = markdown.front_matter(tokens)
        if front:
            metadata["front_matter"] = front
        blocks = markdown.blocks(text, tokens)
        if not blocks:
            raise DocumentError("empty document")
        title = markdown.title(blocks, front) or first_line(text[blocks[0].start : blocks[0].end])
        return ParsedDocument(text, fmt, title, metadata, tags=markdown.tags(front))
    if fmt == "rst":
        headings = rst.headings(text)
        top = min((h.level for h in headings), default=0)
        title = next((h.title for h in headings if h.level == top), None)
        return ParsedDocument(text, fmt, title or first_line(text), metadata, headings=headings)
    return ParsedDocument(text, fmt, first_line(text), metadata)
