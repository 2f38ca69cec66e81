"""Shared steps of the long-document collection builders (debian_manuals.py, postgresql_doc.py,
python_doc.py).

The manuals are DocBook or Sphinx rendered to HTML: a page is a section (DocBook's `div.section`,
`div.sect1`, `div.refentry` …, Sphinx's HTML5 `<section>`) holding nested sections, each opened by
its heading. The builders keep the pages byte for byte as the Debian package ships them; this
module reads them (BeautifulSoup over lxml) only to find section headings, anchors and the answer
sentence of each judged section, and writes the collection files that
`pgrecall.evaluation.documents_dataset` loads.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import tempfile
import unicodedata
import warnings
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bs4 import BeautifulSoup, Tag, XMLParsedAsHTMLWarning

from pgrecall.evaluation.documents_dataset import question_files

SECTION_CLASSES = frozenset(
    {
        "section",
        "sect1",
        "sect2",
        "sect3",
        "sect4",
        "sect5",
        "simplesect",
        "refentry",
        "refsynopsisdiv",
        "refsect1",
        "refsect2",
        "refsect3",
        "preface",
        "appendix",
        "chapter",
    }
)
HEADING = re.compile(r"^h[1-6]$")
# "6.2.1. ", "F.3. ", "A. ": DocBook's section numbers, which a chunker may or may not keep.
NUMBER = re.compile(r"^\s*(?:[A-Z]|\d+)(?:\.\d+)*\.\s+")
# A sentence ends at . ! ? followed by a space, or at CJK full stops.
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=\S)|(?<=[。！？])")
MIN_ANSWER_CHARS = 40  # normalized characters: short spans would match by chance
MAX_ANSWER_SENTENCES = 3


def normalize(text: str) -> str:
    """The matching form of a text: NFKC, casefolded, word characters only (no spaces, no markup).

    A chunker may render HTML as Markdown (backticks, asterisks) or fold the whitespace differently;
    comparing word characters only makes "the chunk contains the answer" independent of that.
    """
    return "".join(re.findall(r"\w+", unicodedata.normalize("NFKC", text).casefold()))


def clean_heading(text: str) -> str:
    """A heading as a reader sees it, without its section number nor Sphinx's permalink sign."""
    return NUMBER.sub("", " ".join(text.replace("¶", "").split()))


def text_of(el: Tag) -> str:
    """The element's text with whitespace folded."""
    return " ".join(el.get_text().split())


def stable_order(salt: str, key: str) -> str:
    """A deterministic pseudo-random sort key."""
    return hashlib.sha256(f"{salt}:{key}".encode()).hexdigest()


@dataclass(frozen=True)
class Section:
    """One section of a page: its anchor, heading path (outermost first) and answer sentence(s)."""

    anchor: str
    path: tuple[str, ...]
    level: int  # 1 for the page's own top section
    answer: str  # "" when the section opens with no paragraph of its own


def parse(data: bytes) -> BeautifulSoup:
    """A page parsed with lxml's HTML parser (Publican's XHTML pages included: browsers read them as HTML)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", XMLParsedAsHTMLWarning)
        return BeautifulSoup(data, "lxml")


def is_section(el: Tag) -> bool:
    """A section container: DocBook's classed div, or Sphinx's HTML5 <section>."""
    if el.name == "section":
        return True
    classes = el.get("class") or []
    return el.name == "div" and any(c in SECTION_CLASSES for c in classes)


def own_heading(sec: Tag) -> Tag | None:
    """The section's own heading: its first h1–h6 that is not inside a nested section."""
    for h in sec.find_all(HEADING):
        if enclosing_section(h) is sec:
            return h
    return None


def enclosing_section(el: Tag) -> Tag | None:
    """The innermost section that holds `el` (not `el` itself)."""
    for parent in el.parents:
        if isinstance(parent, Tag) and is_section(parent):
            return parent
    return None


def section_anchor(sec: Tag) -> str | None:
    """The section's id: on the div (PostgreSQL) or on an <a> in its heading (Publican)."""
    if sec.get("id"):
        return str(sec["id"])
    h = own_heading(sec)
    if h is not None:
        a = h.find("a", id=True)
        if a is not None:
            return str(a["id"])
    return None


def heading_path(sec: Tag) -> tuple[str, ...]:
    """Headings of the section and of every section around it, outermost first."""
    path: list[str] = []
    node: Tag | None = sec
    while node is not None:
        h = own_heading(node)
        if h is not None:
            path.append(clean_heading(h.get_text()))
        node = enclosing_section(node)
    return tuple(reversed(path))


def first_sentences(text: str) -> str:
    """The first sentences of a paragraph, enough to reach MIN_ANSWER_CHARS normalized characters."""
    pieces = [p for p in SENTENCE_END.split(" ".join(text.split())) if p.strip()]
    out = ""
    for i, piece in enumerate(pieces):
        out = f"{out} {piece}".strip() if out and not re.search(r"[。！？]$", out) else out + piece
        if len(normalize(out)) >= MIN_ANSWER_CHARS or i + 1 >= MAX_ANSWER_SENTENCES:
            break
    return out.strip()


PARAGRAPH_SELECTOR = ("p", "div")


def is_paragraph(el: Tag) -> bool:
    """A running-text paragraph: <p>, or Publican's <div class="para">."""
    if el.name == "p":
        return True
    return el.name == "div" and "para" in (el.get("class") or [])


def answer_after(start: Tag, sec: Tag) -> str:
    """First sentences of the first paragraph at or after `start` that belongs to `sec` itself.

    Paragraphs inside nested sections, sidebars, notes, tables and navigation are skipped: the
    answer is running text of the judged section.
    """
    candidates: Iterable[Any] = [start] if is_paragraph(start) else []
    for el in [*candidates, *start.find_all_next(is_paragraph)]:
        if not isinstance(el, Tag):
            continue
        if enclosing_section(el) is not sec or _inside_aside(el, sec):
            if sec not in el.parents:
                break  # left the section
            continue
        if el.find(is_paragraph) is not None:
            continue  # a wrapper; its inner paragraphs come next
        text = text_of(el)
        if len(normalize(text)) >= MIN_ANSWER_CHARS:
            return first_sentences(text)
    return ""


# Boxes beside a section's running text: DocBook's, and Sphinx's admonitions ("See also" included),
# version notes and topic boxes.
ASIDE_CLASSES = frozenset(
    {"sidebar", "note", "tip", "warning", "caution", "important", "table", "example", "toc"}
    | {"admonition", "seealso", "versionadded", "versionchanged", "deprecated", "deprecated-removed", "topic"}
)


def _inside_aside(el: Tag, sec: Tag) -> bool:
    for parent in el.parents:
        if parent is sec:
            return False
        if isinstance(parent, Tag) and ASIDE_CLASSES.intersection(parent.get("class") or []):
            return True
    return False


def sections(soup: BeautifulSoup) -> Iterator[Section]:
    """Every anchored section of a page, in document order."""
    for sec in soup.find_all(is_section):
        anchor = section_anchor(sec)
        heading = own_heading(sec)
        if anchor is None or heading is None:
            continue
        path = heading_path(sec)
        yield Section(anchor, path, len(path), answer_after(heading, sec))


def top_section(soup: BeautifulSoup) -> Tag | None:
    """The page's outermost section."""
    for sec in soup.find_all(is_section):
        if enclosing_section(sec) is None:
            return sec
    return None


def download(package: str, version: str, workdir: Path) -> Path:
    """`apt-get download package=version` and `dpkg-deb -x` it; the extracted root."""
    subprocess.run(["apt-get", "download", f"{package}={version}"], cwd=workdir, check=True)
    deb = next(workdir.glob(f"{package}_*.deb"))
    root = workdir / package
    subprocess.run(["dpkg-deb", "-x", str(deb), str(root)], check=True)
    return root


def extracted(packages: list[tuple[str, str]], given: Path | None) -> Path:
    """A folder holding each package unpacked as <package>/: `given`, or fresh downloads."""
    if given is not None:
        return given
    workdir = Path(tempfile.mkdtemp(prefix="docset-"))
    for package, version in packages:
        download(package, version, workdir)
    return workdir


def write_jsonl(path: Path, rows: Iterable[dict[str, Any]]) -> None:
    """One JSON object per line, UTF-8, keys in the given order."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")


def write_collection(
    out: Path,
    documents: list[dict[str, Any]],
    sources: dict[str, bytes],
    queries: list[dict[str, Any]],
    passages: list[dict[str, Any]],
) -> None:
    """Write documents/ (the pages as shipped), documents.jsonl, queries.jsonl and the two qrels files."""
    docs_dir = out / "documents"
    if docs_dir.exists():
        for old in sorted(docs_dir.rglob("*"), reverse=True):
            old.unlink() if old.is_file() else old.rmdir()
    for doc in documents:
        target = docs_dir / doc["_id"]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(sources[doc["_id"]])
    write_jsonl(out / "documents.jsonl", documents)
    write_questions(out, queries, passages)


def write_questions(
    out: Path, queries: list[dict[str, Any]], passages: list[dict[str, Any]], questions: str | None = None
) -> None:
    """Write a question set's queries and its two judgement files (each passage's page scores 1)."""
    queries_file, documents_file, passages_file = question_files(questions)
    write_jsonl(out / queries_file, queries)
    write_jsonl(out / passages_file, passages)
    with (out / documents_file).open("w", encoding="utf-8") as fh:
        fh.write("query-id\tcorpus-id\tscore\n")
        for p in passages:
            fh.write(f"{p['query_id']}\t{p['doc_id']}\t1\n")


def document_row(doc_id: str, data: bytes, language: str, title: str) -> dict[str, Any]:
    """A documents.jsonl record."""
    return {
        "_id": doc_id,
        "format": "html",
        "language": language,
        "title": title,
        "bytes": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
    }


def unique_answers(candidates: list[dict[str, Any]], page_texts: dict[str, str]) -> list[dict[str, Any]]:
    """Candidates whose normalized answer occurs in exactly one document, once."""
    out = []
    for c in candidates:
        needle = normalize(c["answer"])
        hits = sum(text.count(needle) for text in page_texts.values())
        if hits == 1 and needle in page_texts[c["doc_id"]]:
            out.append(c)
    return out


def page_text(soup: BeautifulSoup) -> str:
    """The normalized text of a whole page (for the uniqueness checks)."""
    return normalize(soup.get_text())
