"""Text rules: normalization, the content hash citations pin, snippets, and word-shingle overlap."""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Sequence

from pgrecall.domain.language import CJK_RUN

_WHITESPACE = re.compile(r"\s+")
_WORD = re.compile(r"\w+", re.UNICODE)
SHINGLE = 3
SNIPPET_CHARS = 240
# Accent folding for snippet anchoring: Snowball stems drop diacritics ('häuser' →
# 'haus'), so 'haus' is looked up in a folded copy of the text. One character maps to
# one character, so positions in the copy are positions in the text.
_FOLD = {
    cp: unicodedata.normalize("NFKD", chr(cp))[0]
    for cp in range(0xC0, 0x250)
    if len(unicodedata.normalize("NFKD", chr(cp))) > 1
}
_FOLD.update({ord("ё"): "е", ord("Ё"): "Е"})


def normalize_text(text: str) -> str:
    """Unicode NFC, every whitespace run folded to one space, trimmed."""
    return _WHITESPACE.sub(" ", unicodedata.normalize("NFC", text)).strip()


def content_hash(text: str) -> str:
    """'sha256:' + hex digest of the normalized text (the entry body)."""
    return "sha256:" + hashlib.sha256(normalize_text(text).encode("utf-8")).hexdigest()


def snippet(text: str, limit: int = SNIPPET_CHARS) -> str:
    """The start of a text, cut at a word boundary, with an ellipsis when shortened."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    cut = flat[:limit].rsplit(" ", 1)[0]
    return cut + " …"


def make_snippet(body: str, terms: Sequence[str], limit: int = SNIPPET_CHARS) -> str:
    """~limit characters around the first word that starts with a matched lexeme, else the start."""
    ordered = sorted(terms, key=len, reverse=True)
    words = [re.escape(t) for t in ordered if len(t) >= 2 and not CJK_RUN.fullmatch(t)]
    # A CJK term is a bigram of a run (migration 0017): it starts anywhere inside a word.
    grams = [re.escape(t) for t in ordered if len(t) >= 2 and CJK_RUN.fullmatch(t)]
    if not words and not grams:
        return snippet(body, limit)
    alternatives = ([r"(?<!\w)(?:" + "|".join(words) + ")"] if words else []) + grams
    pattern = re.compile("|".join(alternatives), re.IGNORECASE)
    match = pattern.search(body) or pattern.search(body.translate(_FOLD))
    if match is None or match.start() < limit // 3:
        return snippet(body, limit)
    cut = match.start() - limit // 4
    space = body.rfind(" ", 0, cut)
    # At a space before the match; unspaced text (Chinese, Japanese) has none near: cut inside it.
    start = space + 1 if space >= 0 and cut - space <= limit // 2 else cut
    return "… " + snippet(body[start:], limit)


# A word written as code: snake_case (or a leading underscore), a `::` path, a call `()`. An
# embedding model reads such a word as fragments; the passage that names it is found by its letters.
_CODE_WORD = re.compile(r"[^\W_]_+[^\W_]|(?:^|\W)_+[^\W_]|[^\W_]::[^\W_]|\w\(\)")


def code_words(text: str) -> list[str]:
    """The words of text written as code identifiers, once each in order, quotes and end marks off."""
    found: list[str] = []
    for word in text.split():
        word = word.strip("\"'`“”‘’?!,;:.")
        if _CODE_WORD.search(word) and word not in found:
            found.append(word)
    return found


# A dotted name the lexical index also holds by its parts (migration 0019's pattern, which a test
# keeps equal): parts of two characters or more, so numbers and abbreviations (3.11, e.g.) stay whole.
DOTTED_NAME = re.compile(r"[A-Za-z0-9_]{2,}(?:\.[A-Za-z_][A-Za-z0-9_]+)+")


def split_dotted(text: str) -> str:
    """text with the dots of its dotted names as spaces: the same length, the parts as words."""
    return DOTTED_NAME.sub(lambda m: m.group(0).replace(".", " "), text)


def shingles(text: str, size: int = SHINGLE) -> frozenset[tuple[str, ...]]:
    """Word n-grams of the case-folded, NFC-normalized text (the words themselves when shorter)."""
    words = _WORD.findall(unicodedata.normalize("NFC", text).casefold())
    if len(words) < size:
        return frozenset({tuple(words)}) if words else frozenset()
    return frozenset(tuple(words[i : i + size]) for i in range(len(words) - size + 1))


def jaccard(a: frozenset[tuple[str, ...]], b: frozenset[tuple[str, ...]]) -> float:
    """|a ∩ b| / |a ∪ b| (0 for two empty sets)."""
    if not a and not b:
        return 0.0
    return len(a & b) / len(a | b)


def overlap(text_a: str, text_b: str) -> float:
    """Shingle Jaccard of two texts, 0..1."""
    return jaccard(shingles(text_a), shingles(text_b))
