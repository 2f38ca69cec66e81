"""The full detector: lingua in high-accuracy mode over every stemmable language, all models loaded.

Right most often on short texts (the baseline the compact detector is measured against), at the
price of ~650 MB and seconds to load; in the model worker it is loaded once per machine.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any

from pgrecall.detection.short_text import pooled_by_stemmer
from pgrecall.domain.language import DEFAULT_THRESHOLDS, Detection, Thresholds

# lingua keeps models per process; one detector per language set is shared by every caller.
_BUILT: dict[tuple[str, ...], tuple[Any, dict[Any, str]]] = {}
_BUILT_LOCK = threading.Lock()


def _build(codes: tuple[str, ...]) -> tuple[Any, dict[Any, str]]:
    from lingua import IsoCode639_1, Language, LanguageDetectorBuilder

    with _BUILT_LOCK:
        if codes not in _BUILT:
            iso_of: dict[Any, str] = {}
            for iso in codes:
                code = getattr(IsoCode639_1, iso.upper(), None)
                if code is None:
                    continue
                try:
                    iso_of.setdefault(Language.from_iso_code_639_1(code), iso)
                except ValueError:
                    continue
            detector = None
            if iso_of:
                builder = LanguageDetectorBuilder.from_languages(*iso_of).with_preloaded_language_models()
                detector = builder.build()
            _BUILT[codes] = (detector, iso_of)
        return _BUILT[codes]


class AllLanguagesDetector:
    """lingua high accuracy over `codes`, with the same thresholds and answers as ShortTextDetector."""

    def __init__(
        self,
        codes: Iterable[str],
        thresholds: Thresholds = DEFAULT_THRESHOLDS,
    ) -> None:
        self.codes = tuple(sorted({c.strip().lower() for c in codes}))
        self.thresholds = thresholds

    def detect(self, text: str) -> Detection:
        """Best language among `codes`, or Detection(None, …) when too short or unsure."""
        sample = self.thresholds.sample(text)
        if sample is None:
            return Detection(None, None)
        detector, iso_of = _build(self.codes)
        if detector is None:
            return Detection(None, None)
        values = detector.compute_language_confidence_values(sample)
        # Languages one stemmer serves count as one, as in ShortTextDetector.
        pooled = pooled_by_stemmer((iso_of[v.language], float(v.value)) for v in values)
        ranked = sorted(pooled.items(), key=lambda kv: (-kv[1], kv[0]))
        if not ranked:
            return Detection(None, None)
        iso, best = ranked[0]
        runner_up = ranked[1][1] if len(ranked) > 1 else 0.0
        if not self.thresholds.trusted(best, runner_up):
            return Detection(None, best)
        return Detection(iso, best)

    def loaded_languages(self) -> list[str]:
        """Every code once built (all models load together)."""
        return list(self.codes) if self.codes in _BUILT else []
