"""Build two BEIR collections from Debian's package descriptions (DDTP Translation files, bookworm).

Each Debian package has a one-line synopsis and a long description, both written by its maintainer,
and translators render both into other languages. The synopsis is a short query a person would type;
the package's own long description is the document that answers it (one relevant document per query:
a known-item judgement made by the people who wrote both, not by us).

- debian-en: English synopses over English long descriptions (QUERIES queries, DOCS documents).
- debian-mixed: German and French synopses, no language given, over a store that mixes German and French
  long descriptions with English ones of other packages (each package appears once, in one language).
- debian-es: the same with Spanish (a collection kept out of all tuning).
- debian-ja, debian-zh, debian-ko (--cjk): Japanese, Simplified Chinese or Korean synopses over a store
  of that language's long descriptions among English ones of other packages (lexical search of
  unspaced text). Lengths and openings are counted in characters there, and wrapped lines of Japanese
  and Chinese are joined without a space, as the text was written.

Packages are picked by a hash of their name (deterministic); descriptions shorter than MIN_WORDS, opening
like another package's (boilerplate of -dev/-doc siblings) or with a synopsis used by another package are
left out, so each query has exactly one right answer. Input: the Translation-{en,de,fr,es} files of
http://deb.debian.org/debian/dists/bookworm/main/i18n/ (xz or bz2), downloaded beforehand
(Translation-{ja,zh_CN,ko} with --cjk).

Run: python benchmarks/collections/debian_descriptions.py --translations DIR --out data/
"""

from __future__ import annotations

import argparse
import bz2
import hashlib
import json
import lzma
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

MIN_WORDS = 25
OPENING_WORDS = 12
EN_DOCS, EN_QUERIES = 3000, 300
MIXED_PER_LANGUAGE, MIXED_QUERIES_PER_LANGUAGE, MIXED_ENGLISH = 600, 150, 2400
# CJK: characters, not words (a 25-word English description is 50-80 Han characters).
CJK_MIN_CHARS, CJK_OPENING_CHARS, CJK_MIN_SYNOPSIS_CHARS = 60, 40, 4
CJK_DOCS, CJK_QUERIES, CJK_ENGLISH = 300, 150, 1200
CJK_FILES = {"ja": "ja", "zh": "zh_CN", "ko": "ko"}


def _open(directory: Path, lang: str) -> Iterator[str]:
    for suffix, opener in ((".xz", lzma.open), (".bz2", bz2.open), ("", open)):
        path = directory / f"Translation-{lang}{suffix}"
        if path.exists() and path.stat().st_size:
            with opener(path, "rt", encoding="utf-8") as f:
                yield from f
            return
    raise SystemExit(f"no Translation-{lang}(.xz|.bz2) in {directory}")


def _is_cjk(char: str) -> bool:
    return "\u3040" <= char <= "\u30ff" or "\u3400" <= char <= "\u9fff" or "\uff00" <= char <= "\uffef"


def _join(lines: list[str], unspaced: bool) -> str:
    """Wrapped lines as one text; in unspaced scripts a line break between two characters is no space."""
    text = ""
    for line in lines:
        glue = "" if unspaced and text and line and _is_cjk(text[-1]) and _is_cjk(line[0]) else " "
        text = f"{text}{glue}{line}" if text else line
    return " ".join(text.split())


def read_translation(directory: Path, lang: str, unspaced: bool = False) -> dict[str, tuple[str, str]]:
    """Package → (synopsis, long description) in `lang`."""
    out: dict[str, tuple[str, str]] = {}
    package, synopsis, body = None, "", []  # type: ignore[var-annotated]
    for line in [*_open(directory, lang), "\n"]:
        if line.startswith("Package: "):
            package = line[9:].strip()
        elif line.startswith(f"Description-{lang}: "):
            synopsis, body = line.split(": ", 1)[1].strip(), []
        elif line.startswith(" ") and package:
            text = line.strip()
            body.append("" if text == "." else text)
        elif not line.strip() and package:
            long_text = _join(body, unspaced)
            if synopsis and long_text:
                out[package] = (synopsis, long_text)
            package, synopsis, body = None, "", []
    return out


def usable(descriptions: dict[str, tuple[str, str]]) -> dict[str, tuple[str, str]]:
    """Packages with a long description of MIN_WORDS+ words and a synopsis and description of their own."""
    # Siblings (lib, -dev, -doc) share their description but for a last sentence: compare openings.
    openings = Counter(_opening(body) for _, body in descriptions.values())
    synopses = Counter(syn.lower() for syn, _ in descriptions.values())
    return {
        p: (s, b)
        for p, (s, b) in descriptions.items()
        if len(b.split()) >= MIN_WORDS
        and openings[_opening(b)] == 1
        and synopses[s.lower()] == 1
        and len(s.split()) >= 2
    }


def usable_cjk(descriptions: dict[str, tuple[str, str]], iso: str) -> dict[str, tuple[str, str]]:
    """As `usable`, counted in characters, and only texts written in `iso`'s script."""
    from pgrecall.domain.language import unstemmable_script

    openings = Counter(body[:CJK_OPENING_CHARS] for _, body in descriptions.values())
    synopses = Counter(syn.lower() for syn, _ in descriptions.values())
    return {
        p: (s, b)
        for p, (s, b) in descriptions.items()
        if len(b) >= CJK_MIN_CHARS
        and openings[b[:CJK_OPENING_CHARS]] == 1
        and synopses[s.lower()] == 1
        and len(s) >= CJK_MIN_SYNOPSIS_CHARS
        and unstemmable_script(s) == iso
        and unstemmable_script(b) == iso
    }


def _opening(body: str) -> str:
    return " ".join(body.lower().split()[:OPENING_WORDS])


def ranked(packages: set[str], salt: str) -> list[str]:
    """Packages in a fixed pseudo-random order."""
    return sorted(packages, key=lambda p: hashlib.sha256(f"{salt}:{p}".encode()).hexdigest())


Texts = dict[str, tuple[str, str]]  # id → (language, text)


def write_beir(out: Path, docs: Texts, queries: Texts, qrels: dict[str, str]) -> None:
    """corpus.jsonl, queries.jsonl (each record with its language), qrels/test.tsv."""
    (out / "qrels").mkdir(parents=True, exist_ok=True)
    with (out / "corpus.jsonl").open("w", encoding="utf-8") as f:
        for doc_id, (lang, text) in docs.items():
            record = {"_id": doc_id, "title": "", "text": text, "language": lang}
            f.write(json.dumps(record, ensure_ascii=False) + "\n")
    with (out / "queries.jsonl").open("w", encoding="utf-8") as f:
        for qid, (lang, text) in queries.items():
            f.write(json.dumps({"_id": qid, "text": text, "language": lang}, ensure_ascii=False) + "\n")
    with (out / "qrels" / "test.tsv").open("w", encoding="utf-8") as f:
        f.write("query-id\tcorpus-id\tscore\n")
        for qid, doc_id in qrels.items():
            f.write(f"{qid}\t{doc_id}\t1\n")


def build_english(en: dict[str, tuple[str, str]], out: Path) -> None:
    """debian-en."""
    picked = ranked(set(en), "debian-en")[:EN_DOCS]
    docs = {p: ("en", en[p][1]) for p in picked}
    queries = {f"q-{p}": ("en", en[p][0]) for p in picked[:EN_QUERIES]}
    write_beir(out, docs, queries, {f"q-{p}": p for p in picked[:EN_QUERIES]})


def build_mixed(
    en: dict[str, tuple[str, str]], other: dict[str, dict[str, tuple[str, str]]], out: Path, salt: str
) -> None:
    """A mixed store: each package once, in one of `other`'s languages or in English."""
    taken: set[str] = set()
    docs: Texts = {}
    queries: Texts = {}
    qrels: dict[str, str] = {}
    for lang, descriptions in other.items():
        picked = [p for p in ranked(set(descriptions) & set(en), f"{salt}-{lang}") if p not in taken]
        picked = picked[:MIXED_PER_LANGUAGE]
        taken.update(picked)
        for i, p in enumerate(picked):
            docs[f"{lang}-{p}"] = (lang, descriptions[p][1])
            if i < MIXED_QUERIES_PER_LANGUAGE:
                queries[f"q-{lang}-{p}"] = (lang, descriptions[p][0])
                qrels[f"q-{lang}-{p}"] = f"{lang}-{p}"
    english = [p for p in ranked(set(en), f"{out.name}-en") if p not in taken][:MIXED_ENGLISH]
    docs.update({f"en-{p}": ("en", en[p][1]) for p in english})
    write_beir(out, docs, queries, qrels)


def build_cjk(
    en: dict[str, tuple[str, str]], iso: str, descriptions: dict[str, tuple[str, str]], out: Path
) -> None:
    """debian-{iso}: CJK_DOCS packages in `iso` (CJK_QUERIES of them queried) among CJK_ENGLISH English ones.

    The English packages are debian-en's first ones (their vectors are cached from its runs).
    """
    picked = ranked(set(descriptions) & set(en), f"debian-{iso}")[:CJK_DOCS]
    docs: Texts = {f"{iso}-{p}": (iso, descriptions[p][1]) for p in picked}
    queries: Texts = {f"q-{iso}-{p}": (iso, descriptions[p][0]) for p in picked[:CJK_QUERIES]}
    english = [p for p in ranked(set(en), "debian-en") if p not in set(picked)][:CJK_ENGLISH]
    docs.update({f"en-{p}": ("en", en[p][1]) for p in english})
    write_beir(out, docs, queries, {f"q-{iso}-{p}": f"{iso}-{p}" for p in picked[:CJK_QUERIES]})


def main() -> None:
    """Read the Translation files and write both collections."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--translations", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--cjk", action="store_true", help="build debian-ja, debian-zh and debian-ko only")
    args = parser.parse_args()
    en = usable(read_translation(args.translations, "en"))
    if args.cjk:
        counts = {}
        for iso, name in CJK_FILES.items():
            cjk = usable_cjk(read_translation(args.translations, name, unspaced=iso != "ko"), iso)
            build_cjk(en, iso, cjk, args.out / f"debian-{iso}")
            counts[iso] = len(cjk)
        print(counts)
        return
    other = {lang: usable(read_translation(args.translations, lang)) for lang in ("de", "fr", "es")}
    build_english(en, args.out / "debian-en")
    build_mixed(en, {k: other[k] for k in ("de", "fr")}, args.out / "debian-mixed", "debian")
    build_mixed(en, {"es": other["es"]}, args.out / "debian-es", "debian-es")
    print({"en": len(en), **{k: len(v) for k, v in other.items()}})


if __name__ == "__main__":
    main()
