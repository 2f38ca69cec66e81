"""HTML: the main content's text with selectolax (lexbor), headings h1-h6 as the outline.

The normalized document is the extracted text: a heading or paragraph per line, blocks separated
by a blank line, a list as one line per item, a table as one line per row (cells joined by
" | "), preformatted text as it is.
"""

from __future__ import annotations

import codecs
from email.message import Message

from selectolax.lexbor import LexborHTMLParser, LexborNode

from pgrecall.chunking.decode import normalize
from pgrecall.chunking.model import DocumentError, Heading

# Never main content: chrome, scripts, forms and anything marked hidden or navigational.
_DROP = (
    "script, style, noscript, template, nav, header, footer, aside, form, button, svg, iframe, "
    "object, embed, canvas, dialog, [hidden], [aria-hidden=true], [role=navigation], "
    "[role=banner], [role=contentinfo], [role=complementary], [role=search]"
)
_BLOCK = frozenset(
    [
        "address",
        "article",
        "blockquote",
        "body",
        "dd",
        "details",
        "div",
        "dl",
        "dt",
        "fieldset",
        "figcaption",
        "figure",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "hr",
        "li",
        "main",
        "ol",
        "p",
        "pre",
        "section",
        "summary",
        "table",
        "tbody",
        "td",
        "tfoot",
        "th",
        "thead",
        "tr",
        "ul",
        "caption",
    ]
)
_HEADINGS = {f"h{n}": n for n in range(1, 7)}


class _Writer:
    """Collects blocks of text; inline text accumulates into the current line."""

    def __init__(self) -> None:
        self.blocks: list[tuple[str, int]] = []  # (text, heading level or 0)
        self.lines: list[str] = []
        self.words: list[str] = []

    def inline(self, text: str) -> None:
        self.words.append(text)

    def end_line(self) -> None:
        line = " ".join("".join(self.words).split())
        self.words = []
        if line:
            self.lines.append(line)

    def end_block(self, level: int = 0) -> None:
        self.end_line()
        if self.lines:
            self.blocks.append(("\n".join(self.lines), level))
        self.lines = []

    def raw_block(self, text: str) -> None:
        self.end_block()
        if text.strip():
            self.blocks.append((text.strip("\n"), 0))


# The WHATWG Encoding standard's reading of labels Python maps otherwise: a page labelled Latin-1 or
# ASCII is decoded as windows-1252 by every browser, and a <meta> can never mean UTF-16.
_AS_BROWSERS_DO = {"iso8859-1": "cp1252", "ascii": "cp1252", "utf-16": "utf-8", "gb2312": "gbk"}
# Labels browsers accept that Python's codec registry does not know.
_BROWSER_LABELS = {
    "windows-874": "cp874",
    "dos-874": "cp874",
    "tis-620": "cp874",
    "iso-8859-11": "cp874",
    "x-mac-cyrillic": "mac-cyrillic",
    "x-mac-roman": "mac-roman",
    "windows-31j": "cp932",
    "x-sjis": "cp932",
    "windows-949": "cp949",
    "x-gbk": "gbk",
    "x-euc-jp": "euc_jp",
    "x-cp1252": "cp1252",
}
# The encodings browsers decode pages in (WHATWG Encoding), by Python codec name. Any other label
# is ignored, as browsers ignore it: Python's codecs also include transforms (zlib, base64) and
# escapes (unicode_escape, utf-7) that no page is written in.
_BROWSER_ENCODINGS = frozenset(
    ["utf-8", "cp866", "koi8-r", "koi8-u", "mac-roman", "mac-cyrillic", "cp874"]
    + [f"iso8859-{n}" for n in (2, 3, 4, 5, 6, 7, 8, 10, 13, 14, 15, 16)]
    + [f"cp{n}" for n in range(1250, 1259)]
    + ["gbk", "gb18030", "big5", "euc_jp", "iso2022_jp", "shift_jis", "cp932", "euc_kr", "cp949"]
)
# How far into a page browsers look for a <meta> naming its encoding.
_PRESCAN_BYTES = 1024


def declared_encoding(data: bytes) -> str | None:
    """The encoding a page names in a <meta> (charset, or http-equiv Content-Type), as a codec name.

    None when it names none, or none that browsers decode pages in.
    """
    # Latin-1 maps every byte to a character: the markup, ASCII in any encoding a meta may name,
    # reads the same whatever the page's encoding is.
    head = LexborHTMLParser(data[:_PRESCAN_BYTES].decode("latin-1"))
    for meta in head.css("meta"):
        label = meta.attributes.get("charset")
        if label is None and (meta.attributes.get("http-equiv") or "").lower() == "content-type":
            header = Message()
            header["content-type"] = meta.attributes.get("content") or ""
            param = header.get_param("charset")
            label = param if isinstance(param, str) else None
        if not label:
            continue
        try:
            name = codecs.lookup(_BROWSER_LABELS.get(label.strip().lower(), label.strip())).name
        except LookupError:
            continue
        name = _AS_BROWSERS_DO.get(name.removesuffix("-le").removesuffix("-be"), name)
        return name if name in _BROWSER_ENCODINGS else None
    return None


def _walk(node: LexborNode, out: _Writer) -> None:
    for child in node.iter(include_text=True):
        tag = child.tag
        if tag == "-text":
            out.inline(child.text(deep=False))
        elif tag in ("-comment", None):
            continue
        elif tag == "pre":
            out.raw_block(child.text(deep=True))
        elif tag in _HEADINGS:
            out.end_block()
            _walk(child, out)
            out.end_block(_HEADINGS[tag])
        elif tag in ("li", "tr", "dt", "dd", "caption"):
            out.end_line()
            _walk(child, out)
            out.end_line()
        elif tag in ("td", "th"):
            if out.words:
                out.inline(" | ")
            _walk(child, out)
        elif tag == "br":
            out.end_line()
        elif tag in _BLOCK:
            out.end_block()
            _walk(child, out)
            out.end_block()
        else:
            _walk(child, out)


def extract(source: str) -> tuple[str, str | None, tuple[Heading, ...]]:
    """(normalized text, <title> or first h1, headings with offsets in the text)."""
    tree = LexborHTMLParser(source)
    title_node = tree.css_first("title")
    title = " ".join(title_node.text().split()) if title_node is not None else ""
    for node in tree.css(_DROP):
        node.decompose()
    root = tree.css_first("main") or tree.css_first("article") or tree.body or tree.root
    out = _Writer()
    if root is not None:
        try:
            _walk(root, out)
        except RecursionError as exc:
            raise DocumentError("HTML nested too deeply") from exc
    out.end_block()
    parts: list[str] = []
    headings: list[Heading] = []
    pos = 0
    for raw, level in out.blocks:
        text = normalize(raw, drop_nul=True)
        if not text:
            continue
        if parts:
            pos += 2
        if level:
            headings.append(Heading(level, " ".join(text.split()), pos, pos + len(text)))
        parts.append(text)
        pos += len(text)
    if not title:
        title = next((h.title for h in headings if h.level == 1), "")
    return "\n\n".join(parts), title or None, tuple(headings)
