"""First stage of language detection: script, alphabet and function-word evidence, no models.

It either decides alone (a script only one language writes, a text that names no stemmable language)
or names a few candidate languages for lingua. Sharpness is the point: every language it names may
cost lingua ~25–45 MB of models for the rest of the process.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from dataclasses import dataclass
from functools import cache

from pgrecall.detection.stopwords import (
    DEVANAGARI_FUNCTION_WORDS,
    HEBREW_WORDS,
    NEPALI_STOPWORDS,
    YIDDISH_WORDS,
)

# Scripts only one stemmable language writes (and no look-alike we meet): decided without lingua.
SINGLE_SCRIPT = {"GREEK": "el", "ARMENIAN": "hy", "TAMIL": "ta"}

# Cyrillic alphabets (lowercase). A language stays a candidate only if it writes every Cyrillic letter
# of the text; languages with letters of their own must also show one of them.
CYRILLIC_ALPHABETS = {
    "ru": "абвгдеёжзийклмнопрстуфхцчшщъыьэюя",
    "uk": "абвгґдеєжзиіїйклмнопрстуфхцчшщьюя",
    "be": "абвгдеёжзійклмнопрстуўфхцчшыьэюя",
    "bg": "абвгдежзийклмнопрстуфхцчшщъьюяѝ",
    "sr": "абвгдђежзијклљмнњопрстћуфхцчџш",
    "mk": "абвгдѓежзѕијклљмнњопрстќуфхцчџш",
    "kk": "абвгдеёжзийклмнопрстуфхцчшщъыьэюяәғқңөұүһі",
    "mn": "абвгдеёжзийклмнопрстуфхцчшщъыьэюяөү",
}
CYRILLIC_MARKERS = {"uk": "ґєії", "be": "ўі", "sr": "ђћјљњџ", "mk": "ѓќѕјљњџ", "kk": "әғқңөұүһі", "mn": "өү"}
# Alphabets holding all of Russian's: a Russian text fits them, so they must show a letter of their own.
# Serbian and Macedonian lack й, ы, ь, я, ю, щ…: a text that fits their alphabet is evidence enough.
RUSSIAN_SUPERSETS = frozenset(
    lang
    for lang, alphabet in CYRILLIC_ALPHABETS.items()
    if lang != "ru" and set(CYRILLIC_ALPHABETS["ru"]) <= set(alphabet)
)
# Letters Russian writes and Ukrainian/Bulgarian never do: their absence keeps those two in the running.
RUSSIAN_ONLY = set("ыэёъ")

# Arabic script: Arabic proper against Persian, Urdu, Uyghur, Kurdish, Pashto (none stemmable).
ARABIC_ONLY = set("ةىيكأإ")  # teh marbuta, alef maksura, Arabic yeh and kaf, hamza alefs
ARABIC_OTHERS = set("پچژگکیٹڈڑںےہھېۆۇۈۋەڕڵێ")
YIDDISH_LETTERS = set("װױײ")

_WORD = re.compile(r"[^\W\d_]+")


@dataclass(frozen=True)
class FirstStage:
    """What the first stage found: a decision (`decided`, possibly None) or `candidates` for lingua.

    `latin` marks a Latin-script text, whose candidates lingua's low-accuracy mode names.
    """

    decided: str | None = None
    confidence: float | None = None
    candidates: tuple[str, ...] = ()
    latin: bool = False


NONE = FirstStage()


def script_of(ch: str) -> str:
    """Unicode script of a letter, by the first word of its name ('LATIN', 'CYRILLIC', 'CJK'…)."""
    try:
        return unicodedata.name(ch).split(" ", 1)[0]
    except ValueError:
        return "UNKNOWN"


def letters_by_script(text: str) -> Counter[str]:
    """Letter counts per script."""
    return Counter(script_of(ch) for ch in text if unicodedata.category(ch).startswith("L"))


# Scripts written together in Chinese, Japanese and Korean text (and the width forms used in it).
_CJK_FAMILY = frozenset({"CJK", "HIRAGANA", "KATAKANA", "HANGUL", "FULLWIDTH", "HALFWIDTH"})


def main_script(text: str) -> str | None:
    """The script most of `text`'s letters are written in (Chinese, Japanese and Korean as one,
    'CJK'); None without letters."""
    counts = Counter("CJK" if s in _CJK_FAMILY else s for s in letters_by_script(text).elements())
    return counts.most_common(1)[0][0] if counts else None


def _cyrillic(text: str) -> FirstStage:
    letters = {ch for ch in text.lower() if script_of(ch) == "CYRILLIC" and ch.isalpha()}
    kept: list[str] = []
    for lang, alphabet in CYRILLIC_ALPHABETS.items():
        if not letters <= set(alphabet):
            continue
        marked = lang not in RUSSIAN_SUPERSETS or bool(letters & set(CYRILLIC_MARKERS[lang]))
        if marked or (lang == "uk" and not letters & RUSSIAN_ONLY):
            kept.append(lang)
    if len(kept) == 1:
        return FirstStage(kept[0], 1.0, ())
    return FirstStage(None, None, tuple(kept))


def _arabic(text: str) -> FirstStage:
    own = sum(1 for ch in text if ch in ARABIC_ONLY)
    others = sum(1 for ch in text if ch in ARABIC_OTHERS)
    if own and not others:
        return FirstStage("ar", 1.0, ())
    if own > 3 * others:
        return FirstStage("ar", own / (own + others), ())
    return NONE


def _hebrew(text: str) -> FirstStage:
    words = text.split()
    yi = sum(1 for w in words if w in set(YIDDISH_WORDS.split())) + sum(
        1 for ch in text if ch in YIDDISH_LETTERS
    )
    he = sum(1 for w in words if w in set(HEBREW_WORDS.split()))
    # Pointed alef (אַ אָ) is Yiddish spelling; Hebrew prose is unpointed.
    yi += text.count("\u05b7") + text.count("\u05b8")
    if yi > he:
        return FirstStage("yi", yi / (yi + he), ())
    return NONE


@cache
def _devanagari_words() -> dict[str, frozenset[str]]:
    out: dict[str, set[str]] = {}
    lists = dict(DEVANAGARI_FUNCTION_WORDS, ne=NEPALI_STOPWORDS)
    for lang, words in lists.items():
        for word in words.split():
            out.setdefault(word, set()).add(lang)
    return {w: frozenset(ls) for w, ls in out.items()}


def _devanagari(text: str) -> FirstStage:
    index = _devanagari_words()
    scores: dict[str, float] = {}
    for raw in text.split():
        langs = index.get(raw.strip(".,;:!?()।"), frozenset())
        for lang in langs:
            scores[lang] = scores.get(lang, 0.0) + 1.0 / len(langs)
    ranked = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))
    if ranked and ranked[0][0] == "ne" and ranked[0][1] >= 1.5 * (ranked[1][1] if len(ranked) > 1 else 0.0):
        return FirstStage("ne", ranked[0][1] / sum(scores.values()), ())
    # Hindi against Marathi is lingua's to judge; Nepali has no lingua model.
    return FirstStage(None, None, ("hi", "mr"))


def first_stage(text: str) -> FirstStage:
    """Decide from the script alone, or name the candidate languages for the second stage.

    Latin-script texts are only marked as such: lingua's low-accuracy mode names their candidates
    (it did better than function-word, letter and trigram rules on the tuning half).
    """
    scripts = letters_by_script(text)
    if not scripts:
        return NONE
    script, _count = scripts.most_common(1)[0]
    if script in SINGLE_SCRIPT:
        return FirstStage(SINGLE_SCRIPT[script], _count / sum(scripts.values()), ())
    if script == "LATIN":
        return FirstStage(latin=True)
    if script == "CYRILLIC":
        return _cyrillic(text)
    if script == "ARABIC":
        return _arabic(text)
    if script == "HEBREW":
        return _hebrew(text)
    if script == "DEVANAGARI":
        return _devanagari(text)
    return NONE
