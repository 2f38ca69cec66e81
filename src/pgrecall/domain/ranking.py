"""Plain-Python retrieval steps after the SQL ranking: pins, dedup, diversity (MMR), context packing."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, Literal, TypeVar

from pgrecall.domain.text import jaccard, shingles
from pgrecall.errors import InvalidInputError

# How hybrid search merges its branches (store/search_sql.py): convex combination or Reciprocal Rank Fusion.
Fusion = Literal["convex", "rrf"]
FUSIONS: tuple[Fusion, ...] = ("convex", "rrf")


def check_fusion(fusion: str) -> Fusion:
    """One of convex, rrf."""
    for known in FUSIONS:
        if fusion == known:
            return known
    raise InvalidInputError("fusion", f"must be one of {', '.join(FUSIONS)}, got {fusion!r}")


# More than 80% word 3-shingle Jaccard overlap = the same entry for a reader: keep the higher-ranked.
NEAR_DUPLICATE_JACCARD = 0.8
# MMR trade-off: 1.0 = pure relevance, 0.0 = pure novelty. 0.7 keeps the top hit and mostly
# reorders the tail, the usual choice for QA context (Carbonell & Goldstein 1998 used 0.7 too).
MMR_LAMBDA = 0.7
TOKENS_PER_WORD = 1.33
CHARS_PER_TOKEN = 4.0

T = TypeVar("T")


@dataclass(frozen=True)
class Candidate(Generic[T]):
    """A ranked item with what the post-processing needs; `item` is carried through untouched."""

    key: str  # entry id
    content_hash: str
    body: str
    score: float
    item: T


def estimate_tokens(text: str) -> int:
    """Token estimate: max(words × 1.33, characters / 4), so unspaced scripts are not undercounted."""
    words = len(text.split())
    return math.ceil(max(words * TOKENS_PER_WORD, len(text) / CHARS_PER_TOKEN))


def order_pins(pinned_hashes: Sequence[str]) -> list[str]:
    """Pinned hashes in the given order with repeats removed."""
    seen: dict[str, None] = {}
    for value in pinned_hashes:
        seen.setdefault(value, None)
    return list(seen)


def dedup(
    candidates: Sequence[Candidate[T]], threshold: float = NEAR_DUPLICATE_JACCARD
) -> list[Candidate[T]]:
    """Drop exact (same content_hash) and near duplicates (shingle Jaccard > threshold), keeping order."""
    return collapse(candidates, threshold)[0]


def collapse(
    candidates: Sequence[Candidate[T]], threshold: float = NEAR_DUPLICATE_JACCARD
) -> tuple[list[Candidate[T]], list[tuple[str, str]]]:
    """dedup(), and for each dropped candidate (its key, the key of the kept one it collapsed into)."""
    kept: list[Candidate[T]] = []
    kept_shingles: list[frozenset[tuple[str, ...]]] = []
    by_hash: dict[str, str] = {}
    dropped: list[tuple[str, str]] = []
    for cand in candidates:
        if cand.content_hash in by_hash:
            dropped.append((cand.key, by_hash[cand.content_hash]))
            continue
        own = shingles(cand.body)
        into = next(
            (k.key for k, other in zip(kept, kept_shingles, strict=True) if jaccard(own, other) > threshold),
            None,
        )
        if into is not None:
            dropped.append((cand.key, into))
            continue
        kept.append(cand)
        kept_shingles.append(own)
        by_hash[cand.content_hash] = cand.key
    return kept, dropped


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(y * y for y in b))
    return dot / (na * nb) if na and nb else 0.0


def mmr(
    candidates: Sequence[Candidate[T]],
    vectors: dict[str, Sequence[float]],
    k: int,
    lam: float = MMR_LAMBDA,
) -> list[Candidate[T]]:
    """Maximal Marginal Relevance over stored vectors.

    Relevance is the fused score min-max scaled to [0, 1] (it exists in every mode, even
    lexical-only); redundancy is the highest cosine to an already chosen entry (0 for an
    entry without a vector of the active model). Ties keep the original order.
    """
    if not candidates:
        return []
    scores = [c.score for c in candidates]
    low, high = min(scores), max(scores)
    span = high - low

    def relevance(c: Candidate[T]) -> float:
        return (c.score - low) / span if span > 0 else 1.0

    remaining = list(candidates)
    chosen: list[Candidate[T]] = []
    while remaining and len(chosen) < k:
        best_index, best_value = 0, -math.inf
        for index, cand in enumerate(remaining):
            vec = vectors.get(cand.key)
            redundancy = 0.0
            if vec is not None:
                redundancy = max(
                    (_cosine(vec, vectors[c.key]) for c in chosen if c.key in vectors), default=0.0
                )
            value = lam * relevance(cand) - (1 - lam) * redundancy
            if value > best_value:
                best_index, best_value = index, value
        chosen.append(remaining.pop(best_index))
    return chosen


@dataclass(frozen=True)
class Packed(Generic[T]):
    """The outcome of fitting ranked blocks into a token budget."""

    included: list[tuple[Candidate[T], str, int]]  # candidate, rendered block, its tokens
    dropped: list[tuple[Candidate[T], int, str]]  # candidate, its tokens, why
    total_tokens: int


def pack(
    candidates: Sequence[Candidate[T]],
    budget: int,
    render: Callable[[int, Candidate[T]], str],
    separator: str = "\n\n",
) -> Packed[T]:
    """Whole blocks, best first, while they fit; a block that does not fit is dropped, never cut.

    The budget is checked against the estimate of the whole joined context, so the returned
    `total_tokens` (= estimate_tokens(context)) never exceeds it. Later, smaller blocks may
    still fit after a large one is dropped; included blocks keep their rank order. A single
    entry larger than the whole budget is always dropped (reason 'larger than token_budget'):
    fetch it with get_entry if it is needed.
    """
    included: list[tuple[Candidate[T], str, int]] = []
    dropped: list[tuple[Candidate[T], int, str]] = []
    context = ""
    used = 0
    for cand in candidates:
        block = render(len(included) + 1, cand)
        alone = estimate_tokens(block)
        if alone > budget:
            dropped.append((cand, alone, "larger than token_budget"))
            continue
        trial = f"{context}{separator}{block}" if context else block
        total = estimate_tokens(trial)
        if total > budget:
            dropped.append((cand, alone, "budget exhausted"))
            continue
        included.append((cand, block, total - used))
        context, used = trial, total
    return Packed(included, dropped, used)
