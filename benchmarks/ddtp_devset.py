"""A second language-detection dev set: Debian's package descriptions in de, fr, es and en (DDTP).

Short texts are synopses of ≤ 12 words, medium ones the first 20–40 words of long descriptions (a
length drawn per package with a seed), both with at least 20 letters. A text also found in another
language's file (an untranslated synopsis) or twice in one language is left out. Packages go to the
'tune' or 'report' half by a hash of their name, so one package's texts never sit in both halves;
each language and bucket is then sampled with a seed. Input: the bookworm `main` Translation-{en,de,
fr,es} files (xz or bz2) of http://deb.debian.org/debian/dists/bookworm/main/i18n/, downloaded
beforehand into a cache directory outside the repository (sha256 in benchmarks/collections/README.md;
Translation-es.bz2: b093780b45057500d70ffaa61aaf2ec4ccb7cca2f7af7a678e79e0a5f49ab81f). Nothing of them is
committed: the descriptions are Debian archive metadata, each under its package's licence and the
translations under the DDTP's terms; they serve here as test data only.

Run: python benchmarks/ddtp_devset.py --translations DIR --half tune --out /tmp/ddtp-tune.jsonl
"""

from __future__ import annotations

import argparse
import hashlib
import random
import sys
from collections import Counter, defaultdict
from pathlib import Path

from pgrecall.evaluation.detection_devset import LONG, MIN_LETTERS, SHORT, DevText, letter_count, save_jsonl
from pgrecall.evaluation.detection_devset import word_count as words_in

sys.path.insert(0, str(Path(__file__).resolve().parent / "collections"))
from debian_descriptions import read_translation

LANGUAGES = ("de", "en", "es", "fr")
HALVES = ("tune", "report")
MAX_SHORT_WORDS, MEDIUM_WORDS = 12, (20, 40)
SEED = 20261127


def half_of(package: str) -> str:
    """'tune' or 'report' from a stable hash of the package name."""
    return HALVES[hashlib.sha256(f"ddtp:{package}".encode()).digest()[0] & 1]


def _medium(package: str, body: str) -> str | None:
    words = body.split()
    if len(words) < MEDIUM_WORDS[0]:
        return None
    length = random.Random(f"{SEED}:{package}").randint(*MEDIUM_WORDS)  # noqa: S311 - a reproducible cut
    return " ".join(words[:length])


def _key(text: str) -> str:
    # Siblings (lib, -dev, -doc) share a description cut at different lengths: compare openings.
    return " ".join(text.lower().split()[: MEDIUM_WORDS[0]])


def texts_by_language(directory: Path) -> dict[tuple[str, str], dict[str, str]]:
    """(lang, bucket) → {text: package}, untranslated and repeated texts left out."""
    found: dict[tuple[str, str], dict[str, str]] = defaultdict(dict)
    seen: Counter[str] = Counter()
    for lang in LANGUAGES:
        for package, (synopsis, body) in sorted(read_translation(directory, lang).items()):
            candidates = [(SHORT, synopsis)] if 1 <= words_in(synopsis) <= MAX_SHORT_WORDS else []
            medium = _medium(package, body)
            if medium is not None:
                candidates.append((LONG, medium))
            for bucket, text in candidates:
                text = " ".join(text.split())
                seen[_key(text)] += 1
                if letter_count(text) >= MIN_LETTERS:
                    found[(lang, bucket)].setdefault(text, package)
    # A text written once in one language only: neither copied untranslated nor shared by siblings.
    return {key: {t: p for t, p in texts.items() if seen[_key(t)] == 1} for key, texts in found.items()}


def build(directory: Path, *, half: str | None, per_language: int = 500, seed: int = SEED) -> list[DevText]:
    """At most `per_language` texts per language and bucket of `half` (None: both halves)."""
    out: list[DevText] = []
    for (lang, bucket), texts in sorted(texts_by_language(directory).items()):
        ordered = sorted(t for t, p in texts.items() if half is None or half_of(p) == half)
        rng = random.Random(f"{seed}:{lang}:{bucket}")  # noqa: S311 - a reproducible sample, not a secret
        picked = ordered if len(ordered) <= per_language else rng.sample(ordered, per_language)
        out.extend(DevText(t, lang, bucket, texts[t]) for t in sorted(picked))
    return out


def main() -> None:
    """Build one half and write it as JSONL (text, lang, bucket, source = package)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--translations", type=Path, required=True, help="directory of Translation-* files")
    parser.add_argument("--half", choices=[*HALVES, "all"], default="tune")
    parser.add_argument("--per-language", type=int, default=500)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    texts = build(
        args.translations, half=None if args.half == "all" else args.half, per_language=args.per_language
    )
    save_jsonl(texts, args.out)
    counts = Counter((t.lang, t.bucket) for t in texts)
    print(" ".join(f"{lang}/{bucket} {n}" for (lang, bucket), n in sorted(counts.items())), file=sys.stderr)


if __name__ == "__main__":
    main()
