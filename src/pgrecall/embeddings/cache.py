"""In-memory LRU cache for query embeddings (queries repeat; passages are embedded once).

Keyed by owner: a vector cached for one owner's query never serves another owner's. Shared
across owners, a hit (microseconds instead of a model call) would tell one owner that another
searched that exact text.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence

from pgrecall.embeddings.base import Embedder, check_texts

DEFAULT_CACHE_ENTRIES = 1024
ANONYMOUS = ""


class CachedQueryEmbedder:
    """Wraps an Embedder, caching embed_queries results in a bounded, thread-safe LRU; never on disk."""

    def __init__(self, inner: Embedder, max_entries: int = DEFAULT_CACHE_ENTRIES) -> None:
        if max_entries < 1:
            raise ValueError("max_entries must be at least 1")
        self._inner = inner
        self._max = max_entries
        # Keyed by (owner, model, text): never another owner's vector, never another model's.
        self._entries: OrderedDict[tuple[str, str, str], tuple[float, ...]] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0
        self._ready = False

    @property
    def inner(self) -> Embedder:
        """The wrapped provider."""
        return self._inner

    @property
    def model(self) -> str:
        """The wrapped provider's model identity."""
        return self._inner.model

    @property
    def dim(self) -> int:
        """The wrapped provider's vector length."""
        return self._inner.dim

    def ready(self) -> bool:
        """True when a query would be embedded now, not after a model load; asks the worker to load it.

        Providers without a load state (in-process, HTTP) are always ready; once ready, it stays so.
        """
        return self.wait_ready(0.0)

    def wait_ready(self, timeout: float) -> bool:
        """ready(), waiting up to `timeout` seconds for a loading model; False if still not ready."""
        if not self._ready:
            probe = getattr(self._inner, "wait_ready", None)
            self._ready = True if probe is None else bool(probe(timeout))
        return self._ready

    def load_state(self) -> str:
        """The provider's load state ('ready', 'loading', 'idle', 'failed: …'); 'ready' if it has none."""
        state = getattr(self._inner, "state", None)
        return "ready" if state is None else str(state())

    def __bool__(self) -> bool:
        # An embedder is always "there"; without this, an empty cache (len 0) would read as False.
        return True

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def clear(self) -> None:
        """Drop every cached vector."""
        with self._lock:
            self._entries.clear()

    def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        """Query vectors cached under no owner (benchmarks, tools); searches use embed_owner_queries.

        Owner names start with a letter or digit, so the empty owner is no real owner's space.
        """
        return self.embed_owner_queries(ANONYMOUS, texts)

    def embed_owner_queries(self, owner: str, texts: Sequence[str]) -> list[list[float]]:
        """Query vectors for `owner`, from the cache where this owner has them; misses in one call."""
        items = check_texts(texts)
        model = self._inner.model
        found: dict[str, tuple[float, ...]] = {}
        with self._lock:
            for text in items:
                key = (owner, model, text)
                vec = self._entries.get(key)
                if vec is not None:
                    self._entries.move_to_end(key)
                    found[text] = vec
            self.hits += sum(1 for text in items if text in found)
        missing = list(dict.fromkeys(text for text in items if text not in found))
        if missing:
            # Outside the lock: a slow provider call must not block cache hits of other threads.
            fresh = self._inner.embed_queries(missing)
            with self._lock:
                self.misses += len(missing)
                for text, vector in zip(missing, fresh, strict=True):
                    vec = tuple(vector)
                    found[text] = vec
                    self._entries[(owner, model, text)] = vec
                    self._entries.move_to_end((owner, model, text))
                while len(self._entries) > self._max:
                    self._entries.popitem(last=False)
        # Fresh lists each time: callers may mutate what they get back.
        return [list(found[text]) for text in items]

    def embed_passages(self, texts: Sequence[str]) -> list[list[float]]:
        """Passage vectors, straight from the provider (not cached)."""
        return self._inner.embed_passages(texts)
