"""Build two BEIR collections from Debian's package descriptions (DDTP Translation files, bookworm).

Each Debian package has a one-line synopsis and a long description, both written by its maintainer,
and translators render both into other languages. The synopsis is a short query a person would type;
the package's own long description is the document that answers it (one relevant document per query:
a known-item judgement made by the people who wrote both, not by us).

- debian-en: English synopses over English long descriptions (QUERIES queries, DOCS documents).
- debian-mixed: German and French synopses, no language given, over a store that mixes German and French
  long descriptions with English ones of other packages (each package appears once, in one language).
- debian-es: the same with Spanish (a collection kept out of all tuning).

Packages are picked by a hash of their name (deterministic); descriptions shorter than MIN_WORDS, opening
like another package's (boilerplate of -dev/-doc siblings) or with a synopsis used by another package are
left out, so each query has exactly one right answer. Input: the Translation-{en,de,fr,es} files of
http://deb.debian.org/debian/dists/bookworm/main/i18n/ (xz or bz2), downloaded beforehand.

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


def _open(directory: Path, lang: str) -> Iterator[str]:
    for suffix, opener in ((".xz", lzma.open), (".bz2", bz2.open)):
        path = directory / f"Translation-{lang}{suffix}"
        if path.exists() and path.stat().st_size:
            with opener(path, "rt", encoding="utf-8") as f:
                yield from f
            return
    raise SystemExit(f"no Translation-{lang}.xz or .bz2 in {directory}")


def read_translation(directory: Path, lang: str) -> dict[str, tuple[str, str]]:
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
            long_text = " ".join(" ".join(body).split())
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


def main() -> None:
    """Read the Translation files and write both collections."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--translations", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    en = usable(read_translation(args.translations, "en"))
    other = {lang: usable(read_translation(args.translations, lang)) for lang in ("de", "fr", "es")}
    build_english(en, args.out / "debian-en")
    build_mixed(en, {k: other[k] for k in ("de", "fr")}, args.out / "debian-mixed", "debian")
    build_mixed(en, {"es": other["es"]}, args.out / "debian-es", "debian-es")
    print({"en": len(en), **{k: len(v) for k, v in other.items()}})


if __name__ == "__main__":
    main()
