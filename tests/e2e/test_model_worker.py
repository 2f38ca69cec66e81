"""The shared model worker behind real front ends: the protocol never waits for a model, a killed
worker loses no write, and a search is not queued behind another caller's long passage."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from pgrecall.app import App
from pgrecall.config import Settings
from pgrecall.embeddings.cache import CachedQueryEmbedder
from pgrecall.mcp.runtime import Runtime
from pgrecall.mcp.server import create_server
from pgrecall.services.search import EMBEDDER_LOADING
from pgrecall.worker import lifecycle
from pgrecall.worker.__main__ import TEST_LOAD_DELAY_ENV
from pgrecall.worker.client import WorkerEmbedder
from pgrecall.worker.models import READY
from tests.helpers.mcp_calls import call
from tests.helpers.subprocess_server import server_env
from tests.helpers.worker import long_text, stop

pytestmark = pytest.mark.anyio
OWNER = "default"
BOUND_S = 120  # only so a broken worker cannot hang the suite; never asserted on


@pytest.fixture
def worker_settings(settings: Settings, tmp_path: Path) -> Iterator[Settings]:
    """The test database, with the models in a worker of a private home (stopped at the end)."""
    home = tmp_path / "home"
    home.mkdir()
    chosen = settings.model_copy(update={"models": "worker", "home": home, "worker_idle_s": 1.0})
    yield chosen
    stop(chosen)


def _wait_for(check: object, what: str) -> None:
    deadline = time.monotonic() + BOUND_S
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.05)


async def test_initialize_and_search_answered_while_the_embedder_loads(worker_settings: Settings) -> None:
    env = server_env(worker_settings)
    env[TEST_LOAD_DELAY_ENV] = "600"  # the embedder "loads" for ten minutes: nothing may wait for it
    params = StdioServerParameters(command=sys.executable, args=["-m", "pgrecall", "serve"], env=env)
    with anyio.fail_after(BOUND_S):
        async with Client(params) as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            assert {"add_entry", "search"} <= names
            result = await call(client, "search", query="where are the backups kept")
            assert result["degraded"] and result["degraded_reason"] == EMBEDDER_LOADING
            status = lifecycle.worker_status(worker_settings)
            # The server answered initialize, tools/list and a search while the model was loading.
            assert status is not None and status["models"]["embedder"] == "loading"


def test_killed_worker_keeps_the_write_and_is_restarted(worker_settings: Settings) -> None:
    with App(worker_settings) as opened:
        assert opened.embedder is not None and opened.embedder.embed_passages(["warm"])  # loaded
        before = lifecycle.worker_status(worker_settings)
        assert before is not None
        written: list[object] = []
        writer = threading.Thread(
            target=lambda: written.append(opened.entries.add(OWNER, text=long_text(30_000), language="en"))
        )
        writer.start()

        def embedding_it() -> bool:
            status = lifecycle.worker_status(worker_settings)
            return status is not None and status["pending"]["running_passages"] > 0

        _wait_for(embedding_it, "the worker to embed the long passage")
        os.kill(int(before["pid"]), signal.SIGKILL)
        writer.join(BOUND_S)
        assert not writer.is_alive()
        kept = written[0]
        # Stored, found by id, its vector left for re-embedding: nothing the caller wrote is lost.
        assert kept.vector_pending  # type: ignore[attr-defined]
        assert opened.entries.get(OWNER, kept.entry.id).body == long_text(30_000)  # type: ignore[attr-defined]
        again = opened.entries.add(OWNER, text="The staging database is rebuilt every Monday.", language="en")
        assert not again.vector_pending
        after = lifecycle.worker_status(worker_settings)
        assert after is not None and after["pid"] != before["pid"]


async def test_search_is_not_queued_behind_a_long_passage(worker_settings: Settings) -> None:
    with App(worker_settings, restricted=True) as opened:
        async with Client(create_server(Runtime(opened))) as client:
            # The model loaded first, however slowly: the short entry needs its vector to be found.
            embedder = opened.embedder
            assert isinstance(embedder, CachedQueryEmbedder) and isinstance(embedder.inner, WorkerEmbedder)
            assert await anyio.to_thread.run_sync(embedder.inner.wait_ready, BOUND_S)
            first = await call(client, "add_entry", text="Backups are kept for 30 days in the cold bucket.")
            assert not first["vector_pending"]
            order: list[str] = []

            async def add_long() -> None:
                await call(client, "add_entry", text=long_text(30_000, seed=3), language="en")
                order.append("add")

            async def search_soon() -> None:
                def embedding_it() -> bool:
                    # A lane that took the passage may still wait for the model (when the first add's
                    # vector was left pending): embedding means the unit is running on a loaded model.
                    status = lifecycle.worker_status(worker_settings)
                    return (
                        status is not None
                        and status["models"]["embedder"] == READY
                        and status["pending"]["running_passages"] > 0
                    )

                await anyio.to_thread.run_sync(_wait_for, embedding_it, "the long passage to start")
                result = await call(client, "search", query="how long are backups kept", mode="vector")
                assert not result["degraded"] and result["hits"], result
                order.append("search")

            with anyio.fail_after(BOUND_S):
                async with anyio.create_task_group() as tasks:
                    tasks.start_soon(add_long)
                    tasks.start_soon(search_soon)
            assert order == ["search", "add"]


async def test_a_worker_that_cannot_start_degrades_search_and_keeps_writes(worker_settings: Settings) -> None:
    # A run directory others can write to is refused: the worker never starts.
    (worker_settings.home / "worker").mkdir(mode=0o777)
    (worker_settings.home / "worker").chmod(0o777)
    with App(worker_settings, restricted=True) as opened:
        async with Client(create_server(Runtime(opened))) as client:
            added = await call(client, "add_entry", text="Backups are kept for 30 days in the cold bucket.")
            assert added["vector_pending"] and added["language"]["regconfig"] == "simple"
            result = await call(client, "search", query="backups kept")
            assert result["degraded"] and result["degraded_reason"].startswith("embedder unavailable")
            assert [hit["id"] for hit in result["hits"]] == [added["id"]]
