"""STAND-IN for pgrecall.domain.detection (being written in another worktree; replaced at merge).

Only the API the worker relies on: `Detection` and `ShortTextDetector(codes, ...).detect(text)`, with
the rule of language.LanguageDetector.detect (lingua, high accuracy, restricted to `codes`).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Detection:
    """The detected ISO 639-1 code (None when too short or unsure) and lingua's confidence."""

    iso: str | None
    confidence: float | None


class ShortTextDetector:
    """Lingua over `codes`; built on construction (seconds, hundreds of MB)."""

    def __init__(
        self,
        codes: Iterable[str],
        *,
        min_letters: int = 20,
        min_confidence: float = 0.2,
        min_ratio: float = 1.2,
        max_chars: int = 2000,
    ) -> None:
        from lingua import IsoCode639_1, Language, LanguageDetectorBuilder

        self.min_letters = min_letters
        self.min_confidence = min_confidence
        self.min_ratio = min_ratio
        self.max_chars = max_chars
        self._iso_of: dict[Any, str] = {}
        for iso in sorted(set(codes)):
            code = getattr(IsoCode639_1, iso.upper(), None)
            if code is None:
                continue
            try:
                self._iso_of.setdefault(Language.from_iso_code_639_1(code), iso)
            except ValueError:
                continue
        self._detector: Any = None
        if self._iso_of:
            builder = LanguageDetectorBuilder.from_languages(*self._iso_of)
            self._detector = builder.with_preloaded_language_models().build()

    def detect(self, text: str) -> Detection:
        """Best language among `codes`, or Detection(None, …) when the text is too short or unsure."""
        sample = text[: self.max_chars]
        letters = sum(1 for ch in sample if unicodedata.category(ch).startswith("L"))
        if letters < self.min_letters or self._detector is None:
            return Detection(None, None)
        values = self._detector.compute_language_confidence_values(sample)
        if not values:
            return Detection(None, None)
        best = values[0]
        runner_up = values[1].value if len(values) > 1 else 0.0
        iso = self._iso_of.get(best.language)
        if iso is None or best.value < self.min_confidence or best.value < self.min_ratio * runner_up:
            return Detection(None, float(best.value))
        return Detection(iso, float(best.value))
