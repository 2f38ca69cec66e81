"""Build debian-XX-sentences: sentence questions over package descriptions in one language (DDTP, bookworm).

A collection of a kind no fusion rule was tuned on (issue 37, point 2): a new language (Italian, stemmed
by PostgreSQL's `italian` configuration) and a new question style, a whole sentence instead of a
synopsis. Every Debian package's long description opens with a sentence saying what the package is or
does; that sentence is the question, and the document is the package's synopsis followed by the rest of
its description (the sentence itself removed). The judgement is known-item and not ours: the maintainer
(and the DDTP translator) wrote both about the same package. One relevant document per query.

Packages are the usable Italian ones of `debian_descriptions.usable` (long description of 25+ words,
an opening and a synopsis of their own), whose first sentence has FIRST_WORDS words and is no other
package's, and whose remaining text has REST_WORDS+ words; picked by a hash of their name.

debian-pt-sentences is the same in Brazilian Portuguese (PostgreSQL's `portuguese` configuration), a
second collection of this kind built after a later rule was frozen (docs/fusion-normalisation.md);
debian-ru-sentences, in Russian, a third, built after the weight base 1.2 was committed.

Input: Translation-it, Translation-pt_BR or Translation-ru of http://deb.debian.org/debian/dists/bookworm/main/i18n/
(uncompressed, xz or bz2).
Run: python benchmarks/collections/debian_sentences.py --translations DIR --out benchmarks/collections
     [--language it|pt_BR|ru]
"""

from __future__ import annotations

import argparse
import re
from collections import Counter
from pathlib import Path

from debian_descriptions import Texts, ranked, read_translation, usable, write_beir

DOCS, QUERIES = 1000, 150
FIRST_WORDS = (8, 40)  # a sentence question, not a keyword list nor a paragraph
REST_WORDS = 15
# A sentence ends at . ! ? before a capital letter (or an opening quote or parenthesis and one); the
# language's "e.g." and "etc." end no sentence: Italian "es.", "ecc.", Portuguese "ex.", "etc.".
_ENDS = {
    "it": re.compile(r"(?<![Ee]s\.)(?<!ecc\.)(?<=[.!?])\s+(?=[\"«(]?[A-ZÀ-Ý])"),
    "pt_BR": re.compile(r"(?<![Ee]x\.)(?<!etc\.)(?<=[.!?])\s+(?=[\"«“(]?[A-ZÀ-Ý])"),
    # Russian "т. е.", "т. д.", "напр.", "см." (that is, and so on, for example, see) end none.
    "ru": re.compile(
        r"(?<!\bт\.)(?<!\bе\.)(?<!\bд\.)(?<!напр\.)(?<!\bсм\.)(?<=[.!?])\s+(?=[\"«“(]?[А-ЯЁA-Z])"
    ),
}
# Translation file suffix → the ISO code of ids, records and the collection's name.
ISO = {"it": "it", "pt_BR": "pt", "ru": "ru"}


def first_sentence(text: str, language: str = "it") -> tuple[str, str] | None:
    """(the first sentence, the rest), or None when the text is one sentence."""
    parts = _ENDS[language].split(text, maxsplit=1)
    return (parts[0].strip(), parts[1].strip()) if len(parts) == 2 else None


def build(descriptions: dict[str, tuple[str, str]], out: Path, language: str = "it") -> int:
    """Write the collection; return how many packages were usable."""
    iso = ISO[language]
    name = f"debian-{iso}-sentences"
    split = {p: first_sentence(body, language) for p, (_, body) in descriptions.items()}
    firsts = Counter(s[0].lower() for s in split.values() if s)
    fit = {
        p: (descriptions[p][0], s[0], s[1])
        for p, s in split.items()
        if s
        and FIRST_WORDS[0] <= len(s[0].split()) <= FIRST_WORDS[1]
        and len(s[1].split()) >= REST_WORDS
        and firsts[s[0].lower()] == 1
    }
    picked = ranked(set(fit), name)[:DOCS]
    docs: Texts = {f"{iso}-{p}": (iso, f"{fit[p][0]}. {fit[p][2]}") for p in picked}
    queries: Texts = {f"q-{iso}-{p}": (iso, fit[p][1]) for p in picked[:QUERIES]}
    write_beir(out / name, docs, queries, {f"q-{iso}-{p}": f"{iso}-{p}" for p in picked[:QUERIES]})
    return len(fit)


def main() -> None:
    """Read the translation and write the collection."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--translations", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--language", choices=sorted(ISO), default="it")
    args = parser.parse_args()
    descriptions = usable(read_translation(args.translations, args.language))
    print({"usable": build(descriptions, args.out, args.language)})


if __name__ == "__main__":
    main()
