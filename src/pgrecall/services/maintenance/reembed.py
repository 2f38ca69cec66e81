"""Fill vectors that are pending for the active model (after an embedder outage or a model switch)."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable

from pgrecall.domain.entries import embedding_text
from pgrecall.embeddings.base import Embedder
from pgrecall.store.entries import EntryStore

log = logging.getLogger(__name__)


def reembed_owner(
    store: EntryStore,
    embedder: Embedder,
    owner: str,
    *,
    batch_size: int = 32,
    on_batch: Callable[[int], None] | None = None,
    max_batches: int | None = None,
) -> int:
    """Embed pending entries of one owner in batches until none is left; returns how many were filled.

    Resumable by construction: it only reads rows still lacking a vector of the active
    model, so an interrupted run continues where it stopped. One pass in id order, so a
    row edited meanwhile cannot make it loop. Raises EmbeddingError when the provider
    fails (the rows stay pending).
    """
    filled = 0
    batches = 0
    after: uuid.UUID | None = None
    while max_batches is None or batches < max_batches:
        rows = store.pending(owner, embedder.model, batch_size, after)
        if not rows:
            break
        after = rows[-1]["id"]
        vectors = embedder.embed_passages([embedding_text(r["title"], r["body"]) for r in rows])
        for row, vector in zip(rows, vectors, strict=True):
            # False when the entry was edited since we read it: its writer embeds the new text.
            filled += store.set_embedding(owner, row["id"], row["content_hash"], vector, embedder.model)
        batches += 1
        if on_batch is not None:
            on_batch(len(rows))
    return filled


def reembed_all(
    store: EntryStore,
    embedder: Embedder,
    *,
    batch_size: int = 32,
    on_batch: Callable[[int], None] | None = None,
) -> dict[str, int]:
    """Reembed every owner's pending entries; owner → filled count."""
    result: dict[str, int] = {}
    for owner in store.owners():
        result[owner] = reembed_owner(store, embedder, owner, batch_size=batch_size, on_batch=on_batch)
    return result
