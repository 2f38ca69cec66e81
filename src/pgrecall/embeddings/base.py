"""The Embedder protocol every provider implements, and helpers they share."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from pgrecall.errors import PgrecallError

# What a caller may be told about a failed embedding: a fixed phrase, never the exception text
# (which can name the endpoint's host, port, path or the worker's socket).
FAILURE_REASONS = ("timeout", "connection refused", "unreachable", "bad response", "error")


class EmbeddingError(PgrecallError):
    """The provider failed or timed out; the caller stores the entry with its vector pending.

    `reason` is one of FAILURE_REASONS, safe to show a caller; the message is for the server log.
    """

    def __init__(self, message: str = "", *, reason: str | None = None) -> None:
        super().__init__(message)
        self._reason = reason

    @property
    def reason(self) -> str:
        """A fixed, non-revealing phrase for what went wrong (see FAILURE_REASONS)."""
        if self._reason is not None and self._reason in FAILURE_REASONS:
            return self._reason
        # Errors raised without a reason (the worker's transport) are classified by their cause.
        cause = self.__cause__
        if isinstance(cause, TimeoutError):
            return "timeout"
        if isinstance(cause, ConnectionRefusedError):
            return "connection refused"
        return "error"


def unavailable_reason(exc: EmbeddingError) -> str:
    """The caller-visible phrase for a failed embedding, e.g. 'embedder unavailable (timeout)'."""
    return f"embedder unavailable ({exc.reason})"


@runtime_checkable
class Embedder(Protocol):
    """A text embedding provider; methods are synchronous and may block (run them off the event loop)."""

    @property
    def model(self) -> str:
        """Stable identity recorded with every stored vector."""
        ...

    @property
    def dim(self) -> int:
        """Length of every vector this provider returns."""
        ...

    def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        """L2-normalized vectors for search queries (query-side prefix where the model has one)."""
        ...

    def embed_passages(self, texts: Sequence[str]) -> list[list[float]]:
        """L2-normalized vectors for stored passages."""
        ...


def check_texts(texts: Sequence[str]) -> list[str]:
    """Return texts as a list, refusing a bare string (which is also a Sequence[str])."""
    # A bare str would otherwise be embedded character by character, silently.
    if isinstance(texts, str):
        raise TypeError("pass a sequence of strings, not a single string")
    out = list(texts)
    for text in out:
        if not isinstance(text, str):
            raise TypeError(f"texts must be strings, got {type(text).__name__}")
    return out


def batches(items: Sequence[str], size: int) -> Iterator[list[str]]:
    """Consecutive slices of at most size items."""
    for start in range(0, len(items), size):
        yield list(items[start : start + size])


def to_unit_rows(raw: Any, n: int, dim: int, source: str) -> list[list[float]]:
    """Validate an (n, dim) array-like, L2-normalize its rows, and return plain float lists."""
    try:
        arr = np.asarray(raw, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise EmbeddingError(
            f"{source} returned a non-numeric embedding: {exc}", reason="bad response"
        ) from exc
    if arr.ndim == 1 and n == 1:
        arr = arr.reshape(1, -1)
    if arr.ndim != 2 or arr.shape[0] != n:
        raise EmbeddingError(
            f"{source} returned {arr.shape[0] if arr.ndim else 0} vectors for {n} texts",
            reason="bad response",
        )
    if arr.shape[1] != dim:
        raise EmbeddingError(
            f"{source} returned {arr.shape[1]}-d vectors, expected {dim}-d", reason="bad response"
        )
    if not np.isfinite(arr).all():
        raise EmbeddingError(f"{source} returned a vector with NaN or infinite values", reason="bad response")
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    # A zero vector has no direction; storing it would make cosine distance undefined.
    if (norms < 1e-12).any():
        raise EmbeddingError(f"{source} returned an all-zero vector", reason="bad response")
    unit: list[list[float]] = (arr / norms).tolist()
    return unit
