"""A dependency that hangs or is unreachable: callers get a bounded, honest answer that reveals nothing.

The embedding endpoint here is a loopback server that accepts connections and never answers (or a
port nobody listens on). Every bound is checked by counting connection attempts, never by the clock.
"""

from __future__ import annotations

import json
import shutil
import socket
import tempfile
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from pgrecall.app import App
from pgrecall.config import Settings
from pgrecall.embeddings.base import EmbeddingError
from pgrecall.mcp.runtime import Runtime
from pgrecall.mcp.server import create_server
from pgrecall.worker import lifecycle
from pgrecall.worker.client import WorkerClient, WorkerEmbedder
from tests.helpers.hanging_server import SlowWorker, hanging_server
from tests.helpers.mcp_calls import call

pytestmark = pytest.mark.anyio

TEXT = "The staging database is backed up every night at two."


def _http(settings: Settings, url: str, **extra: Any) -> Settings:
    fields: dict[str, Any] = {
        "embedder": "http",
        "embedding_url": url,
        "embedding_model": "some-embedding-model",
        "embedding_dim": 384,
        "embedding_timeout_s": 0.5,
        "embedding_total_timeout_s": 1.2,
        "embedding_retries": 3,
    }
    fields.update(extra)
    return settings.model_copy(update=fields)


async def test_hanging_embedder_write_is_kept_pending_and_search_degrades(settings: Settings) -> None:
    with hanging_server() as server:
        with App(_http(settings, server.url()), restricted=True) as opened:
            async with Client(create_server(Runtime(opened))) as client:
                added = await call(client, "add_entry", text=TEXT, language="en")
                assert added["vector_pending"] is True
                stored = await call(client, "get_entry", id=added["id"])
                assert stored["text"] == TEXT and stored["vector_pending"] is True
                found = await call(client, "search", query="when is the staging database backed up")
        # One attempt per call fits in 1.2 s after a hung 0.5 s one plus backoff: two calls, at most
        # two connections (before the total bound: four per call, the retries of the model probe).
        assert 1 <= server.connections <= 2
    assert found["degraded"] is True
    assert found["degraded_reason"] == "embedder unavailable (timeout): lexical search only"
    assert [hit["id"] for hit in found["hits"]] == [added["id"]]


def _refused_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


@pytest.mark.parametrize("failure", ["refused", "hanging"])
async def test_degraded_reason_reveals_no_endpoint(settings: Settings, failure: str) -> None:
    path = "/internal-embedder-x7q9/v1"
    with hanging_server() as server:
        port = server.port if failure == "hanging" else _refused_port()
        url = f"http://127.0.0.1:{port}{path}"
        with App(_http(settings, url, embedding_retries=0), restricted=True) as opened:
            async with Client(create_server(Runtime(opened))) as client:
                await call(client, "add_entry", text=TEXT, language="en")
                found = await call(client, "search", query="staging database backup")
                context = await call(client, "build_context", query="staging database backup")
    assert found["degraded"] is True
    expected = "timeout" if failure == "hanging" else "connection refused"
    assert found["degraded_reason"] == f"embedder unavailable ({expected}): lexical search only"
    for answer in (found, context):
        shown = json.dumps(answer)
        for secret in ("internal-embedder-x7q9", str(port), "127.0.0.1", "/v1", "http://"):
            assert secret not in shown, (secret, answer.get("degraded_reason"))


def test_worker_embedding_on_a_callers_path_has_a_total_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 70 passages go out in three chunks; each reply takes 0.4 s. A caller's embedder (total 0.6 s)
    # gives up during the second chunk and never sends the third; before the bound every chunk got
    # its own timeout (30 s + 1 ms per character), so a long write could wait minutes for the worker.
    sock_dir = Path(tempfile.mkdtemp(prefix="pgr-", dir="/tmp"))  # a unix socket path must be short
    worker = SlowWorker(str(sock_dir / "w.sock"), delay_s=0.4, dim=4)
    monkeypatch.setattr(lifecycle, "ensure_worker", lambda *args, **kwargs: Path(worker.path))
    try:
        client = WorkerClient(Settings(home=tmp_path / "home"), timeout_s=5.0)
        texts = [f"passage {i}" for i in range(70)]
        bounded = WorkerEmbedder(client, ("fake", 4), total_timeout_s=0.6)
        with pytest.raises(EmbeddingError) as caught:
            bounded.embed_passages(texts)
        assert caught.value.reason == "timeout"
        assert 1 <= worker.requests <= 2
        # The background pass keeps the per-request timeouts: every chunk goes out and comes back.
        before = worker.requests
        assert len(WorkerEmbedder(client, ("fake", 4)).embed_passages(texts)) == 70
        assert worker.requests - before == 3
    finally:
        worker.close()
        shutil.rmtree(sock_dir, ignore_errors=True)


def test_app_bounds_worker_embedding_on_callers_paths_only(settings: Settings) -> None:
    # Not opened: building the App names its embedders without starting a worker.
    app = App(settings.model_copy(update={"models": "worker", "embedding_total_timeout_s": 7.0}))
    caller = getattr(app.embedder, "inner", None)
    assert isinstance(caller, WorkerEmbedder) and caller.total_timeout_s == 7.0
    background = app.background_embedder
    assert isinstance(background, WorkerEmbedder) and background.total_timeout_s is None
