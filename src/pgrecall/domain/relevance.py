"""Relevant enough to cite: a hit judged on its model's scale and against the best hit of each branch.

Cosines are model-specific (the bundled model puts unrelated texts at 0.75–0.83 and related ones
a few hundredths higher; other models spread wider), so no fixed cosine floor works across
models. Three measures, each from 0 to 1:

* absolute: where the hit's cosine lies on its model's scale, from the typical unrelated
  question/passage pair (0) to the typical related one (1), measured once per model
  (embeddings/calibration.py). It says whether the hit is about the question at all.
* vector: how far the hit's cosine stands above the median cosine of the vector branch's
  candidates, as a share of how far the best hit stands above it. In a store larger than the
  branch's 50 candidates the median is a background level for this query; in a small store it
  is the store's own middle.
* lexical: the hit's BM25 score as a share of the best BM25 score of the search.

A hit's relevance is the square root of the higher of vector and lexical (either branch's
strong evidence is enough), capped by absolute: the best hit of a question nothing in the store
answers is still the best of its branch, and only the model's scale shows that it is unrelated.
Without a cosine (embedder down, vector pending) or a measured scale there is no cap. A branch
with fewer than MIN_CANDIDATES_FOR_SCALE candidates has no scale to judge by: each of its hits is 1.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

MIN_CANDIDATES_FOR_SCALE = 8
# build_context's default floor (benchmarks/relevance_floor.py): the highest floor that keeps 80%
# of the cited recall; tuned on Cranfield and on CISI alike (both pick 0.7), each reported on the
# other. Its gain is on questions nothing answers: 0.8-1.7 unrelated citations instead of 9-10.
DEFAULT_CONTEXT_MIN_RELEVANCE = 0.7
# A selection search's default floor: a selection names its topic, so an entry below the floor is
# off the topic, and an answer with none is out of scope. The same measured floor as context's.
DEFAULT_SELECTION_MIN_RELEVANCE = DEFAULT_CONTEXT_MIN_RELEVANCE
# Below this spread between the best and the median cosine the branch's candidates are one flat
# band: there is nothing to tell them apart by.
_FLAT = 1e-6


@dataclass(frozen=True)
class BranchScale:
    """One search's yardsticks: best and median cosine of the vector candidates, best BM25 score."""

    vector_candidates: int = 0
    best_cos: float | None = None
    mid_cos: float | None = None
    best_lex: float | None = None


@dataclass(frozen=True)
class Relevance:
    """A hit's relevance per branch (None: no evidence of that kind), its absolute cap, and overall."""

    vector: float | None
    lexical: float | None
    absolute: float | None = None

    @property
    def overall(self) -> float:
        """sqrt of the higher branch relevance, at most `absolute`; 0 without any evidence.

        The square root softens the relative part: a floor f asks for an absolute similarity
        of f but only f² of the best hit's standing, so the floor mostly says "about the
        question at all" (what only the model's scale can tell) and leaves the order to rank
        what is. Measured: the same off-topic silence at less recall lost (benchmarks/relevance_floor.py).
        """
        best = math.sqrt(max((r for r in (self.vector, self.lexical) if r is not None), default=0.0))
        return best if self.absolute is None else min(best, self.absolute)


def _clamp(value: float) -> float:
    return min(1.0, max(0.0, value))


def vector_relevance(cos: float | None, scale: BranchScale) -> float | None:
    """(cos − median) / (best − median), within 0..1; None without a cosine."""
    if cos is None or scale.best_cos is None:
        return None
    if scale.vector_candidates < MIN_CANDIDATES_FOR_SCALE or scale.mid_cos is None:
        return 1.0
    span = scale.best_cos - scale.mid_cos
    if span <= _FLAT:
        return 1.0
    return _clamp((cos - scale.mid_cos) / span)


def lexical_relevance(score: float | None, scale: BranchScale) -> float | None:
    """score / best score, within 0..1; None without a lexical score."""
    if score is None or scale.best_lex is None:
        return None
    if scale.best_lex <= 0:
        return 1.0
    return _clamp(score / scale.best_lex)


def relevance(
    cos: float | None, lexical_score: float | None, scale: BranchScale, absolute: float | None = None
) -> Relevance:
    """Both branch relevances of one hit, with its absolute similarity on the model's scale."""
    return Relevance(vector_relevance(cos, scale), lexical_relevance(lexical_score, scale), absolute)
