"""pgrecall.chunking: parsing and chunking of documents, pure and fast (no database)."""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pypdf import PdfWriter
from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject

from pgrecall.chunking import (
    DEFAULT_MAX_CHARS,
    Chunk,
    DocumentError,
    ParsedDocument,
    chunk,
    detect_format,
    parse,
)
from pgrecall.domain.validation import check_metadata
from pgrecall.errors import InvalidInputError


def _spans_ok(doc: ParsedDocument, chunks: list[Chunk], max_chars: int) -> None:
    assert [c.ordinal for c in chunks] == list(range(len(chunks)))
    previous_end = 0
    for c in chunks:
        assert c.text == doc.text[c.start : c.end]
        assert c.text.strip() == c.text and c.text
        assert c.start >= previous_end
        assert c.end - c.start <= max_chars
        previous_end = c.end


# A small Markdown vocabulary: headings, paragraphs, fences, lists, tables, CJK and odd spacing.
_WORD = st.sampled_from(["alpha", "Beta.", "gamma,", "Delta!", "é", "東京。", "x" * 30, "a\tb", "`c`"])
_LINE = st.lists(_WORD, min_size=1, max_size=12).map(" ".join)
_BLOCK = st.one_of(
    _LINE,
    st.tuples(st.sampled_from(["#", "##", "###"]), _LINE).map(" ".join),
    st.lists(_LINE, min_size=1, max_size=4).map(lambda ls: "```\n" + "\n\n".join(ls) + "\n```"),
    st.lists(_LINE, min_size=1, max_size=5).map(lambda ls: "\n".join("- " + x for x in ls)),
    st.lists(_LINE, min_size=1, max_size=3).map(
        lambda ls: "| a | b |\n|---|---|\n" + "\n".join(f"| {x} | 1 |" for x in ls)
    ),
    st.lists(_LINE, min_size=2, max_size=8).map(" ".join),
)
_SEPARATOR = st.sampled_from(["\n\n", "\n", "\r\n\r\n", "  \n\n\n"])


@st.composite
def _markdown(draw: st.DrawFn) -> str:
    blocks = draw(st.lists(_BLOCK, min_size=1, max_size=12))
    seps = draw(st.lists(_SEPARATOR, min_size=len(blocks), max_size=len(blocks)))
    return "".join(b + s for b, s in zip(blocks, seps, strict=True))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(source=_markdown(), fmt=st.sampled_from(["markdown", "text", "rst"]), max_chars=st.integers(20, 400))
def test_every_chunk_is_a_verbatim_span_of_the_normalized_document(
    source: str, fmt: str, max_chars: int
) -> None:
    if not source.strip():
        return
    doc = parse(source.encode(), fmt)
    assert "\r" not in doc.text and "\x00" not in doc.text
    assert all(line == line.rstrip() for line in doc.text.split("\n"))
    chunks = chunk(doc, max_chars=max_chars, min_chars=max_chars // 4)
    _spans_ok(doc, chunks, max_chars)
    # Nothing is lost: every non-blank character outside the chunks is whitespace or (Markdown)
    # a thematic break the chunker does not cite.
    covered = set()
    for c in chunks:
        covered.update(range(c.start, c.end))
    assert all(doc.text[i].isspace() for i in range(len(doc.text)) if i not in covered) or fmt == "markdown"


MD = """---
title: From front matter
tags: [a, b]
---
# Handbook

Welcome to the handbook.

## Install

Run the installer.

### Linux

```sh
apt install pgrecall

apt install postgresql
```

## Use

- first item of the list
- second item
  with a continuation line

| key | value |
|-----|-------|
| a   | 1     |
"""


def test_markdown_headings_give_the_section_path_and_front_matter_the_metadata() -> None:
    doc = parse(MD.encode(), "markdown", name="handbook.md")
    assert doc.title == "Handbook"
    assert doc.metadata["front_matter"] == {"title": "From front matter", "tags": ["a", "b"]}
    assert doc.metadata["name"] == "handbook.md"
    chunks = chunk(doc, max_chars=200, min_chars=0)
    _spans_ok(doc, chunks, 200)
    assert all("From front matter" not in c.text for c in chunks)
    paths = {c.section_path for c in chunks}
    assert ("Handbook",) in paths
    assert ("Handbook", "Install", "Linux") in paths
    use = next(c for c in chunks if c.section_path == ("Handbook", "Use"))
    assert use.text.startswith("## Use") and "second item\n  with a continuation line" in use.text
    assert "| a   | 1     |" in use.text


def test_a_new_section_starts_a_new_chunk_and_small_paragraphs_are_packed() -> None:
    source = "# A\n\none.\n\ntwo.\n\nthree.\n\n# B\n\nfour.\n"
    chunks = chunk(parse(source.encode(), "markdown"), max_chars=1000)
    assert [c.text for c in chunks] == ["# A\n\none.\n\ntwo.\n\nthree.", "# B\n\nfour."]
    assert [c.section_path for c in chunks] == [("A",), ("B",)]


def test_a_code_block_is_not_split_when_it_fits() -> None:
    code = "```python\n" + "\n\n".join(f"x{i} = {i}" for i in range(20)) + "\n```"
    source = "# Code\n\n" + "Some prose here. " * 10 + "\n\n" + code + "\n\nAfter.\n"
    doc = parse(source.encode(), "markdown")
    chunks = chunk(doc, max_chars=len(code) + 5)
    assert any(code in c.text for c in chunks)


def test_an_oversized_code_block_is_split_at_line_boundaries() -> None:
    code = "```\n" + "\n".join(f"line number {i}. Next" for i in range(100)) + "\n```"
    doc = parse(code.encode(), "markdown")
    chunks = chunk(doc, max_chars=300)
    _spans_ok(doc, chunks, 300)
    assert len(chunks) > 1
    assert all(doc.text[c.end] == "\n" for c in chunks[:-1])


def test_list_items_and_tables_are_kept_whole() -> None:
    items = [f"- item {i} " + "word " * 15 + "end." for i in range(8)]
    table = "| h | v |\n|---|---|\n" + "\n".join(f"| row{i} | {i} |" for i in range(6))
    source = "# L\n\n" + "\n".join(items) + "\n\n" + table + "\n"
    doc = parse(source.encode(), "markdown")
    chunks = chunk(doc, max_chars=250, min_chars=0)
    _spans_ok(doc, chunks, 250)
    for item in items:
        assert sum(item in c.text for c in chunks) == 1
    assert sum(table in c.text for c in chunks) == 1


def test_oversized_prose_is_cut_between_sentences() -> None:
    sentences = [f"Sentence number {i} says something quite ordinary." for i in range(40)]
    doc = parse(" ".join(sentences).encode(), "text")
    chunks = chunk(doc, max_chars=200)
    _spans_ok(doc, chunks, 200)
    assert all(c.text.endswith(".") and c.text.startswith("Sentence") for c in chunks)


def test_cjk_text_is_cut_at_sentence_punctuation() -> None:
    sentences = [f"東京は日本の首都であり{i}番目の文です。" for i in range(30)] + ["本当ですか？", "はい！"]
    doc = parse("".join(sentences).encode(), "text")
    chunks = chunk(doc, max_chars=60, min_chars=0)
    _spans_ok(doc, chunks, 60)
    assert len(chunks) > 5
    assert all(c.text[-1] in "。？！" for c in chunks)


def test_plain_text_paragraphs_and_title() -> None:
    doc = parse(b"Title line\r\n\r\nFirst paragraph.   \r\nstill first.\r\n\r\n\r\nSecond.\r\n", "text")
    assert doc.text == "Title line\n\nFirst paragraph.\nstill first.\n\n\nSecond."
    assert doc.title == "Title line"
    assert [c.text for c in chunk(doc, max_chars=30, min_chars=0)] == [
        "Title line",
        "First paragraph.\nstill first.",
        "Second.",
    ]


def test_rst_sections_come_from_docutils() -> None:
    source = (
        "=====\nGuide\n=====\n\nIntro.\n\nSetup\n-----\n\nDo this.\n\n"
        "Details\n~~~~~~~\n\nMore.\n\nUsage\n-----\n\nUse it.\n"
    )
    doc = parse(source.encode(), "rst")
    assert doc.title == "Guide"
    chunks = chunk(doc, max_chars=1000, min_chars=0)
    assert [c.section_path for c in chunks] == [
        ("Guide",),
        ("Guide", "Setup"),
        ("Guide", "Setup", "Details"),
        ("Guide", "Usage"),
    ]
    assert chunks[1].text == "Setup\n-----\n\nDo this."


HTML = b"""<!doctype html><html><head><title>The Page</title><style>p{}</style></head>
<body><nav><a href="/">Home</a> menu links</nav><header>Site banner</header>
<main><h1>Guide</h1><p>First   paragraph <b>bold</b>.</p>
<h2>Part two</h2><p>Second paragraph.</p><ul><li>one</li><li>two</li></ul>
<table><tr><th>k</th><th>v</th></tr><tr><td>a</td><td>1</td></tr></table>
<script>var x = 1;</script></main>
<aside>related stuff</aside><footer>Copyright footer</footer></body></html>"""


def test_html_keeps_the_main_content_and_drops_navigation_and_footer() -> None:
    assert detect_format(None, HTML) == "html"
    doc = parse(HTML, "html")
    assert doc.title == "The Page"
    for noise in ("menu links", "Site banner", "Copyright footer", "related stuff", "var x", "p{}"):
        assert noise not in doc.text
    assert doc.text == (
        "Guide\n\nFirst paragraph bold.\n\nPart two\n\nSecond paragraph.\n\none\ntwo\n\nk | v\na | 1"
    )
    chunks = chunk(doc, max_chars=1000, min_chars=0)
    assert [c.section_path for c in chunks] == [("Guide",), ("Guide", "Part two")]
    # With the default min_chars the short opening stays with its first subsection.
    assert [c.section_path for c in chunk(doc)] == [("Guide",)]
    assert chunks[1].text.startswith("Part two\n\nSecond paragraph.")


def _pdf(
    pages: list[list[str]],
    title: str | None = None,
    password: str | None = None,
    outline: Sequence[tuple[int, str, int]] = (),
) -> bytes:
    """A PDF with one Helvetica text line per string, written with pypdf alone; outline entries
    (level, title, page index) nest under the last entry one level up."""
    writer = PdfWriter()
    font = DictionaryObject(
        {
            NameObject("/Type"): NameObject("/Font"),
            NameObject("/Subtype"): NameObject("/Type1"),
            NameObject("/BaseFont"): NameObject("/Helvetica"),
        }
    )
    font_ref = writer._add_object(font)
    for lines in pages:
        page = writer.add_blank_page(612, 792)
        ops = ["BT", "/F1 12 Tf", "14 TL", "72 720 Td"]
        ops += ["(" + line.replace("(", r"\(").replace(")", r"\)") + ") Tj T*" for line in lines]
        stream = DecodedStreamObject()
        stream.set_data("\n".join([*ops, "ET"]).encode("latin-1"))
        page[NameObject("/Contents")] = writer._add_object(stream)
        page[NameObject("/Resources")] = DictionaryObject(
            {NameObject("/Font"): DictionaryObject({NameObject("/F1"): font_ref})}
        )
    parents: dict[int, Any] = {}
    for level, heading, page_index in outline:
        parents[level] = writer.add_outline_item(
            title=heading, page_number=page_index, parent=parents.get(level - 1)
        )
    if title:
        writer.add_metadata({"/Title": title})
    if password is not None:
        writer.encrypt(password, algorithm="RC4-128")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def test_pdf_pages_are_kept_in_the_document_and_the_chunks() -> None:
    data = _pdf([["Page one starts here.", "It goes on."], ["Page two."], [], ["Page four."]], title="Report")
    assert detect_format("report.bin", data) == "pdf"
    doc = parse(data, "pdf")
    assert doc.title == "Report"
    assert doc.metadata["page_count"] == 4
    assert len(doc.pages) == 4
    assert doc.text[slice(*doc.pages[1])] == "Page two."
    assert doc.pages[2][0] == doc.pages[2][1]
    chunks = chunk(doc, max_chars=40, min_chars=0)
    _spans_ok(doc, chunks, 40)
    assert [c.metadata["pages"] for c in chunks] == [[1], [2, 4]]
    assert chunk(doc, max_chars=1000)[0].metadata["pages"] == [1, 2, 4]


def test_pdf_with_an_empty_user_password_opens() -> None:
    assert parse(_pdf([["Open me."]], password=""), "pdf").text == "Open me."


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (_pdf([["Secret."]], password="hunter2"), "encrypted PDF"),
        (_pdf([[]]), "PDF has no text layer (scanned?)"),
        (b"%PDF-1.4\nnot really a pdf", "corrupt PDF"),
    ],
)
def test_unreadable_pdfs_are_one_line_document_errors(data: bytes, reason: str) -> None:
    with pytest.raises(DocumentError) as info:
        parse(data, "pdf")
    assert str(info.value).startswith(reason)
    assert "\n" not in str(info.value)


def test_binary_invalid_utf8_and_empty_input_are_document_errors() -> None:
    png = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256))
    with pytest.raises(DocumentError, match=r"^binary file$"):
        detect_format("picture.md", png)
    with pytest.raises(DocumentError, match="binary file"):
        parse(png, "markdown")
    with pytest.raises(DocumentError, match=r"^invalid UTF-8 at byte 6 \(and no other encoding declared\)"):
        parse(b"hello \xff world", "text")
    with pytest.raises(DocumentError, match="empty document"):
        parse(b" \n\t\n", "text")
    with pytest.raises(DocumentError, match="empty document"):
        detect_format("a.txt", b"")
    with pytest.raises(DocumentError, match="unknown format"):
        parse(b"x", "docx")


def test_detect_format_by_extension_then_content() -> None:
    assert detect_format("Notes.MD", b"plain") == "markdown"
    assert detect_format("a.htm", b"x") == "html"
    assert detect_format("a.rst", b"x") == "rst"
    assert detect_format("a.txt", b"# not markdown") == "text"
    assert detect_format(None, b"# Title\n\ntext") == "markdown"
    assert detect_format(None, b".. note::\n\n   hi") == "rst"
    assert detect_format(None, b"Just words.") == "text"
    assert detect_format(None, "\ufeffcaf\u00e9".encode("utf-16")) == "text"


def test_normalization_is_nfc_and_utf16_with_bom_is_read() -> None:
    doc = parse("cafe\u0301\n".encode("utf-16"), "text")
    assert doc.text == "caf\u00e9"


def test_defaults_and_bad_sizes() -> None:
    assert 1000 <= DEFAULT_MAX_CHARS <= 1500
    doc = parse(b"x", "text")
    with pytest.raises(ValueError, match="max_chars"):
        chunk(doc, max_chars=0)


def test_front_matter_values_become_plain_json_and_its_tags_are_read() -> None:
    text = (
        "---\ndate: 2026-11-20\nat: 2026-11-20 10:00:00\n1: one\nnan: .nan\nblob: !!binary aGk=\n"
        "tags: '#a, b c'\n---\n# T\n\nBody text.\n"
    )
    doc = parse(text.encode(), "markdown", name="n.md")
    front = doc.metadata["front_matter"]
    assert front == {
        "date": "2026-11-20",
        "at": "2026-11-20T10:00:00",
        "1": "one",
        "nan": "nan",
        "blob": "aGk=",
        "tags": "#a, b c",
    }
    assert doc.tags == ("a", "b", "c")
    assert parse(b"---\ntags: [x, 2]\n---\n# T\n\nBody.\n", "markdown").tags == ("x", "2")
    assert parse(b"---\ntitle: t\n---\n# T\n\nBody.\n", "markdown").tags == ()
    assert parse(b"# T\n\nBody.\n", "markdown").tags is None


def test_a_front_matter_alias_bomb_is_left_for_the_metadata_check() -> None:
    bomb = "---\na: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n"
        for i in range(12)
    )
    doc = parse((bomb + "---\n# T\n\nBody.\n").encode(), "markdown")
    with pytest.raises(InvalidInputError, match="metadata"):
        check_metadata(doc.metadata)


def test_an_html_page_is_read_in_the_encoding_its_meta_declares() -> None:
    latin = "<html><head><meta http-equiv='Content-Type' content='text/html; charset=ISO-8859-1'>"
    latin += "<title>Café</title></head><body><p>Crème “brûlée” au théâtre</p></body></html>"
    # Declared Latin-1 is read as browsers read it: windows-1252 (its curly quotes included).
    assert parse(latin.encode("cp1252"), "html").text == "Crème “brûlée” au théâtre"
    euc = '<meta charset="euc-jp"><h1>日本</h1><p>データベースのバックアップ</p>'.encode("euc_jp")
    assert parse(euc, "html").text == "日本\n\nデータベースのバックアップ"
    # UTF-8 under a Latin-1 label (a common misconfiguration) stays UTF-8.
    mislabelled = '<meta charset="iso-8859-1"><p>Café crème</p>'.encode()
    assert parse(mislabelled, "html").text == "Café crème"
    with pytest.raises(DocumentError, match=r"^invalid UTF-8 at byte 15 \(and no other encoding"):
        parse(b"<p>no meta, caf\xe9</p>", "html")
    with pytest.raises(DocumentError, match=r"^invalid UTF-8 at byte \d+ \(and no other encoding"):
        parse(b'<meta charset="klingon-8"><p>caf\xe9</p>', "html")
    # Python's transforms and escapes are no page's encoding: ignored, as browsers ignore them.
    for label in ("zlib", "base64", "rot13", "unicode_escape", "utf-7", "undefined", "idna"):
        with pytest.raises(DocumentError, match=r"^invalid UTF-8 at byte \d+ \(and no other encoding"):
            parse(f'<meta charset="{label}"><p>caf\xe9</p>'.encode("latin-1"), "html")
    with pytest.raises(DocumentError, match=r"^invalid shift_jis \(the encoding it declares\) at byte"):
        parse(b'<meta charset="shift_jis"><p>\x81\xff</p>', "html")


def test_front_matter_longer_than_metadata_may_be_is_refused_unread() -> None:
    long = "---\nitems:\n" + "".join(f"  - {i}\n" for i in range(20_000)) + "---\n# T\n\nBody.\n"
    with pytest.raises(
        InvalidInputError, match=r"^metadata: the front matter is \d+ bytes; the limit is 65536$"
    ):
        parse(long.encode(), "markdown")


def test_a_pdf_outline_gives_the_chunks_their_section_paths() -> None:
    lines = ["Field guide to lichens", "", "1 Introduction", "Lichens are partnerships of fungi and algae."]
    pages = [
        lines + ["Foliose lichens are leafy and lobed; crustose ones crust on rock."] * 6,
        ["Field guide to lichens 2", "1.1 Where they grow", "On bark, on stone, on old fence posts."]
        + ["Urban air keeps the sensitive species away from town centres."] * 6,
        ["2 Collecting", "Take a flake, never the whole thallus, and note the substrate."] * 4,
    ]
    outline = [(1, "1 Introduction", 0), (2, "Where they grow", 1), (1, "Collecting", 2), (1, "Index", 2)]
    doc = parse(_pdf(pages, outline=outline), "pdf")
    # "Where they grow" is shown as "1.1 Where they grow"; "Index" is not in the text: left out.
    assert [(h.level, h.title, doc.text[h.start : h.end]) for h in doc.headings] == [
        (1, "1 Introduction", "1 Introduction"),
        (2, "Where they grow", "1.1 Where they grow"),
        (1, "Collecting", "2 Collecting"),
    ]
    chunks = chunk(doc, max_chars=300, min_chars=0)
    _spans_ok(doc, chunks, 300)
    paths = {c.section_path for c in chunks}
    assert ("1 Introduction", "Where they grow") in paths and ("Collecting",) in paths
    urban = next(c for c in chunks if "Urban air" in c.text)
    assert urban.section_path == ("1 Introduction", "Where they grow")
    assert urban.metadata["pages"] == [2]
