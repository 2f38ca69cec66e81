"""Languages: ISO 639-1 codes ↔ PostgreSQL text-search configs, and lingua detection."""

from __future__ import annotations

import logging
import threading
import time
import unicodedata
from dataclasses import dataclass
from typing import Any

from pgrecall.errors import InvalidInputError

log = logging.getLogger(__name__)

# One lingua detector per process and language set: it costs seconds and hundreds
# of MB, so every App/test in the process shares it.
_DETECTORS: dict[tuple[tuple[str, ...], bool], tuple[Any, dict[Any, str], float]] = {}
_DETECTORS_LOCK = threading.Lock()

SIMPLE = "simple"

# ISO 639-1 → Snowball config name as PostgreSQL ships it. Only the configs the
# server really has (read from pg_ts_config) are offered; this table only names them.
ISO_TO_CONFIG: dict[str, str] = {
    "ar": "arabic",
    "hy": "armenian",
    "eu": "basque",
    "ca": "catalan",
    "da": "danish",
    "nl": "dutch",
    "en": "english",
    "et": "estonian",
    "fi": "finnish",
    "fr": "french",
    "de": "german",
    "el": "greek",
    "hi": "hindi",
    "hu": "hungarian",
    "id": "indonesian",
    "ga": "irish",
    "it": "italian",
    "lt": "lithuanian",
    "ne": "nepali",
    "nb": "norwegian",
    "no": "norwegian",
    "pt": "portuguese",
    "ro": "romanian",
    "ru": "russian",
    "sr": "serbian",
    "es": "spanish",
    "sv": "swedish",
    "ta": "tamil",
    "tr": "turkish",
    "yi": "yiddish",
}
# The code reported for a config (norwegian has two codes; report the Bokmål one).
CONFIG_TO_ISO: dict[str, str] = {cfg: iso for iso, cfg in reversed(list(ISO_TO_CONFIG.items()))}


@dataclass(frozen=True)
class Resolved:
    """The regconfig an entry is stemmed with, and how it was chosen."""

    regconfig: str
    iso: str | None
    how: str  # "explicit" | "detected" | "default"
    confidence: float | None = None


class LanguageCatalog:
    """The text-search configs this server has (store.catalog reads them once from pg_ts_config)."""

    def __init__(self, config_names: set[str]) -> None:
        self.configs = frozenset(config_names)
        self.codes: dict[str, str] = {iso: cfg for iso, cfg in ISO_TO_CONFIG.items() if cfg in self.configs}

    def supported_codes(self) -> list[str]:
        """ISO codes a caller may pass, sorted."""
        return sorted(self.codes)

    def resolve_explicit(self, value: str, field: str = "language") -> Resolved:
        """An ISO 639-1 code (or a config name, or 'simple') → regconfig; unknown → InvalidInputError."""
        key = value.strip().lower()
        if key in self.codes:
            return Resolved(self.codes[key], key, "explicit")
        if key == SIMPLE and SIMPLE in self.configs:
            return Resolved(SIMPLE, None, "explicit")
        if key in self.configs and key in CONFIG_TO_ISO:
            return Resolved(key, CONFIG_TO_ISO[key], "explicit")
        raise InvalidInputError(
            field,
            f"unknown language {value!r}; use an ISO 639-1 code among {', '.join(self.supported_codes())} "
            "or 'simple' (no stemming), or omit it to detect the language",
        )

    def iso_for(self, regconfig: str) -> str | None:
        """ISO code of a regconfig (None for 'simple')."""
        return CONFIG_TO_ISO.get(regconfig)


class LanguageDetector:
    """Lingua restricted to the languages the server can stem; built once, lazily, thread-safe."""

    def __init__(
        self,
        catalog: LanguageCatalog,
        *,
        min_letters: int = 20,
        min_confidence: float = 0.2,
        min_ratio: float = 1.2,
        high_accuracy: bool = True,
        max_chars: int = 2000,
    ) -> None:
        self.catalog = catalog
        self.min_letters = min_letters
        self.min_confidence = min_confidence
        self.min_ratio = min_ratio
        self.high_accuracy = high_accuracy
        self.max_chars = max_chars
        self._detector: Any = None
        self._iso_of: dict[Any, str] = {}
        self.load_seconds: float | None = None

    def _build(self) -> Any:
        if self._detector is not None:
            return self._detector
        key = (tuple(sorted(self.catalog.codes)), self.high_accuracy)
        with _DETECTORS_LOCK:
            if key not in _DETECTORS:
                _DETECTORS[key] = _load_lingua(key[0], self.high_accuracy)
            detector, self._iso_of, self.load_seconds = _DETECTORS[key]
        self._detector = detector
        return detector

    def warm_up(self) -> None:
        """Build the detector now (call it off the event loop)."""
        self._build()

    def detect(self, text: str) -> Resolved:
        """Best stemmable language of `text`, or 'simple' when too short or unsure."""
        sample = text[: self.max_chars]
        letters = sum(1 for ch in sample if unicodedata.category(ch).startswith("L"))
        if letters < self.min_letters:
            return Resolved(SIMPLE, None, "default")
        detector = self._build()
        values = detector.compute_language_confidence_values(sample)
        if not values:
            return Resolved(SIMPLE, None, "default")
        best = values[0]
        runner_up = values[1].value if len(values) > 1 else 0.0
        iso = self._iso_of.get(best.language)
        if iso is None or best.value < self.min_confidence or best.value < self.min_ratio * runner_up:
            return Resolved(SIMPLE, None, "default", best.value)
        return Resolved(self.catalog.codes[iso], iso, "detected", best.value)

    def resolve(self, explicit: str | None, text: str) -> Resolved:
        """Explicit code → that config; none → detection; unsure → 'simple'."""
        if explicit is not None and explicit.strip():
            return self.catalog.resolve_explicit(explicit)
        return self.detect(text)


def _load_lingua(codes: tuple[str, ...], high_accuracy: bool) -> tuple[Any, dict[Any, str], float]:
    from lingua import IsoCode639_1, Language, LanguageDetectorBuilder

    iso_of: dict[Any, str] = {}
    for iso in codes:
        code = getattr(IsoCode639_1, iso.upper(), None)
        if code is None:
            continue
        try:
            lang = Language.from_iso_code_639_1(code)
        except ValueError:
            continue
        iso_of.setdefault(lang, iso)
    started = time.perf_counter()
    builder = LanguageDetectorBuilder.from_languages(*iso_of).with_preloaded_language_models()
    # High accuracy costs ~3 s and ~650 MB for these 26 languages; low-accuracy mode
    # (trigrams only, ~0.1 s, ~40 MB) is confidently wrong on short sentences.
    if not high_accuracy:
        builder = builder.with_low_accuracy_mode()
    detector = builder.build()
    seconds = time.perf_counter() - started
    log.info("language detector loaded: %d languages in %.2f s", len(iso_of), seconds)
    return detector, iso_of, seconds
