"""Languages: ISO 639-1 codes ↔ PostgreSQL text-search configs, and how a detection becomes one."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

# Thresholds live beside the detectors that apply them; re-exported for the app and the worker.
from pgrecall.domain.detection import Detection
from pgrecall.domain.detection import Thresholds as Thresholds
from pgrecall.errors import InvalidInputError

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


DetectBackend = Callable[[str], Detection]
"""Detects one text's language among the catalog's codes (in this process, or in the model worker)."""


def in_process_backend(catalog: LanguageCatalog, thresholds: Thresholds, kind: str = "full") -> DetectBackend:
    """Detection in this process (lingua's models load on the first detection)."""
    from pgrecall.domain.detectors import make_detector

    return make_detector(kind, catalog.supported_codes(), thresholds).detect


class LanguageDetector:
    """Turns a detection (from a backend) into the regconfig an entry is stemmed with."""

    def __init__(self, catalog: LanguageCatalog, backend: DetectBackend) -> None:
        self.catalog = catalog
        self._backend = backend

    def detect(self, text: str) -> Resolved:
        """Best stemmable language of `text`, or 'simple' when too short or unsure."""
        found = self._backend(text)
        if found.iso is None or found.iso not in self.catalog.codes:
            return Resolved(SIMPLE, None, "default", found.confidence)
        return Resolved(self.catalog.codes[found.iso], found.iso, "detected", found.confidence)

    def resolve(self, explicit: str | None, text: str) -> Resolved:
        """Explicit code → that config; none → detection; unsure → 'simple'."""
        if explicit is not None and explicit.strip():
            return self.catalog.resolve_explicit(explicit)
        return self.detect(text)
