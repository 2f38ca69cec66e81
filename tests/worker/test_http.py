"""The worker's HTTP surface: malformed requests, oversized bodies, unknown routes and bad fields get a
clear 4xx with a JSON error, and the worker stays up."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from pgrecall.config import Settings
from pgrecall.worker import socket_path
from pgrecall.worker.client import WorkerClient
from pgrecall.worker.server import MAX_BODY_BYTES, MAX_TEXTS
from tests.helpers.worker import exchange, http_request

BAD_FIELDS = [
    ("/queries", {}),
    ("/queries", {"texts": "not a list"}),
    ("/queries", {"texts": [1, 2]}),
    ("/queries", {"texts": ["x"] * (MAX_TEXTS + 1)}),
    ("/detect", {"texts": ["x"], "codes": ["english"]}),
    ("/detect", {"texts": ["x"], "codes": ["en"], "thresholds": {"min_letters": True}}),
    ("/detect", {"texts": ["x"], "codes": ["en"], "thresholds": {"min_confidence": 2}}),
    ("/detect", {"texts": ["x"], "codes": ["en"], "thresholds": {"surprise": 1}}),
    ("/warm", {"what": ["everything"]}),
    ("/queries", ["not", "an", "object"]),
]


@pytest.fixture
def worker(settings: Settings) -> tuple[WorkerClient, Path]:
    """A started worker of the temp home and its socket path."""
    client = WorkerClient(settings)
    client.start()
    path = socket_path(settings.home, create=False)
    assert path is not None
    return client, path


def test_bad_requests_get_a_clear_4xx_and_the_worker_stays_up(worker: tuple[WorkerClient, Path]) -> None:
    client, path = worker
    pid = client.status()["pid"]
    for route, payload in BAD_FIELDS:
        reply = exchange(path, http_request("POST", route, payload))
        assert reply is not None and reply[0] == 400 and reply[1]["kind"] == "bad_request", (route, payload)
    malformed = [
        (b"GARBAGE\r\n\r\n", 400),
        (b"POST /queries HTTP/1.1\r\nContent-Length: 5\r\n\r\n{nope", 400),
        (b"POST /queries HTTP/1.1\r\nContent-Length: -3\r\n\r\n", 411),
        (http_request("POST", "/queries", content_length=MAX_BODY_BYTES + 1), 413),
        (http_request("GET", "/exec"), 404),
        (http_request("DELETE", "/status"), 501),
    ]
    for payload, status in malformed:
        reply = exchange(path, payload)
        assert reply is not None and reply[0] == status and reply[1]["ok"] is False, (payload[:40], reply)
    assert client.status()["pid"] == pid


def test_vectors_travel_as_float32_rows_with_their_shape(worker: tuple[WorkerClient, Path]) -> None:
    client, _ = worker
    reply = client.request("/queries", {"texts": ["one", "two"]})
    assert reply.headers["Content-Type"] == "application/octet-stream"
    n, dim = (int(part) for part in reply.headers["X-Shape"].split(","))
    rows = np.frombuffer(reply.content, dtype="<f4").reshape(n, dim)
    assert n == 2 and dim == client.status()["dim"]
    assert np.allclose(np.linalg.norm(rows, axis=1), 1.0, atol=1e-3)
