"""Backfill: detect the language of stored entries again, in keyset batches.

For after the detector got better thresholds or more languages, or after an import that
stored many entries as 'simple'. Decisions:
- `version` is not bumped: it counts edits made by callers and is the token their
  `expected_version` checks against; re-stemming an unchanged text is maintenance.
  `updated_at` is bumped; `content_hash` never changes (the text does not).
- A 'simple' verdict (text too short, detector unsure) never replaces a stemmed language:
  being unsure is no evidence against the language the entry has.
- A language the caller gave explicitly (`language_how = 'explicit'`) is kept and counted in
  `kept_explicit`; `include_explicit` re-judges those too. Rows from before the choice was
  recorded (NULL) are re-judged. `only_simple` touches only entries stored as 'simple'.
- A text in a language PostgreSQL cannot stem (say Japanese) becomes 'simple' with that
  language recorded in `detected_language`, as a new write would be: that is a finding, not
  an unsure verdict, so it also replaces a stemmed language.
- A document's chunk is judged as an ingest judges it: by its document's opening, unless it is
  written in another script than the document (then by its own text; `own_language`).
- Resumable by being idempotent: a pass re-run after an interruption finds the rows it
  already did unchanged and goes on with the rest.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pgrecall.detection.first_stage import main_script
from pgrecall.domain.language import SIMPLE, LanguageDetector, Resolved
from pgrecall.services.documents import DETECT_SAMPLE_CHARS, own_language
from pgrecall.store.redetect import LanguageChange, RedetectStore


@dataclass
class RedetectReport:
    """What a pass saw and did; `transitions` counts (from, to) of every change found."""

    scanned: int = 0
    unchanged: int = 0
    kept_unsure: int = 0
    kept_explicit: int = 0
    updated: int = 0
    skipped_edited: int = 0
    transitions: Counter[tuple[str, str]] = field(default_factory=Counter)

    @property
    def changes(self) -> int:
        """Rows whose language the detector would change."""
        return sum(self.transitions.values())


def _label(regconfig: str, detected: str | None) -> str:
    return f"{regconfig} ({detected})" if detected else regconfig


def redetect_languages(
    store: RedetectStore,
    detector: LanguageDetector,
    *,
    owner: str | None = None,
    only_simple: bool = False,
    include_explicit: bool = False,
    dry_run: bool = False,
    batch_size: int = 200,
    on_batch: Callable[[int], object] | None = None,
) -> RedetectReport:
    """Re-detect every entry in scope (of `owner`, or all owners; explicit choices only with
    `include_explicit`); with `dry_run` only count."""
    report = RedetectReport()
    if not include_explicit:
        report.kept_explicit = store.count_explicit(owner, only_simple)
    after: tuple[str, uuid.UUID] | None = None
    documents: dict[tuple[str, uuid.UUID], tuple[Resolved, str | None]] = {}
    while True:
        rows = store.batch(owner, only_simple, after, batch_size, include_explicit)
        if not rows:
            break
        after = (rows[-1]["owner"], rows[-1]["id"])
        _judge_documents(store, detector, rows, documents)
        changes: list[LanguageChange] = []
        for row in rows:
            resolved = _judge(detector, row, documents)
            verdict, found = resolved.regconfig, resolved.detected if resolved.regconfig == SIMPLE else None
            current, stored = row["language"], row["detected_language"]
            if (verdict, found) == (current, stored):
                report.unchanged += 1
            elif verdict == SIMPLE and found is None:
                report.kept_unsure += 1
            else:
                report.transitions[(_label(current, stored), _label(verdict, found))] += 1
                changes.append(
                    LanguageChange(row["owner"], row["id"], current, verdict, row["content_hash"], found)
                )
        if not dry_run:
            applied = store.apply(changes, include_explicit)
            report.updated += applied
            report.skipped_edited += len(changes) - applied
        report.scanned += len(rows)
        if on_batch is not None:
            on_batch(len(rows))
    return report


def _judge_documents(
    store: RedetectStore,
    detector: LanguageDetector,
    rows: list[dict[str, Any]],
    seen: dict[tuple[str, uuid.UUID], tuple[Resolved, str | None]],
) -> None:
    """Detect, once per pass, the language and script of the documents these chunks belong to."""
    wanted: dict[str, set[uuid.UUID]] = {}
    for row in rows:
        if row["document_id"] is not None and (row["owner"], row["document_id"]) not in seen:
            wanted.setdefault(row["owner"], set()).add(row["document_id"])
    for doc_owner, ids in wanted.items():
        for doc_id, sample in store.document_samples(doc_owner, sorted(ids), DETECT_SAMPLE_CHARS).items():
            seen[(doc_owner, doc_id)] = (detector.detect(sample), main_script(sample))


def _judge(
    detector: LanguageDetector,
    row: dict[str, Any],
    documents: dict[tuple[str, uuid.UUID], tuple[Resolved, str | None]],
) -> Resolved:
    """A row's language as a write would choose it now."""
    document = documents.get((row["owner"], row["document_id"])) if row["document_id"] else None
    if document is None:
        # An entry (or a chunk whose document is gone): the text a write detects on, title and body.
        return detector.detect(f"{row['title'] or ''}\n{row['body']}")
    language, script = document
    return own_language(detector, script, row["body"]) or language
