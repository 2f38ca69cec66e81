"""The two stores of `pgrecall eval --documents`: a collection as chunks and as one entry per document.

Both go into a throw-away database (`eval_store`) through the services a user's ingest goes through:
DocumentService.ingest for chunks, EntryService.add for one entry per document (with
max_text_chars raised so that no document is refused). Passage vectors go through the on-disk
vector cache; each store's IngestLog gives its throughput as measured and, when vectors came from
the cache, as a cold cache would have it. The benchmarks that build the same stores use these too.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from pydantic import SecretStr

from pgrecall.app import App
from pgrecall.chunking import DocumentError, parse
from pgrecall.config import Settings
from pgrecall.domain.entries import embedding_text
from pgrecall.embeddings.base import Embedder
from pgrecall.errors import InvalidInputError
from pgrecall.evaluation.documents_dataset import DocumentCollection
from pgrecall.evaluation.loader import isolated_database, progress_bar
from pgrecall.evaluation.vectors import VectorCache, text_key

OWNER = "eval"
PAGE_CHARS = 3000
MAX_ENTRY_CHARS = 1_000_000  # the setting's upper bound: the longest manual page stays one entry


class CachingPassageEmbedder:
    """An Embedder whose passage vectors go through the on-disk VectorCache; it times what it embeds."""

    def __init__(self, inner: Embedder, cache: VectorCache) -> None:
        self._inner = inner
        self._cache = cache
        self._lock = threading.Lock()
        self.embedded = 0
        self.cached = 0
        self.embed_seconds = 0.0

    @property
    def model(self) -> str:
        """The wrapped provider's model identity."""
        return self._inner.model

    @property
    def dim(self) -> int:
        """The wrapped provider's vector length."""
        return self._inner.dim

    def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        """Query vectors, never cached on disk."""
        return self._inner.embed_queries(texts)

    def embed_passages(self, texts: Sequence[str]) -> list[list[float]]:
        """Cached vectors where there are, the rest embedded (timed) and cached."""
        items = list(texts)
        keys = [text_key(t) for t in items]
        with self._lock:
            found = self._cache.get_many(keys)
        missing = list(dict.fromkeys(k for k in keys if k not in found))
        if missing:
            by_key = dict(zip(keys, items, strict=True))
            started = time.perf_counter()
            vectors = self._inner.embed_passages([by_key[k] for k in missing])
            elapsed = time.perf_counter() - started
            fresh = list(zip(missing, vectors, strict=True))
            with self._lock:
                self._cache.put_many(fresh)
                self.embed_seconds += elapsed
                self.embedded += len(missing)
            found.update(fresh)
        with self._lock:
            self.cached += len(items) - len(missing)
        return [found[k] for k in keys]


@dataclass
class IngestLog:
    """What one store's ingest did and how long it took."""

    documents: int = 0
    units: int = 0  # chunks (chunked store) or entries (whole store)
    chars: int = 0  # normalized text
    seconds: float = 0.0
    embedded: int = 0
    cached: int = 0
    embed_seconds: float = 0.0
    languages: Counter[str] = field(default_factory=Counter)
    errors: dict[str, str] = field(default_factory=dict)

    def report(self) -> dict[str, Any]:
        """Throughput as measured and, when vectors came from the cache, as a cold cache would have it."""
        pages = self.chars / PAGE_CHARS
        per_text = self.embed_seconds / self.embedded if self.embedded else None
        other = self.seconds - self.embed_seconds
        cold = other + per_text * (self.embedded + self.cached) if per_text is not None else None
        out: dict[str, Any] = {
            "documents": self.documents,
            "units": self.units,
            "normalized_chars": self.chars,
            "pages": round(pages, 1),
            "page_chars": PAGE_CHARS,
            "seconds": round(self.seconds, 1),
            "texts_embedded": self.embedded,
            "texts_from_cache": self.cached,
            "embed_seconds": round(self.embed_seconds, 1),
            "embed_seconds_per_text": round(per_text, 3) if per_text is not None else None,
            "measured": _rates(self.units, pages, self.seconds),
            "cold_cache_estimate": _rates(self.units, pages, cold) if cold is not None else None,
            "languages": dict(self.languages),
            "errors": self.errors,
        }
        return out


def _rates(units: int, pages: float, seconds: float) -> dict[str, float | None]:
    if seconds <= 0:
        return {"seconds": 0.0, "units_per_s": None, "pages_per_min": None}
    return {
        "seconds": round(seconds, 1),
        "units_per_s": round(units / seconds, 2),
        "pages_per_min": round(pages * 60 / seconds, 1),
    }


@contextmanager
def eval_store(
    settings: Settings, embedder: CachingPassageEmbedder | None, on_database: Callable[[str], None] | None
) -> Iterator[tuple[App, Settings]]:
    """An App on a throw-away database that takes texts up to MAX_ENTRY_CHARS (the benchmarks use it too)."""
    with isolated_database(settings, on_database) as url:
        scoped = settings.model_copy(
            update={"database_url": SecretStr(url), "max_text_chars": MAX_ENTRY_CHARS}
        )
        with App(scoped, embedder=embedder, restricted=True) as app:
            yield app, scoped


def _counted(embedder: CachingPassageEmbedder, log: IngestLog, before: tuple[int, int, float]) -> None:
    log.embedded = embedder.embedded - before[0]
    log.cached = embedder.cached - before[1]
    log.embed_seconds = embedder.embed_seconds - before[2]


@dataclass(frozen=True)
class Unit:
    """A stored retrievable unit: a chunk, or a whole document's entry."""

    doc_id: str
    text: str
    indexed: str  # title and text, as embedded and indexed
    section_path: tuple[str, ...]
    language: str  # the collection's ISO code of its document


def ingest_chunked(
    app: App,
    collection: DocumentCollection,
    doc_ids: Sequence[str],
    embedder: CachingPassageEmbedder,
    progress: bool,
) -> tuple[IngestLog, dict[str, Unit]]:
    """Every document through DocumentService.ingest; its chunks read back from the store, by entry id."""
    log = IngestLog()
    before = (embedder.embedded, embedder.cached, embedder.embed_seconds)
    stored: list[tuple[str, Any]] = []
    with progress_bar(progress, total=len(doc_ids), desc="ingest chunked", unit="doc") as bar:
        for doc_id in doc_ids:
            doc = collection.document(doc_id)
            started = time.perf_counter()
            try:
                done = app.documents.ingest(OWNER, doc.data, source=doc.id, format=doc.format, name=doc.id)
            except (DocumentError, InvalidInputError) as exc:
                log.errors[doc_id] = str(exc)
                continue
            finally:
                log.seconds += time.perf_counter() - started
                bar.update(1)
            stored.append((doc_id, done.document))
            log.documents += 1
            log.units += done.written + done.kept
            log.languages[done.document.language] += 1
    _counted(embedder, log, before)
    units: dict[str, Unit] = {}
    for doc_id, document in stored:
        language = collection.document(doc_id).language
        for entry in app.documents.store.chunks(OWNER, document.id):
            path = tuple(entry.section_path or ())
            log.chars += len(entry.body)
            units[str(entry.id)] = Unit(
                doc_id, entry.body, embedding_text(entry.title, entry.body), path, language
            )
    return log, units


def ingest_whole(
    app: App,
    collection: DocumentCollection,
    doc_ids: Sequence[str],
    embedder: CachingPassageEmbedder,
    progress: bool,
) -> tuple[IngestLog, dict[str, Unit]]:
    """Every document's normalized text as one entry through EntryService.add."""
    log = IngestLog()
    before = (embedder.embedded, embedder.cached, embedder.embed_seconds)
    units: dict[str, Unit] = {}
    with progress_bar(progress, total=len(doc_ids), desc="add whole documents", unit="doc") as bar:
        for doc_id in doc_ids:
            doc = collection.document(doc_id)
            started = time.perf_counter()
            try:
                parsed = parse(doc.data, doc.format, name=doc.id)
                written = app.entries.add(OWNER, text=parsed.text, title=parsed.title, source=doc.id)
            except (DocumentError, InvalidInputError) as exc:
                log.errors[doc_id] = str(exc)
                continue
            finally:
                log.seconds += time.perf_counter() - started
                bar.update(1)
            entry = written.entry
            log.documents += 1
            log.units += 1
            log.chars += len(entry.body)
            log.languages[entry.language] += 1
            units[str(entry.id)] = Unit(
                doc_id, entry.body, embedding_text(entry.title, entry.body), (), doc.language
            )
    _counted(embedder, log, before)
    return log, units
