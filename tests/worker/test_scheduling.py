"""How the lanes cut the work: micro-batched queries, round-robin passages, dropped work, many threads."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from pgrecall.config import Settings
from pgrecall.embeddings.base import EmbeddingError
from pgrecall.worker.client import WorkerClient, WorkerEmbedder
from tests.helpers.worker import words


def _wait_for(predicate: object, timeout: float = 60.0) -> bool:
    assert callable(predicate)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return False


def test_waiting_queries_share_one_encode_call(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    # The load is held back so the queries pile up in the query lane meanwhile.
    monkeypatch.setenv("PGRECALL_WORKER_TEST_LOAD_DELAY_S", "6")
    emb = WorkerEmbedder.from_settings(settings, timeout_s=120)
    emb.client.start()
    texts = [f"question number {i}" for i in range(10)]
    with ThreadPoolExecutor(max_workers=10) as pool:
        futures = [pool.submit(emb.embed_queries, [text]) for text in texts]

        # The lane takes what is queued (and waits for the model with it); the rest queue behind.
        def all_in() -> bool:
            pending = emb.client.status()["pending"]
            return bool(pending["queries"] + pending["running_queries"] == 10)

        assert _wait_for(all_in)
        assert emb.client.status()["models"]["embedder"] == "loading"
        vectors = [future.result(timeout=120)[0] for future in futures]
    stats = emb.client.status()["stats"]
    assert stats["query_texts"] == 10
    assert stats["query_batches"] == 2
    # Batched or not, each query gets its own vector.
    assert np.allclose(emb.embed_queries(texts[3:4])[0], vectors[3], atol=1e-5)


def test_passage_requests_take_turns(settings: Settings) -> None:
    emb = WorkerEmbedder.from_settings(settings)
    emb.embed_queries(["warm"])
    order: list[str] = []
    lock = threading.Lock()

    def run(name: str, texts: list[str]) -> None:
        emb.embed_passages(texts)
        with lock:
            order.append(name)

    bulk = threading.Thread(target=run, args=("bulk", [words(150, s) for s in range(8)]))
    bulk.start()
    assert _wait_for(lambda: emb.client.status()["pending"]["running_passages"] >= 1)
    run("single", [words(150, 99)])
    bulk.join(timeout=120)
    assert order == ["single", "bulk"]


def test_a_caller_that_gives_up_stops_the_work(settings: Settings) -> None:
    emb = WorkerEmbedder.from_settings(settings)
    emb.embed_queries(["warm"])
    # Half a second for 30 passages of 150 words: it gives up after the first unit or two.
    impatient = WorkerEmbedder(WorkerClient(settings, timeout_s=0.5), (emb.model, emb.dim), s_per_char=0)
    batch = [words(150, s) for s in range(30)]
    with pytest.raises(EmbeddingError):
        impatient.embed_passages(batch)
    client = emb.client

    def idle() -> bool:
        pending = client.status()["pending"]
        return bool(pending["passages"] == 0 and pending["running_passages"] == 0)

    assert _wait_for(idle)
    assert client.status()["stats"]["passage_texts"] < len(batch)


def test_many_threads_share_one_client(settings: Settings) -> None:
    emb = WorkerEmbedder.from_settings(settings)
    texts = [f"thread {i} asks about {words(5, i)}" for i in range(24)]
    expected = emb.embed_queries(texts)
    with ThreadPoolExecutor(max_workers=8) as pool:
        got = list(pool.map(lambda text: emb.embed_queries([text])[0], texts))
    np.testing.assert_allclose(got, expected, atol=1e-5)


def test_short_passages_of_several_callers_share_one_encode_call(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Held back by the load, eight callers' one-passage requests are all waiting when it ends.
    monkeypatch.setenv("PGRECALL_WORKER_TEST_LOAD_DELAY_S", "6")
    emb = WorkerEmbedder.from_settings(settings, timeout_s=120)
    emb.client.start()
    texts = [f"Observation {i}: the valve on line {i} was replaced." for i in range(8)]
    with ThreadPoolExecutor(max_workers=8) as pool:
        futures = [pool.submit(emb.embed_passages, [text]) for text in texts]

        def all_in() -> bool:
            pending = emb.client.status()["pending"]
            return bool(pending["passages"] + pending["running_passages"] == 8)

        assert _wait_for(all_in)
        vectors = [future.result(timeout=120)[0] for future in futures]
    stats = emb.client.status()["stats"]
    assert stats["passage_texts"] == 8
    assert stats["passage_units"] < 8
    # Grouped or not, each caller gets the vector of its own text.
    assert np.allclose(emb.embed_passages(texts[5:6])[0], vectors[5], atol=1e-5)
