"""Text overlap for near-duplicate detection: Jaccard over word 3-shingles."""

from __future__ import annotations

import re
import unicodedata

_WORD = re.compile(r"\w+", re.UNICODE)
SHINGLE = 3


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
