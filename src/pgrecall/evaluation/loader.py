"""A throw-away database for one evaluation run, and the bulk load of a BEIR corpus into it.

The corpus never touches the user's data: it goes into a fresh database `pgrecall_eval_<random>` on
the same server, migrated to head, dropped at the end (also on an error or Ctrl-C). Documents take
the write path's steps (validation, language detection, content hash, the store's INSERT statement),
but in batches: vectors are embedded batch by batch through the vector cache, rows are inserted with
one pipelined executemany per batch instead of a round trip per document.
"""

from __future__ import annotations

import logging
import secrets
import signal
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

import psycopg
from psycopg import sql
from psycopg_pool import ConnectionPool
from tqdm import tqdm

from pgrecall.config import Settings
from pgrecall.db import migrate as schema
from pgrecall.db.database import Database
from pgrecall.domain.entries import NewEntry, embedding_text
from pgrecall.domain.language import LanguageDetector
from pgrecall.domain.text import content_hash
from pgrecall.domain.validation import check_body, check_source, check_title
from pgrecall.embeddings.base import Embedder, EmbeddingError
from pgrecall.errors import InvalidInputError, PgrecallError
from pgrecall.evaluation.dataset import BeirDataset
from pgrecall.evaluation.vectors import VectorCache, text_key
from pgrecall.store.entries import EntryStore

log = logging.getLogger(__name__)

DB_PREFIX = "pgrecall_eval_"
INSERT_BATCH = 250
KIND = "doc"


class EvalError(PgrecallError):
    """The evaluation cannot run (no CREATEDB privilege, embedder failure, …); the message says why."""


def with_database(url: str, name: str) -> str:
    """The same libpq URL pointing at database `name` (path and any dbname= parameter replaced)."""
    parts = urlsplit(url)
    query = [(k, name if k == "dbname" else v) for k, v in parse_qsl(parts.query, keep_blank_values=True)]
    return urlunsplit(parts._replace(path="/" + quote(name, safe=""), query=urlencode(query, safe="/")))


@contextmanager
def _no_interrupt() -> Iterator[None]:
    # The DROP must finish even if Ctrl-C is pressed again while it runs; signals can
    # only be re-routed from the main thread.
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _check_createdb(conn: psycopg.Connection[Any], embedded: bool) -> None:
    row = conn.execute(
        "SELECT current_user AS who, rolcreatedb OR rolsuper AS ok FROM pg_roles WHERE rolname = current_user"
    ).fetchone()
    if row is not None and not row[1]:
        where = "the embedded server" if embedded else "PGRECALL_DATABASE_URL"
        raise EvalError(
            f"the role {row[0]!r} of {where} may not create databases; `pgrecall eval` loads the collection "
            f"into a throw-away database next to yours and drops it afterwards. Grant it with "
            f'ALTER ROLE "{row[0]}" CREATEDB; or point PGRECALL_DATABASE_URL at a server where it may.'
        )


@contextmanager
def isolated_database(settings: Settings, on_created: Callable[[str], None] | None = None) -> Iterator[str]:
    """URL of a fresh database at head on the configured server; dropped on exit, whatever happened."""
    name = DB_PREFIX + secrets.token_hex(6)
    with Database(settings) as database:
        admin_url = database.url
        try:
            admin = psycopg.connect(admin_url, autocommit=True)
        except psycopg.OperationalError as exc:
            raise EvalError(f"cannot connect to PostgreSQL: {exc}") from exc
        with admin:
            _check_createdb(admin, settings.embedded)
            try:
                # Inside the try: a Ctrl-C right after CREATE still reaches the DROP below.
                _create(admin, name)
                if on_created is not None:
                    on_created(name)
                url = with_database(admin_url, name)
                _migrate(url, name)
                yield url
            finally:
                with _no_interrupt():
                    try:
                        admin.execute(
                            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
                        )
                    except psycopg.Error as exc:
                        log.error("could not drop the evaluation database %s: %s; drop it by hand", name, exc)


def _create(admin: psycopg.Connection[Any], name: str) -> None:
    try:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    except psycopg.errors.InsufficientPrivilege as exc:
        raise EvalError(f"cannot create the evaluation database (CREATEDB needed): {exc}") from exc
    # Someone finding it after a `kill -9` knows what it is and that it may go.
    comment = sql.Literal("pgrecall eval scratch database; safe to drop")
    admin.execute(sql.SQL("COMMENT ON DATABASE {} IS {}").format(sql.Identifier(name), comment))


def _migrate(url: str, name: str) -> None:
    try:
        schema.upgrade(url, "head")
    except PgrecallError:
        raise
    except Exception as exc:
        # e.g. CREATE EXTENSION vector refused to a non-superuser on an external server.
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        hint = ""
        if "extension" in reason:
            # pgvector is not a trusted extension: only a superuser may create it in a new database,
            # unless template1 already has it (new databases are copies of template1).
            hint = (
                "; the role needs to be superuser, or a superuser runs CREATE EXTENSION vector "
                "in template1 once"
            )
        raise EvalError(f"migrating the evaluation database {name} failed: {reason}{hint}") from exc


@dataclass(frozen=True)
class Prepared:
    """A corpus document turned into an entry: validated, language resolved, hashed."""

    beir_id: str
    title: str | None
    body: str
    language: str
    how: str
    content_hash: str
    embed_text: str


@dataclass
class LoadReport:
    """What the load did: counts, languages, vector-cache use, and where the time went."""

    documents: int = 0
    loaded: int = 0
    skipped: dict[str, list[str]] = field(default_factory=dict)
    languages: dict[str, int] = field(default_factory=dict)
    language_resolution: dict[str, int] = field(default_factory=dict)
    embedded: int = 0  # distinct texts embedded in this run (0 when the cache had them all)
    cached: int = 0  # distinct texts served from the vector cache
    cache_path: str | None = None
    seconds: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Loaded:
    """The loaded corpus: entry id → BEIR id, and the stored texts (for the BM25 reference)."""

    beir_of: dict[str, str]
    docs: list[Prepared]
    report: LoadReport


def progress_bar(progress: bool, **kwargs: Any) -> tqdm[Any]:
    """An evaluation's progress bar, gone when done; disable=None: shown on a terminal, silent in
    pipes and logs."""
    return tqdm(disable=None if progress else True, leave=False, **kwargs)


def prepare(
    dataset: BeirDataset, detector: LanguageDetector, max_chars: int, report: LoadReport, progress: bool
) -> list[Prepared]:
    """Validate each document like a write does and resolve its language (detected: BEIR has none)."""
    out: list[Prepared] = []
    with progress_bar(progress, total=len(dataset.docs), desc="detect languages", unit="doc") as bar:
        for doc in dataset.docs:
            bar.update(1)
            # An entry needs a body; a document with only a title keeps it as the body.
            text, title = (doc.text, doc.title) if doc.text.strip() else (doc.title, "")
            try:
                body = check_body(text, max_chars)
                clean_title = check_title(title)
                check_source(doc.id)
            except InvalidInputError as exc:
                reason = "empty" if not text.strip() else exc.field + ": " + exc.rule.split(";")[0]
                report.skipped.setdefault(reason, []).append(doc.id)
                continue
            # The same text EntryService.add hands to the detector and the embedder.
            resolved = detector.resolve(None, f"{clean_title or ''}\n{body}")
            out.append(
                Prepared(
                    beir_id=doc.id,
                    title=clean_title,
                    body=body,
                    language=resolved.regconfig,
                    how=resolved.how,
                    content_hash=content_hash(body),
                    embed_text=embedding_text(clean_title, body),
                )
            )
    report.languages = dict(Counter(p.language for p in out).most_common())
    report.language_resolution = dict(Counter(p.how for p in out).most_common())
    return out


def embed(
    docs: Sequence[Prepared],
    embedder: Embedder,
    cache: VectorCache,
    batch_size: int,
    report: LoadReport,
    progress: bool,
) -> dict[str, list[float]]:
    """Vectors by text key: from the cache, the rest embedded in batches and cached batch by batch."""
    keys = {text_key(d.embed_text): d.embed_text for d in docs}
    vectors = cache.get_many(list(keys))
    report.cached = len(vectors)
    missing = [k for k in keys if k not in vectors]
    with progress_bar(progress, total=len(missing), desc=f"embed {embedder.model}", unit="doc") as bar:
        for start in range(0, len(missing), batch_size):
            chunk = missing[start : start + batch_size]
            try:
                fresh = embedder.embed_passages([keys[k] for k in chunk])
            except EmbeddingError as exc:
                raise EvalError(f"embedding failed ({exc}); vectors embedded so far are cached") from exc
            # Cached at once: an interrupted run resumes where it stopped.
            cache.put_many(list(zip(chunk, fresh, strict=True)))
            vectors.update(zip(chunk, fresh, strict=True))
            report.embedded += len(chunk)
            bar.update(len(chunk))
    return vectors


def _new_entry(doc: Prepared, vector: Sequence[float] | None, model: str | None) -> NewEntry:
    return NewEntry(
        body=doc.body,
        content_hash=doc.content_hash,
        language=doc.language,
        kind=KIND,
        source=doc.beir_id,
        title=doc.title,
        metadata={"beir_id": doc.beir_id},
        embedding=vector,
        embedding_model=model,
    )


def insert(
    pool: ConnectionPool[psycopg.Connection[dict[str, Any]]],
    owner: str,
    docs: Sequence[Prepared],
    vectors: dict[str, list[float]],
    model: str | None,
    progress: bool,
) -> dict[str, str]:
    """Insert the documents in batches through the entry store; returns entry id → BEIR id."""
    store = EntryStore(pool)
    beir_of: dict[str, str] = {}
    with progress_bar(progress, total=len(docs), desc="insert", unit="doc") as bar:
        for start in range(0, len(docs), INSERT_BATCH):
            chunk = docs[start : start + INSERT_BATCH]
            stored = store.insert_many(
                owner, [_new_entry(d, vectors.get(text_key(d.embed_text)), model) for d in chunk]
            )
            for doc, entry in zip(chunk, stored, strict=True):
                beir_of[str(entry.id)] = doc.beir_id
            bar.update(len(chunk))
    return beir_of


def settle(url: str) -> None:
    """Merge the lexical statistics' deltas and ANALYZE, as a store in steady state would have."""
    # Autovacuum would do both within a minute on a live store; a run right after a bulk load
    # would otherwise be planned on empty-table estimates and read thousands of delta rows.
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SELECT pgrecall_lexical_compact()")
        conn.execute("ANALYZE")


def load_corpus(
    *,
    dataset: BeirDataset,
    url: str,
    pool: ConnectionPool[psycopg.Connection[dict[str, Any]]],
    detector: LanguageDetector,
    embedder: Embedder,
    cache: VectorCache,
    owner: str,
    max_chars: int,
    batch_size: int,
    progress: bool = True,
    with_vectors: bool = True,
) -> Loaded:
    """Prepare, embed (through the cache) and insert the corpus into the evaluation database.

    `with_vectors` False (only lexical searches to run): nothing is embedded, the vectors stay pending.
    """
    report = LoadReport(documents=len(dataset.docs), cache_path=str(cache.path))
    started = time.perf_counter()
    docs = prepare(dataset, detector, max_chars, report, progress)
    report.seconds["prepare"] = round(time.perf_counter() - started, 2)
    started = time.perf_counter()
    vectors = embed(docs, embedder, cache, batch_size, report, progress) if with_vectors else {}
    report.seconds["embed"] = round(time.perf_counter() - started, 2)
    started = time.perf_counter()
    beir_of = insert(pool, owner, docs, vectors, embedder.model if with_vectors else None, progress)
    settle(url)
    report.seconds["insert"] = round(time.perf_counter() - started, 2)
    report.loaded = len(beir_of)
    return Loaded(beir_of, docs, report)
