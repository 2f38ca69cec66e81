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
- Resumable by being idempotent: a pass re-run after an interruption finds the rows it
  already did unchanged and goes on with the rest.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from pgrecall.domain.language import SIMPLE, LanguageDetector
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
    while True:
        rows = store.batch(owner, only_simple, after, batch_size, include_explicit)
        if not rows:
            break
        after = (rows[-1]["owner"], rows[-1]["id"])
        changes: list[LanguageChange] = []
        for row in rows:
            # The same text the write path detects on: title and body.
            resolved = detector.detect(f"{row['title'] or ''}\n{row['body']}")
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
