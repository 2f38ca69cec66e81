"""Choosing a language detector: the full one, or the compact two-stage one (PGRECALL_DETECTOR)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Protocol

from pgrecall.detection.full import AllLanguagesDetector
from pgrecall.detection.short_text import ShortTextDetector
from pgrecall.domain.language import DEFAULT_THRESHOLDS, DetectBackend, Detection, LanguageCatalog, Thresholds

if TYPE_CHECKING:
    from pgrecall.config import DetectorKind


class TextDetector(Protocol):
    """What the worker and the in-process backend need of a detector."""

    def detect(self, text: str) -> Detection:
        """Best language of `text`, or Detection(None, …)."""
        ...


def make_detector(
    kind: DetectorKind,
    codes: Iterable[str],
    thresholds: Thresholds = DEFAULT_THRESHOLDS,
) -> TextDetector:
    """The full detector (lingua high accuracy over every language) or the compact two-stage one."""
    chosen = ShortTextDetector if kind == "compact" else AllLanguagesDetector
    return chosen(codes, thresholds)


def in_process_backend(catalog: LanguageCatalog, thresholds: Thresholds, kind: DetectorKind) -> DetectBackend:
    """Detection in this process with the `kind` detector (lingua's models load on first use)."""
    return make_detector(kind, catalog.supported_codes(), thresholds).detect
