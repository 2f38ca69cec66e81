"""Choosing a language detector: the full one, or the compact two-stage one (PGRECALL_DETECTOR)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from pgrecall.config import DetectorKind
from pgrecall.domain.detection import DEFAULT_THRESHOLDS, Detection, ShortTextDetector, Thresholds
from pgrecall.domain.detection_full import AllLanguagesDetector


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
