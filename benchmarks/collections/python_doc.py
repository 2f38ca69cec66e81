"""Build the python-doc collection: Python 3.11's library and language references, queried by their index.

    python benchmarks/collections/python_doc.py [--extracted DIR] [--out DIR]

Downloads python3.11-doc 3.11.2-6+deb12u8 (Debian 12 "bookworm") with `apt-get download`, unpacks
it with `dpkg-deb -x` (or reads an already unpacked copy given as DIR/python3.11-doc/ with
--extracted) and writes benchmarks/collections/python-doc/. See the README there for what is kept
and why.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

import docset_build as b
from bs4 import Tag
from bs4.element import NavigableString

from pgrecall.chunking.parsing import parse as pgrecall_parse

PACKAGE = "python3.11-doc"
VERSION = "3.11.2-6+deb12u8"
HTML = Path("usr/share/doc/python3.11/html")
SALT = "pgrecall-python-doc-1"
# The Library Reference and the Language Reference (each folder's index.html is its table of contents).
FOLDERS = ("library", "reference")
# Longer pages (os, stdtypes, typing, re …) are left out so that the 150 pages stay near 12 MB.
MAX_PAGE_BYTES = 200_000
MAX_DOCUMENTS = 150
MAX_QUERIES = 300
MAX_ANSWER_CHARS = 600
# "name (qualifier)", as Sphinx's genindex reads an entry when it groups the entries of one name.
QUALIFIED = re.compile(r"^(.*) (\([^()]*\))$")
# Qualifiers that say where a Python object lives: folded into its name as a reader writes it.
LOCATION = re.compile(
    r"^\((?:in module (?P<module>[\w.]+)|class in (?P<home>[\w.]+)"
    r"|(?P<owner>[\w.]+) (?:method|attribute|class method|static method|property)"
    r"|built-in (?:function|class|variable))\)$"
)
# Sub-entry headings that are kinds of things (pair entries, e.g. "module; html", "RFC; RFC 959"):
# the thing is named bare, or with its kind in parentheses.
BARE_KINDS = frozenset({"built-in function", "environment variable", "RFC", "Python Enhancement Proposals"})
NAMED_KIND = re.compile(r"^(?:module|.+ command line option)$")
MARK = "\ue000"  # a private-use character: not a word character, so never part of a normalized text


def doc_id(relative: str) -> str:
    """A page's id: its path under html/ with "/" as "-" (library/os.path.html → library-os.path.html)."""
    return relative.replace("/", "-")


def prepare(soup: Any) -> Any:
    """The parsed page as read for judgements (the committed file is left as shipped): without the
    "¶" permalinks of headings and signatures, and with the "Source code: Lib/…" line that opens a
    module's page no longer a paragraph (a link, not the section's running text)."""
    for a in soup.find_all("a", class_="headerlink"):
        a.decompose()
    for p in soup.find_all("p"):
        if b.text_of(p).startswith("Source code:"):
            p.name = "div"
    return soup


def _own_text(li: Tag) -> str:
    """An index item's text: its first link's, else its bare text."""
    link = li.find("a", recursive=False)
    if link is not None:
        return " ".join(link.get_text().split())
    first = li.find(string=True, recursive=False)
    return " ".join(str(first).split()) if first is not None else ""


def index_entries(soup: Any) -> list[tuple[str, str, str]]:
    """(term, subterm or "", href) for every index entry that links to exactly one place.

    Sphinx shows "join() (in module os.path)", "join() (str method)" … as "join() (asyncio.Queue
    method)" with sub-entries "(in module os.path)", "(str method)"; such a sub-entry is given back
    as the entry Sphinx grouped ("join() (in module os.path)", no subterm).
    """
    out: list[tuple[str, str, str]] = []
    for table in soup.find_all("table", class_="genindextable"):
        for li in table.find_all("li"):
            links = li.find_all("a", recursive=False)
            own = _own_text(li)
            outer = li.find_parent("li")
            if outer is None:
                term, sub = own, ""
            elif re.fullmatch(r"\([^()]*\)", own):
                parent = _own_text(outer)
                m = QUALIFIED.match(parent)
                term, sub = f"{m.group(1) if m else parent} {own}", ""
            else:
                term, sub = _own_text(outer), own
            if len(links) == 1 and term:
                out.append((term, sub, str(links[0]["href"])))
    return out


def query_term(term: str, sub: str) -> str:
    """What the query asks about: a Python object by its name as code writes it (os.path.join(),
    str.removeprefix(), abs()), other entries as the index writes them."""
    if not sub:
        m = QUALIFIED.match(term)
        loc = LOCATION.match(m.group(2)) if m else None
        if m is None or loc is None:
            return term
        name = m.group(1)
        home = loc.group("module") or loc.group("home") or loc.group("owner")
        return f"{home}.{name}" if home else name
    for kind, name in ((term, sub), (sub, term)):
        if kind in BARE_KINDS:
            return name
        if NAMED_KIND.match(kind):
            return f"{name} ({kind})"
    return f"{term} ({sub})"


def names(term: str, sub: str) -> list[str]:
    """The strings a sentence may name the entry by, most specific first."""
    out = []
    for text in (query_term(term, sub), term, sub):
        bare = QUALIFIED.sub(r"\1", text)
        for candidate in (bare, bare.rsplit(".", 1)[-1]):
            if len(b.normalize(candidate)) >= 3 and candidate not in out:
                out.append(candidate)
    return out


def object_description(dt: Tag) -> str:
    """An object's signature(s) and the first sentences of its description, as one span."""
    signatures = [b.text_of(dt)]
    node = dt.find_next_sibling()
    while isinstance(node, Tag) and node.name == "dt":
        signatures.append(b.text_of(node))
        node = node.find_next_sibling()
    description = ""
    if isinstance(node, Tag) and node.name == "dd":
        # Its opening paragraph (the span stays contiguous: nothing comes between), else its text.
        first = node.find(True, recursive=False)
        opening = first if isinstance(first, Tag) and first.name == "p" else node
        description = b.first_sentences(b.text_of(opening))
    return " ".join([*signatures, description]).strip()[:MAX_ANSWER_CHARS]


def sentence_at(para: Tag, target: Tag | None, needles: list[str]) -> str:
    """The sentence of `para` that holds `target` (its start when None) if it names the entry, else
    the first sentence naming it, else the one holding the target; with the next sentences when it
    is too short to be a known item."""
    mark = NavigableString(MARK)
    if target is not None:
        target.insert_before(mark)
    else:
        para.insert(0, mark)
    text = b.text_of(para)
    mark.extract()
    pieces = [p for p in b.SENTENCE_END.split(text) if p.strip()]
    at = next((i for i, p in enumerate(pieces) if MARK in p), 0)
    pieces = [" ".join(p.replace(MARK, " ").split()) for p in pieces]

    def named(i: int) -> bool:
        return any(b.normalize(n) in b.normalize(pieces[i]) for n in needles)

    start = at if named(at) else next((i for i in range(len(pieces)) if named(i)), at)
    return b.first_sentences(" ".join(pieces[start:]))[:MAX_ANSWER_CHARS]


def judged_passage(soup: Any, anchor: str | None, needles: list[str]) -> tuple[Tag, str, str] | None:
    """(innermost section, answer, kind of place) at the place an index entry links to."""
    el = soup.find(id=anchor) if anchor else b.top_section(soup)
    if el is None:
        return None
    if b.is_section(el):
        return el, b.answer_after(b.own_heading(el) or el, el), "section"
    sec = b.enclosing_section(el)
    if sec is None:
        return None
    dt = el if el.name == "dt" else el.find_parent("dt")
    para = el.find_parent("p")
    target: Tag | None = el
    if dt is None and para is None:
        # An index target before a block: the block it marks.
        nxt = el.find_next_sibling()
        if isinstance(nxt, Tag) and nxt.name == "dl" and nxt.find("dt", recursive=False) is not None:
            dt = nxt.find("dt", recursive=False)
        elif isinstance(nxt, Tag) and nxt.name == "p":
            para, target = nxt, None
        elif isinstance(nxt, Tag) and b.is_section(nxt):
            return nxt, b.answer_after(b.own_heading(nxt) or nxt, nxt), "section"
    if dt is not None:
        return b.enclosing_section(dt) or sec, object_description(dt), "description"
    if para is not None:
        return b.enclosing_section(para) or sec, sentence_at(para, target, needles), "sentence"
    # Anything else (a list, a table, a code block): the first paragraph at or after the target.
    return sec, b.answer_after(el, sec), "paragraph after"


def title(soup: Any) -> str:
    """The page's own heading."""
    top = b.top_section(soup)
    heading = b.own_heading(top) if top is not None else None
    return b.clean_heading(heading.get_text()) if heading is not None else ""


def build(root: Path, out: Path) -> dict[str, int]:
    html = root / HTML
    pages: dict[str, Any] = {}
    datas: dict[str, bytes] = {}
    for path in sorted(p for folder in FOLDERS for p in (html / folder).glob("*.html")):
        if path.name == "index.html":
            continue
        data = path.read_bytes()
        if len(data) > MAX_PAGE_BYTES:
            continue
        soup = prepare(b.parse(data))
        # A content page: a page section holding at least two more (overview pages only list others).
        if b.top_section(soup) is None or sum(1 for _ in b.sections(soup)) < 3:
            continue
        name = path.relative_to(html).as_posix()
        pages[name], datas[name] = soup, data
    kept = sorted(pages, key=lambda n: b.stable_order(SALT, n))[:MAX_DOCUMENTS]
    ids = {n: doc_id(n) for n in kept}
    assert len(set(ids.values())) == len(ids)
    # What pgrecall reads of a page: its HTML parser's text, normalized for matching.
    texts = {ids[n]: b.normalize(pgrecall_parse(datas[n], "html").text) for n in kept}
    index = b.parse((html / "genindex-all.html").read_bytes())
    entries = index_entries(index)
    located: list[dict[str, Any]] = []
    into_kept = 0
    for term, sub, href in entries:
        name, _, anchor = href.partition("#")
        if name not in ids:
            continue
        into_kept += 1
        found = judged_passage(pages[name], anchor or None, names(term, sub))
        if found is None:
            continue
        sec, answer, kind = found
        sec_anchor = b.section_anchor(sec)
        if len(b.normalize(answer)) < b.MIN_ANSWER_CHARS or sec_anchor is None:
            continue
        located.append(
            {
                "query_id": b.stable_order(SALT, f"{term}|{sub}|{href}")[:12],
                "doc_id": ids[name],
                "anchor": sec_anchor,
                "section_path": list(b.heading_path(sec)),
                "answer": answer,
                "text": f"What should I know about {query_term(term, sub)}?",
                "kind": kind,
            }
        )
    verifiable = [c for c in located if b.normalize(c["answer"]) in texts[c["doc_id"]]]
    # One query per judged passage (index entries that point at the same place ask the same thing),
    # and one judged passage per question.
    verifiable.sort(key=lambda c: c["query_id"])
    distinct = []
    seen: set[Any] = set()
    for c in verifiable:
        keys = {(c["doc_id"], b.normalize(c["answer"])), c["text"]}
        if not keys & seen:
            seen |= keys
            distinct.append(c)
    distinct = b.unique_answers(distinct, texts)
    chosen = sorted(distinct[:MAX_QUERIES], key=lambda c: c["query_id"])
    queries = [{"_id": c["query_id"], "text": c["text"], "language": "en"} for c in chosen]
    passages = [{k: c[k] for k in ("query_id", "doc_id", "anchor", "section_path", "answer")} for c in chosen]
    documents = [
        b.document_row(ids[n], datas[n], "en", title(pages[n])) for n in sorted(kept, key=lambda n: ids[n])
    ]
    # The package's licence travels with the text taken from it.
    out.mkdir(parents=True, exist_ok=True)
    (out / "COPYRIGHT").write_bytes((root / "usr/share/doc" / PACKAGE / "copyright").read_bytes())
    b.write_collection(out, documents, {ids[n]: datas[n] for n in kept}, queries, passages)
    return {
        "eligible pages": len(pages),
        "documents": len(documents),
        "index entries with one link": len(entries),
        "into kept pages": into_kept,
        "located": len(located),
        "verifiable": len(verifiable),
        "candidates": len(distinct),
        "queries": len(queries),
    } | {
        f"queries judged by {k}": sum(c["kind"] == k for c in chosen)
        for k in sorted({c["kind"] for c in chosen})
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--extracted", type=Path, help="a folder holding python3.11-doc unpacked as python3.11-doc/"
    )
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "python-doc")
    args = parser.parse_args()
    print(build(b.extracted([(PACKAGE, VERSION)], args.extracted) / PACKAGE, args.out))


if __name__ == "__main__":
    main()
