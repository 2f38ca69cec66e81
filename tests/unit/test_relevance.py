"""Relevance relative to the best hit of each branch, capped on the model's scale (domain/relevance.py)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

import pytest

from pgrecall.domain.relevance import BranchScale, relevance
from pgrecall.embeddings.calibration import BUNDLED, PAIRS, ModelScale, ScaleCache

SCALE = BranchScale(vector_candidates=50, best_cos=0.90, mid_cos=0.80, best_lex=12.0)


def test_each_branch_relative_to_its_best() -> None:
    best = relevance(0.90, 12.0, SCALE)
    assert best.vector == 1.0 and best.lexical == 1.0 and best.overall == 1.0
    middle = relevance(0.85, 3.0, SCALE)
    assert middle.vector == pytest.approx(0.5) and middle.lexical == pytest.approx(0.25)
    assert middle.overall == pytest.approx(0.5**0.5)  # the relative part counts with its square root


def test_below_the_median_is_zero_and_a_branch_that_missed_is_none() -> None:
    low = relevance(0.70, None, SCALE)
    assert low.vector == 0.0 and low.lexical is None and low.overall == 0.0
    words_only = relevance(None, 6.0, SCALE)
    assert words_only.vector is None and words_only.overall == pytest.approx(0.5**0.5)
    assert relevance(None, None, SCALE).overall == 0.0


def test_no_scale_no_judgement() -> None:
    # Too few candidates, or all at one cosine: nothing to tell them apart by.
    few = BranchScale(vector_candidates=3, best_cos=0.9, mid_cos=0.8, best_lex=None)
    assert relevance(0.81, None, few).vector == 1.0
    flat = BranchScale(vector_candidates=50, best_cos=0.8, mid_cos=0.8, best_lex=0.0)
    assert relevance(0.8, 0.0, flat).overall == 1.0


def test_absolute_similarity_caps_the_branch_relevance() -> None:
    scale = BranchScale(vector_candidates=50, best_cos=0.82, mid_cos=0.80, best_lex=10.0)
    judged = relevance(0.82, 10.0, scale, absolute=0.2)
    assert (judged.vector, judged.lexical) == (1.0, 1.0) and judged.overall == 0.2
    assert relevance(0.82, None, scale, absolute=None).overall == 1.0
    assert relevance(None, 5.0, scale, absolute=None).overall == pytest.approx(0.5**0.5)
    assert relevance(None, 5.0, scale, absolute=0.3).overall == 0.3


def test_model_scale_places_a_cosine_between_unrelated_and_related() -> None:
    scale = ModelScale("m", unrelated=0.70, related=0.90)
    assert scale.absolute(0.70) == 0.0 and scale.absolute(0.90) == 1.0
    assert scale.absolute(0.80) == pytest.approx(0.5)
    assert scale.absolute(0.5) == 0.0 and scale.absolute(0.99) == 1.0
    assert ModelScale("flat", 0.8, 0.8).absolute(0.1) == 1.0


class _Counting:
    """A deterministic embedder: question i and answer i share a direction, others do not."""

    def __init__(self, model: str = "toy:1") -> None:
        self.model, self.dim, self.calls = model, len(PAIRS) + 1, 0

    def _vec(self, index: int, weight: float) -> list[float]:
        v = [0.0] * self.dim
        v[index], v[-1] = weight, (1 - weight**2) ** 0.5
        return v

    def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls += 1
        return [self._vec([q for q, _ in PAIRS].index(t), 0.6) for t in texts]

    def embed_passages(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls += 1
        return [self._vec([a for _, a in PAIRS].index(t), 0.6) for t in texts]


def test_the_scale_is_measured_once_per_model_and_kept_on_disk(tmp_path: Path) -> None:
    toy = _Counting()
    scale = ScaleCache(tmp_path).get(toy)
    assert scale is not None and toy.calls == 2
    # related: 0.36 + 0.64 = 1.0; unrelated: 0.64 (only the shared last axis)
    assert (scale.unrelated, scale.related) == (pytest.approx(0.64), pytest.approx(1.0))
    again = ScaleCache(tmp_path)  # another process with the same home
    assert again.get(toy) == scale and toy.calls == 2
    other = _Counting("toy:2")
    assert again.get(other) is not None and other.calls == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["toy_1.json", "toy_2.json"]


def test_a_failing_embedder_leaves_the_search_without_a_scale(tmp_path: Path) -> None:
    class Down(_Counting):
        def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
            raise RuntimeError("worker gone")

    assert ScaleCache(tmp_path).get(Down()) is None
    assert list(tmp_path.iterdir()) == []


def test_a_search_measures_an_unknown_model_at_once_within_a_bound(tmp_path: Path) -> None:
    toy = _Counting("toy:first")
    assert ScaleCache(tmp_path).get(toy) is not None and toy.calls == 2  # the first search has it

    release = threading.Event()

    class Stuck(_Counting):
        def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
            release.wait()  # a passage lane busy with someone's long text
            return super().embed_queries(texts)

    stuck = Stuck("toy:stuck")
    cache = ScaleCache(tmp_path, timeout_s=0.05)
    try:
        assert cache.get(stuck) is None  # past the bound: this search fuses by rrf
        assert cache.get(stuck) is None and stuck.calls == 0  # not asked again at once
    finally:
        release.set()
    assert not (tmp_path / "toy_stuck.json").exists()  # a late answer is used by no one


def test_the_bundled_models_scales_are_constants(tmp_path: Path) -> None:
    for model, scale in BUNDLED.items():
        toy = _Counting(model)
        assert ScaleCache(tmp_path).get(toy) == scale and toy.calls == 0
    assert list(tmp_path.iterdir()) == []
