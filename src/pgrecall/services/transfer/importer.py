"""Import JSON lines (the export format): validate each line, COPY good ones in batches, merge by policy.

A line is an object with the export's keys. Required: `text`. Everything else is optional:
`id` (a UUID; absent or null → derived from owner + content hash, see `derived_id`), `owner`
(default: --owner or PGRECALL_OWNER), `kind` ('note'), `language` (a regconfig name as
exported, or an ISO 639-1 code; absent → detected like any write; a code this server cannot stem
→ 'simple'), `detected_language` (with 'simple': that unstemmable language), `content_hash` (checked
against the text when given), `version` and the timestamps (under the default --on-conflict
newer, a line replaces a stored entry only with a higher version or a later updated_at; one
without either is skipped and counted in `skipped_not_newer`), vectors (`embedding` with
`embedding_model`; absent → pending, filled by `pgrecall reembed`), `expires_at` and
`supersedes`, and for a document's chunk `document_id`, `ordinal` and `section_path`. A line
`{"type": "link", …}` is a link between two entries (services/transfer/links.py), applied once every
entry line is in. A line `{"type": "document", …}` (DOCUMENT_FIELDS, the whole text) goes in where
it stands, before its chunks: a document whose id or live (source, version) its owner already holds
is kept as stored, and a chunk whose document is not in the store when its batch is merged is a bad
line.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import psycopg

from pgrecall.domain.language import ISO_639_1, SIMPLE, LanguageCatalog, LanguageDetector
from pgrecall.domain.text import content_hash
from pgrecall.domain.validation import (
    check_body,
    check_kind,
    check_metadata,
    check_source,
    check_tags,
    check_title,
    parse_id,
)
from pgrecall.errors import InvalidInputError, PgrecallError
from pgrecall.services.transfer.document_lines import chunk_place, is_document_line, parse_document
from pgrecall.services.transfer.fields import opt_id, opt_str, timestamp, vector, version
from pgrecall.services.transfer.lines import LineError, max_line_bytes, read_jsonl
from pgrecall.services.transfer.links import LinkCounts, LinkLine, apply_links, is_link_line, parse_link
from pgrecall.store.transfer import ConflictPolicy, MergeCounts, StagedDocument, StagedRow, TransferStore

FIELDS = (
    "id",
    "owner",
    "kind",
    "source",
    "title",
    "text",
    "tags",
    "metadata",
    "language",
    "detected_language",
    "content_hash",
    "version",
    "created_at",
    "updated_at",
    "deleted_at",
    "expires_at",
    "supersedes",
    "embedding_model",
    "embedding_dim",
    "embedding",
    "document_id",
    "ordinal",
    "section_path",
)
MAX_OWNER_CHARS = 200
# Ids of lines skipped as not newer, kept for the summary: enough to find them, not a list of all.
MAX_REPORTED_IDS = 5
# Fixed forever: changing it would give every id-less line a new id, and a re-import duplicates.
IMPORT_NAMESPACE = uuid.UUID("0d5c3f5e-8a1b-5c2e-9f47-6b3e2a917c58")


@dataclass(frozen=True)
class ImportOptions:
    """How to import: owner restriction/target, conflict policy, all-or-nothing, batch size."""

    owner: str | None = None
    on_conflict: ConflictPolicy = "newer"
    atomic: bool = False
    batch_size: int = 500


@dataclass
class ImportReport:
    """What an import did; `errors` lists every bad line."""

    lines: int = 0
    inserted: int = 0
    updated: int = 0
    unchanged: int = 0
    kept: int = 0
    skipped_not_newer: int = 0
    # (line, id) of the first few, in file order.
    skipped_not_newer_first: list[tuple[int, str]] = field(default_factory=list)
    other_owner: int = 0
    # Lines without an id (given one by `derived_id`), and repeats of such a line, skipped.
    ids_derived: int = 0
    duplicates: int = 0
    without_vectors: int = 0
    documents_inserted: int = 0
    documents_kept: int = 0  # already stored (same id, or the same live source and version)
    rolled_back: bool = False
    errors: list[LineError] = field(default_factory=list)
    links: LinkCounts = field(default_factory=LinkCounts)

    def add(self, counts: MergeCounts, lines: dict[tuple[str, uuid.UUID], int] | None = None) -> None:
        """Accumulate one merged batch; `lines` maps its (owner, id) pairs to their line numbers."""
        self.inserted += counts.inserted
        self.updated += counts.updated
        self.unchanged += counts.unchanged
        self.kept += counts.kept
        self.skipped_not_newer += len(counts.not_newer)
        where = lines or {}
        first = sorted((where.get(key, 0), str(key[1])) for key in counts.not_newer)
        self.skipped_not_newer_first.extend(
            first[: max(MAX_REPORTED_IDS - len(self.skipped_not_newer_first), 0)]
        )


def _supersedes(obj: dict[str, Any], ident: uuid.UUID | None) -> uuid.UUID | None:
    value = opt_id(obj, "supersedes")
    if value is not None and value == ident:
        raise InvalidInputError("supersedes", "an entry cannot supersede itself")
    return value


def derived_id(owner: str, digest: str) -> uuid.UUID:
    """The id of a line given without one: uuid5 of its owner and content hash.

    Derived, not random, so importing the same file again finds the entries it made (unchanged,
    not duplicated), and an interrupted import can simply be run again. Owner \x00 hash: an
    owner never holds NUL, so two (owner, hash) pairs never give the same name.
    """
    return uuid.uuid5(IMPORT_NAMESPACE, f"{owner}\x00{digest}")


def _row_digest(row: StagedRow) -> bytes:
    # Tells a repeated id-less line (skipped as a duplicate) from another one with the same text.
    data = json.dumps(asdict(row), sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.sha256(data.encode()).digest()


class RecordValidator:
    """Turns one parsed line into a StagedRow with the same rules as every write path."""

    def __init__(
        self,
        catalog: LanguageCatalog,
        detector: LanguageDetector,
        *,
        max_text_chars: int,
        default_owner: str,
        max_document_bytes: int = 64 * 1024 * 1024,
    ) -> None:
        self.catalog = catalog
        self.detector = detector
        self.max_text_chars = max_text_chars
        # A document line holds a whole document's text (at most this many characters).
        self.max_document_bytes = max_document_bytes
        self.default_owner = default_owner

    def link(self, line: int, obj: dict[str, Any]) -> LinkLine:
        """Validate a `{"type": "link", …}` line."""
        return parse_link(line, obj, self._owner(obj))

    def document(self, obj: dict[str, Any]) -> StagedDocument:
        """Validate a `{"type": "document", …}` line."""
        return parse_document(
            obj,
            self._owner(obj),
            lambda value, text: self._language(value, None, None, text)[0],
            self.max_document_bytes,
        )

    def _owner(self, obj: dict[str, Any]) -> str:
        value = obj.get("owner")
        if value is None:
            return self.default_owner
        if not isinstance(value, str) or not 1 <= len(value) <= MAX_OWNER_CHARS or "\x00" in value:
            raise InvalidInputError("owner", f"must be a string of 1 to {MAX_OWNER_CHARS} characters")
        return value

    def _language(self, value: Any, detected: Any, title: str | None, body: str) -> tuple[str, str | None]:
        """(regconfig, detected_language) of a line, resolved as EntryService.add resolves them."""
        if detected is not None:
            if not isinstance(detected, str) or detected not in ISO_639_1 or detected in self.catalog.codes:
                raise InvalidInputError(
                    "detected_language", "must be the ISO 639-1 code of a language this server cannot stem"
                )
            if value not in (None, SIMPLE):
                raise InvalidInputError("detected_language", "goes only with language 'simple' or none")
            return SIMPLE, detected
        if value is None:
            resolved = self.detector.resolve(None, f"{title or ''}\n{body}")
            return resolved.regconfig, resolved.detected
        if not isinstance(value, str):
            raise InvalidInputError("language", "must be a string or null")
        key = value.strip().lower()
        if key in self.catalog.configs:
            return key, None
        resolved = self.catalog.resolve_for_entry(value)
        return resolved.regconfig, resolved.detected

    def validate(self, obj: Any) -> StagedRow:
        """Validate one line; InvalidInputError names the first bad field."""
        if not isinstance(obj, dict):
            raise InvalidInputError("line", f"must be a JSON object, got {type(obj).__name__}")
        unknown = sorted(set(obj) - set(FIELDS))
        if unknown:
            raise InvalidInputError(unknown[0], f"unknown field; the fields are {', '.join(FIELDS)}")
        given_id = obj.get("id")
        if given_id is not None and not isinstance(given_id, str):
            raise InvalidInputError("id", f"must be a UUID string or absent, got {type(given_id).__name__}")
        ident = parse_id(given_id) if given_id is not None else None
        if "text" not in obj or obj["text"] is None:
            raise InvalidInputError("text", "is required")
        body = check_body(obj["text"], self.max_text_chars)
        owner = self._owner(obj)
        digest = content_hash(body)
        title = check_title(opt_str(obj, "title"))
        tags = obj.get("tags")
        if tags is not None and not isinstance(tags, list):
            raise InvalidInputError("tags", "must be a list of strings")
        kind = opt_str(obj, "kind")
        given_hash = obj.get("content_hash")
        if given_hash is not None and given_hash != digest:
            raise InvalidInputError("content_hash", f"does not match the text (which hashes to {digest})")
        embedding, model, dim = vector(obj)
        language, detected_language = self._language(
            obj.get("language"), obj.get("detected_language"), title, body
        )
        document_id, ordinal, section_path = chunk_place(obj)
        return StagedRow(
            owner=owner,
            id=ident or derived_id(owner, digest),
            kind=check_kind(kind),
            source=check_source(opt_str(obj, "source")),
            title=title,
            body=body,
            tags=check_tags(tags),
            metadata=check_metadata(obj.get("metadata")),
            language=language,
            detected_language=detected_language,
            content_hash=digest,
            version=version(obj),
            created_at=timestamp(obj, "created_at"),
            updated_at=timestamp(obj, "updated_at"),
            deleted_at=timestamp(obj, "deleted_at"),
            expires_at=timestamp(obj, "expires_at"),
            supersedes=_supersedes(obj, ident),
            embedding=embedding,
            embedding_model=model,
            embedding_dim=dim,
            document_id=document_id,
            ordinal=ordinal,
            section_path=section_path,
        )


def run_import(
    conn: psycopg.Connection[dict[str, Any]],
    items: Iterable[tuple[int, Any]],
    validator: RecordValidator,
    options: ImportOptions,
    *,
    statement_timeout_ms: int = 30_000,
) -> ImportReport:
    """Validate (line, object) pairs and merge the good ones in batches; see ImportOptions.

    Without `atomic` every batch commits on its own, so an interrupted import keeps what it
    wrote and a re-run is idempotent. With `atomic` all batches share one transaction that
    commits only if no line was bad.
    """
    run = _ImportRun(conn, validator, options, TransferStore(conn, statement_timeout_ms))
    for line, item in items:
        run.take(line, item)
    return run.finish()


class _ImportRun:
    """One import's state: the batch being filled, the keys seen so far, the links kept for last."""

    def __init__(
        self,
        conn: psycopg.Connection[dict[str, Any]],
        validator: RecordValidator,
        options: ImportOptions,
        store: TransferStore,
    ) -> None:
        self.conn, self.validator, self.options, self.store = conn, validator, options, store
        self.report = ImportReport()
        self.seen: dict[tuple[str, bytes], int] = {}
        self.derived: dict[tuple[str, bytes], bytes] = {}  # of the id-less lines: key → _row_digest
        self.batch: list[StagedRow] = []
        self.batch_lines: list[int] = []
        self.links: list[LinkLine] = []
        store.prepare_stage()
        self._commit_step()

    def _commit_step(self) -> None:
        if not self.options.atomic:
            self.conn.commit()

    def _will_roll_back(self) -> bool:
        return self.options.atomic and bool(self.report.errors)

    def take(self, line: int, item: Any) -> None:
        """Count one line: a reader error, a link, a bad record, another owner's, a duplicate or a row."""
        report = self.report
        report.lines += 1
        if isinstance(item, LineError):
            report.errors.append(item)
            return
        try:
            if is_link_line(item):
                link = self.validator.link(line, item)
                report.lines -= 1  # `lines` counts entry lines (and bad ones); good links: links.seen
                self._take_link(link)
                return
            if is_document_line(item):
                document = self.validator.document(item)
                report.lines -= 1  # counted as documents_inserted / documents_kept
                self._take_document(line, document)
                return
            row = self.validator.validate(item)
        except InvalidInputError as exc:
            report.errors.append(LineError(line, str(exc)))
            return
        except (RecursionError, UnicodeError) as exc:  # hostile values the reader let through
            report.errors.append(LineError(line, f"cannot be imported ({type(exc).__name__})"))
            return
        if self.options.owner is not None and row.owner != self.options.owner:
            report.other_owner += 1
            return
        without_id = isinstance(item, dict) and item.get("id") is None
        if self._repeated(line, row, without_id):
            return
        self.batch.append(row)
        self.batch_lines.append(line)
        if len(self.batch) >= self.options.batch_size:
            self._flush()

    def _refused(self, where: str, what: str, earlier: str, exc: psycopg.Error) -> PgrecallError:
        """Roll back, and say which lines the database refused and what became of the earlier ones."""
        self.conn.rollback()
        return PgrecallError(
            f"{where}: the database refused {what} ({exc.sqlstate}: {str(exc).strip().splitlines()[0]}); "
            f"earlier {earlier} {'were rolled back' if self.options.atomic else 'are kept'}"
        )

    def _take_document(self, line: int, document: StagedDocument) -> None:
        if self.options.owner is not None and document.owner != self.options.owner:
            self.report.other_owner += 1
            return
        # Entries read before it go first; its chunks follow it in the file.
        self._flush()
        if self._will_roll_back():
            return
        try:
            inserted = self.store.import_document(document)
        except psycopg.Error as exc:
            raise self._refused(f"line {line}", "the document", "lines", exc) from exc
        self._commit_step()
        if inserted:
            self.report.documents_inserted += 1
        else:
            self.report.documents_kept += 1

    def _without_document(self, batch: list[StagedRow], lines: list[int]) -> None:
        """Take out of the batch, as bad lines, the chunks whose document is not in the store."""
        wanted: dict[str, set[uuid.UUID]] = {}
        for row in batch:
            if row.document_id is not None:
                wanted.setdefault(row.owner, set()).add(row.document_id)
        if not wanted:
            return
        stored = {
            (owner, i) for owner, ids in wanted.items() for i in self.store.documents_of(owner, sorted(ids))
        }
        kept: list[tuple[StagedRow, int]] = []
        for row, line in zip(batch, lines, strict=True):
            if row.document_id is None or (row.owner, row.document_id) in stored:
                kept.append((row, line))
                continue
            self.report.errors.append(
                LineError(
                    line,
                    f"document_id: no document {row.document_id} of owner {row.owner!r} "
                    "(its document line comes first in an export)",
                )
            )
        batch[:] = [row for row, _ in kept]
        lines[:] = [line for _, line in kept]

    def _take_link(self, link: LinkLine) -> None:
        if self.options.owner is not None and link.owner != self.options.owner:
            self.report.other_owner += 1
        else:
            self.links.append(link)

    def _repeated(self, line: int, row: StagedRow, without_id: bool) -> bool:
        """Whether `row`'s key came earlier in the file (an exact id-less repeat is a duplicate)."""
        key = (row.owner, row.id.bytes)
        if key not in self.seen:
            self.seen[key] = line
            if without_id:
                self.report.ids_derived += 1
                self.derived[key] = _row_digest(row)
            return False
        first = self.seen[key]
        if without_id and self.derived.get(key) == _row_digest(row):
            self.report.duplicates += 1
        elif without_id:
            self.report.errors.append(
                LineError(
                    line,
                    f"id: none given, and line {first} has the same owner and text (an id-less "
                    "line's id comes from them); give one of the two lines an id",
                )
            )
        else:
            self.report.errors.append(
                LineError(line, f"id: {row.id} of owner {row.owner!r} is already on line {first}")
            )
        return True

    def _flush(self) -> None:
        batch, lines = self.batch, self.batch_lines
        if batch and not self._will_roll_back():
            self._without_document(batch, lines)
        # Asked again: a chunk just refused for its document makes an atomic import roll back.
        if batch and not self._will_roll_back():
            try:
                self.store.stage(batch)
                self.report.add(
                    self.store.merge(self.options.on_conflict),
                    {(row.owner, row.id): line for row, line in zip(batch, lines, strict=True)},
                )
            except psycopg.Error as exc:
                raise self._refused(f"lines {lines[0]}-{lines[-1]}", "the batch", "batches", exc) from exc
            self._commit_step()
            self.report.without_vectors += sum(1 for row in batch if row.embedding is None)
        batch.clear()
        lines.clear()

    def finish(self) -> ImportReport:
        """Write the last batch, then the links (every entry line is in: ends may come late in a file)."""
        report = self.report
        self._flush()
        if self.links and not self._will_roll_back():
            report.links = apply_links(self.conn, self.links)
            self._commit_step()
        if not self.options.atomic:
            return report
        if not report.errors:
            self.conn.commit()
            return report
        self.conn.rollback()
        report.inserted = report.updated = report.unchanged = report.kept = report.without_vectors = 0
        report.documents_inserted = report.documents_kept = 0
        report.skipped_not_newer = 0
        report.skipped_not_newer_first.clear()
        report.links = LinkCounts(seen=len(self.links))
        report.rolled_back = True
        return report


def import_jsonl(
    conn: psycopg.Connection[dict[str, Any]],
    path: Path,
    validator: RecordValidator,
    options: ImportOptions,
    *,
    statement_timeout_ms: int = 30_000,
    on_line: Callable[[], object] | None = None,
) -> ImportReport:
    """Import a JSON-lines file (the `pgrecall export` format); `on_line` is called per line read."""
    # A document line is as long as its text (JSON escapes at most double a line of prose and code).
    lines = read_jsonl(
        path,
        on_line,
        line_limit=max_line_bytes(validator.max_text_chars),
        document_line_limit=2 * validator.max_document_bytes + (1 << 20),
    )
    return run_import(conn, lines, validator, options, statement_timeout_ms=statement_timeout_ms)
