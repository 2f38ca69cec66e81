"""From bytes to the normalized text: format detection, UTF-8 decoding, normalization."""

from __future__ import annotations

import codecs
import re
import unicodedata
from pathlib import PurePath

from pgrecall.chunking.model import DocumentError

_EXTENSIONS = {
    ".md": "markdown",
    ".markdown": "markdown",
    ".html": "html",
    ".htm": "html",
    ".txt": "text",
    ".pdf": "pdf",
    ".rst": "rst",
}
_SNIFF_BYTES = 8192
# Control bytes that plain text does not contain (tab, LF, VT, FF, CR and ESC excepted).
_CONTROL = bytes(b for b in range(32) if b not in (9, 10, 11, 12, 13, 27)) + b"\x7f"
_HTML_START = re.compile(r"\s*(?:<!--.*?-->\s*)*<(?:!doctype\s+html|html|head|body)\b", re.I | re.S)
_MARKDOWN_HINT = re.compile(r"^(?:#{1,6}\s|```|~~~|---\n|\s*[-*+]\s+\[[ xX]\]|\|.*\|\s*$)", re.M)
_RST_HINT = re.compile(r"^\.\. (?:[a-z-]+::|_[^:]+:)", re.M)


def _utf16(data: bytes) -> bool:
    return data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE))


def _looks_binary(data: bytes) -> bool:
    sample = data[:_SNIFF_BYTES]
    if _utf16(sample):
        return False
    if b"\x00" in sample:
        return True
    return bool(sample) and sum(sample.count(c) for c in _CONTROL) / len(sample) > 0.05


def detect_format(name: str | None, data: bytes) -> str:
    """One of FORMATS: by the name's extension, else by sniffing the content.

    Raises DocumentError for binary data (other than a PDF) and for an empty document.
    """
    if not data.strip():
        raise DocumentError("empty document")
    by_name = _EXTENSIONS.get(PurePath(name).suffix.lower()) if name else None
    if by_name == "pdf" or data.lstrip()[:5] == b"%PDF-":
        return "pdf"
    if _looks_binary(data):
        raise DocumentError("binary file")
    if by_name is not None:
        return by_name
    head = data[:_SNIFF_BYTES].decode("utf-8", errors="replace")
    if _HTML_START.match(head.lstrip("\ufeff")):
        return "html"
    if _RST_HINT.search(head):
        return "rst"
    if _MARKDOWN_HINT.search(head.replace("\r\n", "\n")):
        return "markdown"
    return "text"


def decode(data: bytes, declared: str | None = None) -> str:
    """UTF-8 (or UTF-16 with a byte-order mark) to str; binary or invalid data is a DocumentError.

    `declared`: the encoding the document names (an HTML page's <meta>), a Python codec name. It is
    used only when the data is not UTF-8: pages that declare Latin-1 but are UTF-8 are common, and
    valid UTF-8 with accents is almost never meant as anything else.
    """
    if _utf16(data):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError as exc:
            raise DocumentError(f"invalid UTF-16 at byte {exc.start}") from exc
    if _looks_binary(data):
        raise DocumentError("binary file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        if declared is None or data.startswith(codecs.BOM_UTF8):
            raise DocumentError(
                f"invalid UTF-8 at byte {exc.start} (and no other encoding declared): "
                "convert it to UTF-8 first, e.g. with iconv"
            ) from exc
    try:
        return data.decode(declared)
    except UnicodeDecodeError as exc:
        raise DocumentError(f"invalid {declared} (the encoding it declares) at byte {exc.start}") from exc


def normalize(text: str, *, drop_nul: bool = False) -> str:
    """NFC, \\r\\n and \\r to \\n, no trailing spaces on a line, no blank lines at either end.

    A NUL character means the data was not text (DocumentError) unless `drop_nul` (a PDF's
    text layer may carry them as extraction noise).
    """
    if "\x00" in text:
        if not drop_nul:
            raise DocumentError("binary file (NUL character)")
        text = text.replace("\x00", "")
    text = unicodedata.normalize("NFC", text.removeprefix("\ufeff"))
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return "\n".join(line.rstrip() for line in text.split("\n")).strip("\n")


def first_line(text: str, limit: int = 200) -> str | None:
    """The first non-blank line, trimmed and cut to `limit` characters (a fallback title)."""
    for line in text.split("\n"):
        if line.strip():
            return line.strip()[:limit]
    return None
