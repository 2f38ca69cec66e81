"""A language-detection development set from the machine's gettext catalogues (or a JSONL file).

Every translated message of /usr/share/locale/<locale>/LC_MESSAGES/*.mo is a short real text in the
locale's language, and its msgid is one in English. Texts are cleaned of format placeholders, markup
and accelerators, deduplicated, split into two length buckets and sampled per language with a seed.
Catalogues are split into two halves by a hash of their domain (file name), so that one half tunes
and the other reports: the same program's messages never sit in both halves.
"""

from __future__ import annotations

import gettext
import hashlib
import json
import random
import re
import unicodedata
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

LOCALE_ROOT = Path("/usr/share/locale")
SHORT = "short"  # ≤ 12 words
LONG = "long"  # 20–40 words
BUCKETS = (SHORT, LONG)
HALVES = ("tune", "report")

# Lists of country, language and currency names are proper nouns, not text in the catalogue's language.
SKIPPED_DOMAINS = re.compile(r"^iso_")
# Locale language parts that name the same language as a code of ISO_TO_CONFIG.
LANGUAGE_ALIASES = {"no": "nb", "mo": "ro"}

_PLACEHOLDERS = [
    re.compile(
        r"%(?:\d+\$)?(?:\([^)]*\))?[-+ #0'I]*(?:\d+|\*)?(?:\.(?:\d+|\*))?(?:hh|h|ll|l|L|q|j|z|t)?[a-zA-Z]"
    ),
    re.compile(r"%<PRI[a-zA-Z0-9]+>"),
    re.compile(r"\$\{[^}]*\}|\$[A-Z_][A-Z0-9_]*"),
    re.compile(r"\{[^{}\s]*\}"),
    re.compile(r"<[^<>]{0,200}>"),  # markup
    re.compile(r"&[a-zA-Z]+;|&#\d+;"),  # entities
    re.compile(r"\b(?:https?|ftp|file)://\S+"),
    re.compile(r"(?<!\w)--?[a-zA-Z][\w-]*(?:=\S*)?"),  # command-line options
    re.compile(r"(?<!\w)[~/.]?(?:[\w.-]+/)+[\w.-]*"),  # paths
    re.compile(r"\S+@\S+\.\w+"),  # e-mail addresses
]
_ACCELERATOR = re.compile(r"(?<![\w&_])[_&](?=\w)")
_SPACES = re.compile(r"\s+")


@dataclass(frozen=True)
class DevText:
    """One text with its language (a locale language part such as 'de', 'pt', 'zh', 'sr')."""

    text: str
    lang: str
    bucket: str
    source: str = ""


def word_count(text: str) -> int:
    """Whitespace-separated tokens that hold at least one letter."""
    return sum(1 for tok in text.split() if any(ch.isalpha() for ch in tok))


def bucket_of(text: str) -> str | None:
    """SHORT for ≤ 12 words, LONG for 20–40, None otherwise."""
    n = word_count(text)
    if 1 <= n <= 12:
        return SHORT
    if 20 <= n <= 40:
        return LONG
    return None


def clean(text: str) -> str:
    """Strip placeholders, markup, accelerators and line breaks; collapse spaces."""
    text = text.replace("\\n", " ").replace("\\t", " ")
    for pattern in _PLACEHOLDERS:
        text = pattern.sub(" ", text)
    text = _ACCELERATOR.sub("", text)
    text = text.replace("%%", "%")
    return _SPACES.sub(" ", text).strip(" \t\n:;,-*'\"|[]()")


def locale_language(locale: str) -> str | None:
    """'pt_BR' → 'pt', 'sr@latin' → 'sr', 'no' → 'nb'; None for pseudo-English locales like en@quot."""
    base, _, variant = locale.partition("@")
    lang = base.split("_")[0].split(".")[0].lower()
    if not lang or lang in {"c", "posix"} or (lang == "en" and variant):
        return None
    return LANGUAGE_ALIASES.get(lang, lang)


def half_of(domain: str) -> str:
    """'tune' or 'report' from a stable hash of the catalogue's domain."""
    digest = hashlib.sha256(domain.encode()).digest()
    return HALVES[digest[0] & 1]


def _messages(path: Path) -> Iterator[tuple[str, str]]:
    try:
        with path.open("rb") as fp:
            catalog = gettext.GNUTranslations(fp)._catalog  # type: ignore[attr-defined]
    except (OSError, UnicodeDecodeError, ValueError, LookupError):
        return
    for key, value in catalog.items():
        msgid = key[0] if isinstance(key, tuple) else key
        if not isinstance(msgid, str) or not isinstance(value, str) or not msgid:
            continue
        yield msgid.rpartition("\x04")[2], value


def letter_count(text: str) -> int:
    """Unicode letters, counted as the detectors count them."""
    return sum(1 for ch in text if unicodedata.category(ch).startswith("L"))


# Both detectors answer 'simple' below 20 letters by rule; such texts would only dilute the comparison.
MIN_LETTERS = 20


def _usable(text: str) -> bool:
    return letter_count(text) >= MIN_LETTERS and bucket_of(text) is not None


def collect(root: Path = LOCALE_ROOT, half: str | None = None) -> dict[tuple[str, str], dict[str, str]]:
    """All usable cleaned texts: (lang, bucket) → {text: source domain}, English from the msgids."""
    found: dict[tuple[str, str], dict[str, str]] = defaultdict(dict)
    for mo in sorted(root.glob("*/LC_MESSAGES/*.mo")):
        domain = mo.stem
        if SKIPPED_DOMAINS.match(domain) or (half is not None and half_of(domain) != half):
            continue
        lang = locale_language(mo.parent.parent.name)
        if lang is None:
            continue
        for msgid, msgstr in _messages(mo):
            original, translated = clean(msgid), clean(msgstr)
            if _usable(original):
                found[("en", bucket_of(original) or "")].setdefault(original, domain)
            if lang != "en" and translated != original and _usable(translated):
                found[(lang, bucket_of(translated) or "")].setdefault(translated, domain)
    return found


def build(
    root: Path = LOCALE_ROOT, *, half: str | None = None, per_language: int = 200, seed: int = 20240611
) -> list[DevText]:
    """A deterministic sample: at most `per_language` texts per language and bucket."""
    out: list[DevText] = []
    for (lang, bucket), texts in sorted(collect(root, half).items()):
        ordered = sorted(texts)
        rng = random.Random(f"{seed}:{lang}:{bucket}")  # noqa: S311 - a reproducible sample, not a secret
        picked = ordered if len(ordered) <= per_language else rng.sample(ordered, per_language)
        out.extend(DevText(t, lang, bucket, texts[t]) for t in sorted(picked))
    return out


def load_jsonl(path: Path) -> list[DevText]:
    """Texts from a JSONL file of {"text": ..., "lang": ...}; texts outside both buckets are kept as SHORT."""
    out: list[DevText] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        row = json.loads(line)
        if (
            not isinstance(row, dict)
            or not isinstance(row.get("text"), str)
            or not isinstance(row.get("lang"), str)
        ):
            raise ValueError(f"{path}:{number}: expected an object with string fields text and lang")
        text, lang = str(row["text"]), str(row["lang"])
        out.append(DevText(text, LANGUAGE_ALIASES.get(lang, lang), bucket_of(text) or SHORT, path.name))
    return out


def save_jsonl(texts: Iterable[DevText], path: Path) -> None:
    """Write texts as JSONL (text, lang, bucket, source)."""
    with path.open("w", encoding="utf-8") as fp:
        for t in texts:
            row = {"text": t.text, "lang": t.lang, "bucket": t.bucket, "source": t.source}
            fp.write(json.dumps(row, ensure_ascii=False) + "\n")
