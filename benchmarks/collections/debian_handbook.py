"""Build the debian-handbook collection: the Debian Administrator's Handbook in five languages.

    python benchmarks/collections/debian_handbook.py [--extracted DIR] [--out DIR]

Downloads debian-handbook 11.20220922 (Debian 12 "bookworm", main) with `apt-get download`, unpacks
it with `dpkg-deb -x` (or reads an already unpacked copy given as --extracted) and writes
benchmarks/collections/debian-handbook/. See the README there for what is kept and why.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import docset_build as b

PACKAGE = "debian-handbook"
VERSION = "11.20220922"
HTML = Path("usr/share/doc/debian-handbook/html")
LANGUAGES = {"en-US": "en", "de-DE": "de", "fr-FR": "fr", "es-ES": "es", "ja-JP": "ja"}
SALT = "pgrecall-debian-handbook-1"
# A page goes to a translation only when this share of its paragraphs is translated (the
# translations lag the English text; untranslated paragraphs stay in English).
MIN_TRANSLATED = 0.7
MIN_HEADING_CHARS = 6  # normalized: "Usage", "Overview" say too little to be a known item
MAX_QUERIES = 500
TEMPLATES = {
    "en": "What should I know about {h}?",
    "de": "Was sollte ich über {h} wissen?",
    "fr": "Que faut-il savoir sur {h} ?",
    "es": "¿Qué hay que saber sobre {h}?",
    "ja": "{h}について教えてください。",
}


def paragraphs(soup: Any) -> list[str]:
    """Normalized running-text paragraphs of a page, in order."""
    return [b.normalize(b.text_of(p)) for p in soup.find_all(b.is_paragraph)]


def translated_share(english: list[str], other: list[str]) -> float:
    """The share of the English page's paragraphs (long enough to tell) that the translation changed."""
    pairs = [(e, o) for e, o in zip(english, other, strict=False) if len(e) >= b.MIN_ANSWER_CHARS]
    if not pairs:
        return 0.0
    return sum(e != o for e, o in pairs) / len(pairs)


def build(root: Path, out: Path) -> dict[str, int]:
    html = root / HTML
    english_pages = sorted(p.name for p in (html / "en-US").glob("*.html"))
    documents: list[dict[str, Any]] = []
    sources: dict[str, bytes] = {}
    texts: dict[str, str] = {}
    candidates: list[dict[str, Any]] = []
    placed = dict.fromkeys(LANGUAGES, 0)
    for name in english_pages:
        en_data = (html / "en-US" / name).read_bytes()
        en_soup = b.parse(en_data)
        top = b.top_section(en_soup)
        en_sections = {s.anchor: s for s in b.sections(en_soup)}
        # Section pages only: the book's, chapters' and appendices' pages are tables of contents.
        # A page without subsections stays as a document; only subsections give queries.
        if top is None or "section" not in (top.get("class") or []):
            continue
        en_paras = paragraphs(en_soup)
        eligible = ["en-US"]
        soups = {"en-US": en_soup}
        datas = {"en-US": en_data}
        for folder in LANGUAGES:
            if folder == "en-US":
                continue
            data = (html / folder / name).read_bytes()
            soup = b.parse(data)
            if translated_share(en_paras, paragraphs(soup)) >= MIN_TRANSLATED:
                eligible.append(folder)
                soups[folder], datas[folder] = soup, data
        # The language with the fewest pages so far, so that the rarely complete translations
        # (Japanese, French) still get pages; ties broken by a hash.
        folder = min(eligible, key=lambda f: (placed[f], b.stable_order(SALT, f"{name}:{f}")))
        placed[folder] += 1
        language = LANGUAGES[folder]
        doc_id = f"{folder}/{name}"
        soup = soups[folder]
        title = b.clean_heading(b.own_heading(b.top_section(soup)).get_text())  # type: ignore[union-attr,arg-type]
        documents.append(b.document_row(doc_id, datas[folder], language, title))
        sources[doc_id] = datas[folder]
        texts[doc_id] = b.page_text(soup)
        for sec in b.sections(soup):
            en = en_sections.get(sec.anchor)
            if sec.level < 2 or not sec.answer or en is None:
                continue
            heading = sec.path[-1]
            if len(b.normalize(heading)) < MIN_HEADING_CHARS:
                continue
            # A translated page can still hold an untranslated section: its query would not be
            # in the page's language.
            if language != "en" and (
                heading == en.path[-1] or b.normalize(sec.answer) == b.normalize(en.answer)
            ):
                continue
            topic = heading
            if (len(heading.split()) < 3 and language != "ja") or (
                language == "ja" and len(b.normalize(heading)) < 8
            ):
                # "Installing" alone names no known item; the reader would say what it is part of.
                topic = f"{heading} ({sec.path[-2]})"
            candidates.append(
                {
                    "query_id": f"{language}:{sec.anchor}",
                    "topic": topic,
                    "doc_id": doc_id,
                    "anchor": sec.anchor,
                    "section_path": list(sec.path),
                    "answer": sec.answer,
                    "language": language,
                    "heading": heading,
                }
            )
    # A heading that two judged sections share has no single right answer.
    seen: dict[str, int] = {}
    for c in candidates:
        seen[b.normalize(c["heading"])] = seen.get(b.normalize(c["heading"]), 0) + 1
    candidates = [c for c in candidates if seen[b.normalize(c["heading"])] == 1]
    candidates = b.unique_answers(candidates, texts)
    candidates.sort(key=lambda c: b.stable_order(SALT, c["query_id"]))
    chosen = sorted(candidates[:MAX_QUERIES], key=lambda c: c["query_id"])
    queries = [
        {
            "_id": c["query_id"],
            "text": TEMPLATES[c["language"]].format(h=c["topic"]),
            "language": c["language"],
        }
        for c in chosen
    ]
    passages = [{k: c[k] for k in ("query_id", "doc_id", "anchor", "section_path", "answer")} for c in chosen]
    documents.sort(key=lambda d: d["_id"])
    # The package's licence travels with the text taken from it.
    (out / "COPYRIGHT").parent.mkdir(parents=True, exist_ok=True)
    (out / "COPYRIGHT").write_bytes((root / "usr/share/doc" / PACKAGE / "copyright").read_bytes())
    b.write_collection(out, documents, sources, queries, passages)
    return {"documents": len(documents), "queries": len(queries), "candidates": len(candidates)}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--extracted", type=Path, help="an unpacked debian-handbook package (dpkg-deb -x)")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "debian-handbook")
    args = parser.parse_args()
    print(build(b.extracted(PACKAGE, VERSION, args.extracted), args.out))


if __name__ == "__main__":
    main()
