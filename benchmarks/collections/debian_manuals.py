"""Build the debian-manuals collection: two Debian manuals in five languages, one language a page.

    python benchmarks/collections/debian_manuals.py [--extracted DIR] [--out DIR] [--questions SET]

Downloads (Debian 12 "bookworm", main) debian-handbook 11.20220922 and debian-reference-en, -de,
-fr, -es, -ja 2.100 with `apt-get download`, unpacks them with `dpkg-deb -x` (or reads them unpacked
as DIR/<package>/ with --extracted) and writes benchmarks/collections/debian-manuals/. See the
README there for what is kept and why.

--questions headings (the default) writes the documents and the heading questions; --questions
translated writes, beside them, the translated-answer question set of the sections they judge.
"""

from __future__ import annotations

import argparse
import json
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import docset_build as b

HANDBOOK = ("debian-handbook", "11.20220922")
REFERENCE_VERSION = "2.100"
LANGUAGES = ("en", "de", "fr", "es", "ja")
HANDBOOK_FOLDERS = {"en": "en-US", "de": "de-DE", "fr": "fr-FR", "es": "es-ES", "ja": "ja-JP"}
SALT = "pgrecall-debian-handbook-1"
# A page goes to a translation only when this share of its paragraphs is translated (the
# translations lag the English text; untranslated paragraphs stay in English).
MIN_TRANSLATED = 0.7
MIN_HEADING_CHARS = 6  # normalized: "Usage", "Overview" say too little to be a known item
MAX_QUERIES = 500
# Translated questions of English pages are in German: the most complete translation of their judged
# sections (75 of the 107 have a German answer that is not the English one, 48 a French one).
TRANSLATED_FROM_ENGLISH = "de"
# A translated answer sharing this share of its words with the original is an untranslated
# paragraph (or mostly commands and file names): the question would match by its words.
MAX_SHARED_WORDS = 0.5
TEMPLATES = {
    "en": "What should I know about {h}?",
    "de": "Was sollte ich über {h} wissen?",
    "fr": "Que faut-il savoir sur {h} ?",
    "es": "¿Qué hay que saber sobre {h}?",
    "ja": "{h}について教えてください。",
}


@dataclass(frozen=True)
class Page:
    """One page of a manual: its file in each language."""

    manual: str  # "debian-handbook", "debian-reference" …: the first part of its documents' ids
    files: dict[str, Path]  # language → file
    in_folder: bool = False  # the language is the file's folder (the handbook's en-US/…)
    by_language: bool = False  # every language's file has the same name: the id names the language

    def doc_id(self, language: str) -> str:
        """documents/-relative path of the page in that language."""
        file = self.files[language]
        if self.in_folder:
            return f"{self.manual}/{file.parent.name}/{file.name}"
        if self.by_language:
            return f"{self.manual}/{language}/{file.name}"
        return f"{self.manual}/{file.name}"


@dataclass(frozen=True)
class ManualSet:
    """What one collection of multilingual manuals is built from."""

    pages: Callable[[Path], list[Page]]  # the extracted packages' root → the pages, in order
    languages: tuple[str, ...]  # English first
    packages: tuple[str, ...]  # whose copyright files travel with the collection
    salt: str
    templates: dict[str, str]  # heading question per language


def manuals_pages(root: Path) -> list[Page]:
    return [*reference_pages(root), *handbook_pages(root)]


def reference_package(language: str) -> str:
    """The Debian package of Debian Reference in that language."""
    return f"debian-reference-{language}"


def handbook_pages(root: Path) -> list[Page]:
    """Section pages of the handbook (the book's, chapters' and appendices' pages are tables of
    contents); a page without subsections stays as a document, only subsections give queries."""
    html = root / HANDBOOK[0] / "usr/share/doc/debian-handbook/html"
    pages = []
    for en in sorted((html / "en-US").glob("*.html")):
        top = b.top_section(b.parse(en.read_bytes()))
        if top is None or "section" not in (top.get("class") or []):
            continue
        files = {lang: html / folder / en.name for lang, folder in HANDBOOK_FOLDERS.items()}
        pages.append(Page("debian-handbook", files, in_folder=True))
    return pages


def reference_pages(root: Path) -> list[Page]:
    """The twelve chapters of Debian Reference (one HTML file each, the longest 390 kB)."""
    pages = []
    for number in range(1, 13):
        files = {
            lang: root / reference_package(lang) / f"usr/share/debian-reference/ch{number:02d}.{lang}.html"
            for lang in LANGUAGES
        }
        pages.append(Page("debian-reference", files))
    return pages


def paragraphs(soup: Any) -> list[str]:
    """Normalized running-text paragraphs of a page, in order."""
    return [b.normalize(b.text_of(p)) for p in soup.find_all(b.is_paragraph)]


def translated_share(english: list[str], other: list[str]) -> float:
    """The share of the English page's paragraphs (long enough to tell) that the translation changed."""
    pairs = [(e, o) for e, o in zip(english, other, strict=False) if len(e) >= b.MIN_ANSWER_CHARS]
    if not pairs:
        return 0.0
    return sum(e != o for e, o in pairs) / len(pairs)


def build(root: Path, out: Path, manuals: ManualSet) -> dict[str, int]:
    documents: list[dict[str, Any]] = []
    sources: dict[str, bytes] = {}
    texts: dict[str, str] = {}
    candidates: list[dict[str, Any]] = []
    placed = dict.fromkeys(manuals.languages, 0)
    for page in manuals.pages(root):
        en_data = page.files["en"].read_bytes()
        en_soup = b.parse(en_data)
        en_sections = {s.anchor: s for s in b.sections(en_soup)}
        en_paras = paragraphs(en_soup)
        eligible = ["en"]
        soups = {"en": en_soup}
        datas = {"en": en_data}
        for lang in (f for f in manuals.languages[1:] if f in page.files):
            data = page.files[lang].read_bytes()
            soup = b.parse(data)
            if translated_share(en_paras, paragraphs(soup)) >= MIN_TRANSLATED:
                eligible.append(lang)
                soups[lang], datas[lang] = soup, data
        # The language with the fewest pages so far, so that the rarely complete translations
        # (Japanese, French) still get pages; ties broken by a hash.
        language = min(
            eligible, key=lambda f: (placed[f], b.stable_order(manuals.salt, f"{page.files[f].name}:{f}"))
        )
        placed[language] += 1
        doc_id = page.doc_id(language)
        soup = soups[language]
        title = b.clean_heading(b.own_heading(b.top_section(soup)).get_text())  # type: ignore[union-attr,arg-type]
        documents.append(b.document_row(doc_id, datas[language], language, title))
        sources[doc_id] = datas[language]
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
                    "query_id": f"{page.manual.removeprefix('debian-')}:{language}:{sec.anchor}",
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
    candidates.sort(key=lambda c: b.stable_order(manuals.salt, c["query_id"]))
    chosen = sorted(candidates[:MAX_QUERIES], key=lambda c: c["query_id"])
    queries = [
        {
            "_id": c["query_id"],
            "text": manuals.templates[c["language"]].format(h=c["topic"]),
            "language": c["language"],
        }
        for c in chosen
    ]
    passages = [{k: c[k] for k in ("query_id", "doc_id", "anchor", "section_path", "answer")} for c in chosen]
    documents.sort(key=lambda d: d["_id"])
    # The package's licence travels with the text taken from it.
    out.mkdir(parents=True, exist_ok=True)
    for package in manuals.packages:
        copyright_file = root / package / "usr/share/doc" / package / "copyright"
        (out / f"COPYRIGHT.{package}").write_bytes(copyright_file.read_bytes())
    b.write_collection(out, documents, sources, queries, passages)
    return {"documents": len(documents), "queries": len(queries), "candidates": len(candidates)} | {
        f"pages {lang}": n for lang, n in placed.items()
    }


def shared_words(text: str, original: str) -> float:
    """The share of the text's words (NFKC, casefolded) that also occur in the original."""
    words = re.findall(r"\w+", unicodedata.normalize("NFKC", text).casefold())
    seen = set(re.findall(r"\w+", unicodedata.normalize("NFKC", original).casefold()))
    return sum(w in seen for w in words) / len(words) if words else 1.0


def translated(root: Path, out: Path, manuals: ManualSet) -> dict[str, int]:
    """Questions that are a judged section's answer in another edition of its page.

    For each section that qrels/passages.jsonl judges (page in language X), the same section (same
    anchor: the translations are built from one DocBook source, so every page's list of section
    anchors is the same in each language) of the page's edition in Y (English; German for an
    English page) gives its answer by the same rule (`answer_after`). The question is that text: the
    meaning of the judged paragraph in other words, in another language; the judgements stay those
    of the heading set. Skipped: no such anchor in Y, a Y answer that is not translated (equal, or
    sharing ≥ MAX_SHARED_WORDS of its words), shorter than MIN_ANSWER_CHARS, or found verbatim in a
    page of the collection (that page would hold the same paragraph).
    """
    queries_file, _, passages_file = b.question_files()
    queries = [json.loads(line) for line in (out / queries_file).open(encoding="utf-8")]
    languages = {q["_id"]: q["language"] for q in queries}
    judged = [json.loads(line) for line in (out / passages_file).open(encoding="utf-8")]
    pages = manuals.pages(root)
    editions = {page.doc_id(lang): page for page in pages for lang in page.files}
    texts = {
        line["_id"]: b.page_text(b.parse((out / "documents" / line["_id"]).read_bytes()))
        for line in map(json.loads, (out / "documents.jsonl").open(encoding="utf-8"))
    }
    sections: dict[tuple[str, str], dict[str, b.Section]] = {}
    skipped = dict.fromkeys(("no anchor", "untranslated", "short", "in a page"), 0)
    chosen = []
    for passage in sorted(judged, key=lambda p: b.stable_order(manuals.salt, p["query_id"])):
        page, source = editions[passage["doc_id"]], languages[passage["query_id"]]
        target = TRANSLATED_FROM_ENGLISH if source == "en" else "en"
        for lang in (source, target):
            if (page.doc_id(lang), lang) not in sections:
                found = list(b.sections(b.parse(page.files[lang].read_bytes())))
                sections[(page.doc_id(lang), lang)] = {s.anchor: s for s in found}
        if list(sections[(page.doc_id(source), source)]) != list(sections[(page.doc_id(target), target)]):
            raise SystemExit(f"{passage['doc_id']}: the {target} edition has other section anchors")
        other = sections[(page.doc_id(target), target)].get(passage["anchor"])
        answer = other.answer if other is not None else ""
        if other is None:
            skipped["no anchor"] += 1
        elif shared_words(answer, passage["answer"]) >= MAX_SHARED_WORDS:
            skipped["untranslated"] += 1
        elif len(b.normalize(answer)) < b.MIN_ANSWER_CHARS:
            skipped["short"] += 1
        elif any(b.normalize(answer) in text for text in texts.values()):
            skipped["in a page"] += 1
        else:
            chosen.append((passage, {"_id": passage["query_id"], "text": answer, "language": target}))
    chosen = sorted(chosen[:MAX_QUERIES], key=lambda c: c[0]["query_id"])
    b.write_questions(out, [q for _, q in chosen], [p for p, _ in chosen], "translated")
    pairs: dict[str, int] = {}
    for passage, query in chosen:
        pair = f"queries {languages[passage['query_id']]}→{query['language']}"
        pairs[pair] = pairs.get(pair, 0) + 1
    counts = {"judged": len(judged), "queries": len(chosen)}
    return counts | {f"skipped: {k}": n for k, n in skipped.items()} | pairs


MANUALS = ManualSet(
    pages=manuals_pages,
    languages=LANGUAGES,
    packages=(HANDBOOK[0], *(reference_package(lang) for lang in LANGUAGES)),
    salt=SALT,
    templates=TEMPLATES,
)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--extracted", type=Path, help="a folder holding each package unpacked as <package>/")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "debian-manuals")
    parser.add_argument(
        "--questions",
        choices=("headings", "translated"),
        default="headings",
        help="headings: the documents and their heading questions; translated: the translated-answer "
        "questions of the sections the heading set judges (needs the collection built)",
    )
    args = parser.parse_args()
    packages = [HANDBOOK, *((reference_package(lang), REFERENCE_VERSION) for lang in LANGUAGES)]
    root = b.extracted(packages, args.extracted)
    print(
        build(root, args.out, MANUALS)
        if args.questions == "headings"
        else translated(root, args.out, MANUALS)
    )


if __name__ == "__main__":
    main()
