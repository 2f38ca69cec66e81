"""Languages: ISO 639-1 codes ↔ PostgreSQL text-search configs, and how a detection becomes one."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass

from pgrecall.errors import InvalidInputError

SIMPLE = "simple"


@dataclass(frozen=True)
class Detection:
    """A detected ISO 639-1 code among the detector's codes, or None ('simple': too short or unsure)."""

    iso: str | None
    confidence: float | None


@dataclass(frozen=True)
class Thresholds:
    """When a detection is trusted: enough letters, enough confidence, a clear margin over the runner-up."""

    min_letters: int = 20
    min_confidence: float = 0.2
    min_ratio: float = 1.2
    max_chars: int = 2000

    def as_dict(self) -> dict[str, int | float]:
        """JSON-ready form (the model worker's `detect` requests carry it)."""
        return {
            "min_letters": self.min_letters,
            "min_confidence": self.min_confidence,
            "min_ratio": self.min_ratio,
            "max_chars": self.max_chars,
        }

    def sample(self, text: str) -> str | None:
        """The part of `text` a detector reads, or None when it has too few letters to detect."""
        sample = text[: self.max_chars]
        letters = sum(1 for ch in sample if unicodedata.category(ch).startswith("L"))
        return sample if letters >= self.min_letters else None

    def trusted(self, best: float, runner_up: float) -> bool:
        """True if the best language is confident enough and clear enough of the runner-up."""
        return best >= self.min_confidence and best >= self.min_ratio * runner_up


DEFAULT_THRESHOLDS = Thresholds()

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
    # Malay and Indonesian are two standard forms of one language with one affix system (meN-, ber-,
    # di-, -kan, -an, -nya…), which the Indonesian Snowball stemmer strips; lingua tells them apart
    # only by vocabulary, so long Indonesian texts often come out Malay.
    "ms": "indonesian",
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
    # Croatian and Bosnian share Serbian's inflection, and the Serbian Snowball stemmer reads Latin
    # script and folds ijekavian forms into ekavian ones (promjene, promene → promen); lingua's Serbian
    # model knows Cyrillic only, so a Latin text of any of the three is detected as Croatian.
    "hr": "serbian",
    "bs": "serbian",
    "es": "spanish",
    "sv": "swedish",
    "ta": "tamil",
    "tr": "turkish",
    "yi": "yiddish",
}
# The code reported for a config (norwegian has two codes; report the Bokmål one).
CONFIG_TO_ISO: dict[str, str] = {cfg: iso for iso, cfg in reversed(list(ISO_TO_CONFIG.items()))}

# Every ISO 639-1 code: a caller naming a real language we cannot stem gets 'simple' and is told
# so; a code outside this list is a mistake and still refused.
_ISO_639_1_CODES = """
    aa ab ae af ak am an ar as av ay az ba be bg bi bm bn bo br bs ca ce ch co cr cs cu cv cy da de dv dz
    ee el en eo es et eu fa ff fi fj fo fr fy ga gd gl gn gu gv ha he hi ho hr ht hu hy hz ia id ie ig ii ik
    io is it iu ja jv ka kg ki kj kk kl km kn ko kr ks ku kv kw ky la lb lg li ln lo lt lu lv mg mh mi mk ml
    mn mr ms mt my na nb nd ne ng nl nn no nr nv ny oc oj om or os pa pi pl ps pt qu rm rn ro ru rw sa sc sd
    se sg si sk sl sm sn so sq sr ss st su sv sw ta te tg th ti tk tl tn to tr ts tt tw ty ug uk ur uz ve vi
    vo wa wo xh yi yo za zh zu"""
ISO_639_1 = frozenset(_ISO_639_1_CODES.split())

# Languages PostgreSQL has no config for whose text the store segments itself: migration 0017 indexes
# every Han, kana and Hangul run as overlapping character bigrams (in 'simple', unstemmed), and the
# search segments queries the same way, so their words are found inside unspaced text. Stored as
# 'simple' with the language recorded, without the "unsupported" note.
SEGMENTED = frozenset({"ja", "zh", "ko"})

# Scripts whose languages PostgreSQL ships no config for. The regexes match runs, not single
# characters (a few matches per text, summed by length, in C), over a bounded sample: the check
# costs well under a millisecond on every write and never needs lingua.
SCRIPT_SAMPLE_CHARS = 2000
_KANA_CHARS = r"\u3040-\u30ff\u31f0-\u31ff\uff66-\uff9d"
_HAN_CHARS = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f"
_HANGUL_CHARS = r"\u1100-\u11ff\u3130-\u318f\ua960-\ua97f\uac00-\ud7af"
_KANA = re.compile(f"[{_KANA_CHARS}]+")
_HAN = re.compile(f"[{_HAN_CHARS}]+")
_HANGUL = re.compile(f"[{_HANGUL_CHARS}]+")
# A run of Han, kana and Hangul (with the iteration marks 々〆〇), as migration 0017 bigrams them.
CJK_RUN = re.compile(f"[\u3005-\u3007{_KANA_CHARS}{_HAN_CHARS}{_HANGUL_CHARS}]+")
_THAI = re.compile(r"[\u0e01-\u0e3a\u0e40-\u0e4e]+")
_LETTER = re.compile(r"[^\W\d_]+")
# One Han, kana or Hangul character carries about as much as three Latin letters: a Japanese note
# full of English product names is still Japanese, an English sentence quoting one word is not.
_IDEOGRAPH_WEIGHT = 3


def _chars(pattern: re.Pattern[str], text: str) -> int:
    return sum(map(len, pattern.findall(text)))


def unstemmable_script(text: str) -> str | None:
    """ISO code (ja, zh, ko, th) when the text is mostly written in one of their scripts, else None.

    Han without any kana is reported as Chinese: a Japanese text with no kana at all is rare.
    """
    sample = text[:SCRIPT_SAMPLE_CHARS]
    kana, han, hangul, thai = (_chars(pattern, sample) for pattern in (_KANA, _HAN, _HANGUL, _THAI))
    if not (kana or han or hangul or thai):
        return None
    others = max(_chars(_LETTER, sample) - kana - han - hangul - thai, 0)
    weights = {
        ("ja" if kana else "zh"): _IDEOGRAPH_WEIGHT * (kana + han),
        "ko": _IDEOGRAPH_WEIGHT * hangul,
        "th": thai,
    }
    best = max(weights, key=lambda iso: weights[iso])
    return best if weights[best] >= others else None


def unsupported_note(iso: str) -> str | None:
    """What storing an unstemmable language as 'simple' means, in one line (None: segmented, ja/zh/ko)."""
    if iso in SEGMENTED:
        return None
    return f"{iso} has no text-search config on this server; stored as simple (exact-word matching only)"


def unstemmed(iso: str, how: str) -> Resolved:
    """A language this server cannot stem, stored as 'simple': segmented (ja, zh, ko) or unsupported."""
    if iso in SEGMENTED:
        return Resolved(SIMPLE, iso, how, detected=iso)
    return Resolved(SIMPLE, None, "unsupported", detected=iso)


@dataclass(frozen=True)
class Resolved:
    """The regconfig an entry is stemmed with, and how it was chosen."""

    regconfig: str
    iso: str | None
    how: str  # "explicit" | "detected" | "default" | "unsupported" | "kept"
    confidence: float | None = None
    # The language found (or given) when this server cannot stem it: regconfig is then 'simple'.
    detected: str | None = None

    @property
    def note(self) -> str | None:
        """Why a recognised language is stored unstemmed, or None."""
        return unsupported_note(self.detected) if self.detected is not None else None


class LanguageCatalog:
    """The text-search configs this server has (store.catalog reads them once from pg_ts_config)."""

    def __init__(self, config_names: set[str]) -> None:
        self.configs = frozenset(config_names)
        self.codes: dict[str, str] = {iso: cfg for iso, cfg in ISO_TO_CONFIG.items() if cfg in self.configs}

    def supported_codes(self) -> list[str]:
        """ISO codes a caller may pass, sorted."""
        return sorted(self.codes)

    def resolve_explicit(
        self, value: str, field: str = "language", *, omitted: str = "detect the language"
    ) -> Resolved:
        """An ISO 639-1 code (or a config name, or 'simple') → regconfig; unknown → InvalidInputError.

        `omitted`: what leaving the field out does, for the error (a filter does not detect).
        """
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
            f"or 'simple' (no stemming), or omit it to {omitted}",
        )

    def resolve_for_entry(self, value: str) -> Resolved:
        """Like resolve_explicit, but a real ISO 639-1 code without a config is stored as 'simple'.

        The caller knows the text's language: refusing the write would lose it, while storing it
        unstemmed and saying so (how='unsupported') keeps it and lets stats count it.
        """
        key = value.strip().lower()
        if key in ISO_639_1 and key not in self.codes and SIMPLE in self.configs:
            return unstemmed(key, "explicit")
        return self.resolve_explicit(value)

    def iso_for(self, regconfig: str) -> str | None:
        """ISO code of a regconfig (None for 'simple')."""
        return CONFIG_TO_ISO.get(regconfig)


DetectBackend = Callable[[str], Detection]
"""Detects one text's language among the catalog's codes (in this process, or in the model worker)."""


class LanguageDetector:
    """Turns a detection (from a backend) into the regconfig an entry is stemmed with."""

    def __init__(self, catalog: LanguageCatalog, backend: DetectBackend) -> None:
        self.catalog = catalog
        self._backend = backend

    def detect(self, text: str) -> Resolved:
        """Best stemmable language of `text`; 'simple' when unstemmable (said so), too short or unsure."""
        script = unstemmable_script(text)
        if script is not None and script not in self.catalog.codes:
            # No model needed (nor the worker woken): the script alone says we cannot stem it.
            return unstemmed(script, "detected")
        found = self._backend(text)
        if found.iso is None or found.iso not in self.catalog.codes:
            return Resolved(SIMPLE, None, "default", found.confidence)
        return Resolved(self.catalog.codes[found.iso], found.iso, "detected", found.confidence)

    def resolve(self, explicit: str | None, text: str) -> Resolved:
        """Explicit code → that config; none → detection; unsure or unstemmable → 'simple'."""
        if explicit is not None and explicit.strip():
            return self.catalog.resolve_for_entry(explicit)
        return self.detect(text)
