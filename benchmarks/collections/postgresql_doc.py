"""Build the postgresql-doc collection: PostgreSQL 15's HTML manual, queried through its back-of-book index.

    python benchmarks/collections/postgresql_doc.py [--extracted DIR] [--out DIR]

Downloads postgresql-doc-15 15.20-0+deb12u1 (Debian 12 "bookworm", security updates) with
`apt-get download`, unpacks it with `dpkg-deb -x` (or reads an already unpacked copy given as
as DIR/postgresql-doc-15/ with --extracted) and writes benchmarks/collections/postgresql-doc/.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import docset_build as b
from bs4 import Tag

PACKAGE = "postgresql-doc-15"
VERSION = "15.20-0+deb12u1"
HTML = Path("usr/share/doc/postgresql-doc-15/html")
SALT = "pgrecall-postgresql-doc-1"
MAX_DOCUMENTS = 400
MAX_QUERIES = 400
# Pages whose top element is one of these are tables of contents (book, part, chapter, reference).
PAGE_CLASSES = ("sect1", "refentry")
# What the index appends to a name ("max_connections configuration parameter"); the text names it bare.
TERM_KINDS = (
    " configuration parameter",
    " storage parameter",
    " function",
    " data type",
    " system view",
    " system catalog",
)


def index_entries(soup: Any) -> list[tuple[str, str, str]]:
    """(term, subterm or "", href) for every index entry that points to exactly one place."""
    out: list[tuple[str, str, str]] = []
    for dt in soup.find_all("dt"):
        if dt.find_parent("dd") is not None and dt.find_parent("dd").find_parent("dt") is not None:
            continue
        links = dt.find_all("a", class_="indexterm", recursive=False)
        own = (
            " ".join(dt.find(string=True, recursive=False).split()).rstrip(",")
            if dt.find(string=True)
            else ""
        )
        parent_dd = dt.find_parent("dd")
        if parent_dd is not None:
            outer = parent_dd.find_previous_sibling("dt")
            term = " ".join(outer.find(string=True, recursive=False).split()).rstrip(",") if outer else ""
            sub = own
        else:
            term, sub = own, ""
        if len(links) == 1 and term:
            out.append((term, sub, str(links[0]["href"])))
    return out


def target_section(soup: Any, anchor: str | None) -> tuple[Tag, Tag] | None:
    """(the element the index points at, the innermost section around it)."""
    el = soup.find(id=anchor) if anchor else b.top_section(soup)
    if el is None:
        return None
    sec = el if b.is_section(el) else b.enclosing_section(el)
    if sec is None:
        return None
    return el, sec


def locate_term(sec: Tag, term: str) -> tuple[Tag, str] | None:
    """(innermost section, answer) for the first definition entry, table row or paragraph naming `term`."""
    for name in (term, *(term.removesuffix(s) for s in TERM_KINDS if term.endswith(s))):
        found = _locate(sec, b.normalize(name))
        if found is not None:
            return found
    return None


def _locate(sec: Tag, needle: str) -> tuple[Tag, str] | None:
    if len(needle) < 3:
        return None
    for el in sec.find_all(["dt", "tr", "p"]):
        if needle not in b.normalize(el.get_text()):
            continue
        if el.name == "dt":
            dd = el.find_next_sibling("dd")
            if dd is None:
                continue
            para = dd.find("p")
            body = b.text_of(para) if para is not None else b.text_of(dd)
            text = b.first_sentences(body)
        elif el.name == "tr":
            # Cells apart by a space, as a reader sees the row (matching ignores spaces anyway).
            text = " ".join(el.get_text(" ").split())
        else:
            sentences = [s for s in b.SENTENCE_END.split(b.text_of(el)) if needle in b.normalize(s)]
            text = b.first_sentences(sentences[0]) if sentences else ""
        if len(b.normalize(text)) < b.MIN_ANSWER_CHARS:
            continue
        inner = b.enclosing_section(el)
        return (inner if inner is not None else sec), text[:600]
    return None


def build(root: Path, out: Path) -> dict[str, int]:
    html = root / HTML
    pages: dict[str, Any] = {}
    datas: dict[str, bytes] = {}
    for path in sorted(html.glob("*.html")):
        data = path.read_bytes()
        soup = b.parse(data)
        top = b.top_section(soup)
        if top is None or not any(c in PAGE_CLASSES for c in top.get("class") or []):
            continue
        # Several sections long: the page's own and at least two more.
        if sum(1 for _ in b.sections(soup)) < 3:
            continue
        pages[path.name], datas[path.name] = soup, data
    kept = sorted(pages, key=lambda n: b.stable_order(SALT, n))[:MAX_DOCUMENTS]
    texts = {n: b.page_text(pages[n]) for n in kept}
    candidates: list[dict[str, Any]] = []
    per_section: set[tuple[str, str]] = set()
    index = b.parse((html / "bookindex.html").read_bytes())
    for term, sub, href in index_entries(index):
        name, _, anchor = href.partition("#")
        if name not in texts:
            continue
        found = target_section(pages[name], anchor or None)
        if found is None:
            continue
        el, sec = found
        # The index points at a section; the passage about the term is where the section first
        # names it (a parameter's entry, a function's table row, a sentence), else its opening.
        located = locate_term(sec, term)
        if located is not None:
            sec, answer = located
        else:
            answer = b.answer_after(el if not b.is_section(el) else (b.own_heading(sec) or el), sec)
        sec_anchor = b.section_anchor(sec)
        if not answer or sec_anchor is None:
            continue
        path = b.heading_path(sec)
        candidates.append(
            {
                "query_id": b.stable_order(SALT, f"{term}|{sub}|{href}")[:12],
                "doc_id": name,
                "anchor": sec_anchor,
                "section_path": list(path),
                "answer": answer,
                "term": term,
                "sub": sub,
                "section": (name, sec_anchor),
            }
        )
    # One query per judged passage: index entries that point at the same place ask the same thing.
    candidates.sort(key=lambda c: c["query_id"])
    distinct = []
    for c in candidates:
        key = (c["doc_id"], b.normalize(c["answer"]))
        if key not in per_section:
            per_section.add(key)
            distinct.append(c)
    distinct = b.unique_answers(distinct, texts)
    chosen = sorted(distinct[:MAX_QUERIES], key=lambda c: c["query_id"])
    queries = [
        {
            "_id": c["query_id"],
            "text": f"What should I know about {c['term']} ({c['sub']})?"
            if c["sub"]
            else f"What should I know about {c['term']}?",
            "language": "en",
        }
        for c in chosen
    ]
    passages = [{k: c[k] for k in ("query_id", "doc_id", "anchor", "section_path", "answer")} for c in chosen]
    documents = [
        b.document_row(n, datas[n], "en", b.clean_heading(b.own_heading(b.top_section(pages[n])).get_text()))  # type: ignore[union-attr,arg-type]
        for n in sorted(kept)
    ]
    # The package's licence travels with the text taken from it.
    (out / "COPYRIGHT").parent.mkdir(parents=True, exist_ok=True)
    (out / "COPYRIGHT").write_bytes((root / "usr/share/doc" / PACKAGE / "copyright").read_bytes())
    b.write_collection(out, documents, {n: datas[n] for n in kept}, queries, passages)
    return {
        "eligible pages": len(pages),
        "documents": len(documents),
        "queries": len(queries),
        "candidates": len(distinct),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--extracted", type=Path, help="a folder holding postgresql-doc-15 unpacked as postgresql-doc-15/"
    )
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "postgresql-doc")
    args = parser.parse_args()
    print(build(b.extracted([(PACKAGE, VERSION)], args.extracted) / PACKAGE, args.out))


if __name__ == "__main__":
    main()
