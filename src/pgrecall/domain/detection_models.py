"""lingua's models, loaded only as needed and within a budget.

lingua keeps one model cache per language for the whole process. Low-accuracy mode reads only the
trigram models (~1 MB a language); high-accuracy mode adds uni-, bi-, quadri- and fivegram models
(~23 MB a language once loaded, and about twice that while loading). `LinguaModels` runs both modes
and keeps at most `budget` languages' high-accuracy models resident: the languages used most often
stay, a rare rival is loaded for the text that needs it and unloaded afterwards. glibc keeps freed
model memory in its arenas, so after unloading we ask it to give that memory back to the system.

All lingua calls go through one lock: an unload must never run while another thread computes.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import threading
from collections import Counter
from collections.abc import Iterable
from functools import cache
from typing import Any

# High-accuracy models a process keeps between texts. Measured on stores of the tune half (300 texts per
# language, short texts always reaching high accuracy): en+de ends at ~128 MB with budget 0, ~151 MB with
# 1 and ~171 MB with 2. Repeated loading fragments the heap, so each resident language costs more than its
# ~23 MB. 1 keeps a store's main language loaded at about the 150 MB target; 2 would be ~20 MB over it.
DEFAULT_BUDGET = 1


@cache
def _malloc_trim() -> Any:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return libc.malloc_trim
    except (OSError, AttributeError):  # not glibc: nothing to trim
        return None


def release_freed_memory() -> None:
    """Return memory freed by unloaded models to the system (glibc only; a no-op elsewhere)."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


def iso_of(language: Any) -> str:
    """lingua Language → ISO 639-1 code in lower case."""
    return str(language.iso_code_639_1.name).lower()


@cache
def _languages() -> dict[str, Any]:
    from lingua import Language

    return {iso_of(lang): lang for lang in Language.all()}


def lingua_codes() -> frozenset[str]:
    """ISO codes of every language lingua knows."""
    return frozenset(_languages())


def latin_codes() -> frozenset[str]:
    """ISO codes of the languages lingua knows that are written in Latin script."""
    from lingua import Language

    return frozenset(iso_of(lang) for lang in Language.all_with_latin_script())


class LinguaModels:
    """Low-accuracy detection over fixed languages, high-accuracy detection over any few, in a budget."""

    def __init__(self, low_languages: Iterable[str], budget: int = DEFAULT_BUDGET) -> None:
        self.low_languages = frozenset(low_languages)
        self.budget = budget
        self._lock = threading.Lock()
        self._low: Any = None
        self._detectors: dict[frozenset[str], Any] = {}
        self._resident: dict[str, None] = {}  # high-accuracy languages loaded, least recent first
        self._uses: Counter[str] = Counter()
        self.loads = 0
        self.unloads = 0

    def _build(self, codes: Iterable[str], *, low: bool = False) -> Any:
        from lingua import LanguageDetectorBuilder

        builder = LanguageDetectorBuilder.from_languages(*(_languages()[c] for c in sorted(codes)))
        return (builder.with_low_accuracy_mode() if low else builder).build()

    def low_accuracy(self, text: str) -> list[tuple[str, float]]:
        """(code, confidence) over the low-accuracy languages, best first (trigram models only)."""
        with self._lock:
            if self._low is None:
                self._low = self._build(self.low_languages, low=True)
            values = self._low.compute_language_confidence_values(text)
        return [(iso_of(v.language), float(v.value)) for v in values]

    def high_accuracy(self, text: str, codes: Iterable[str]) -> list[tuple[str, float]]:
        """(code, confidence) over `codes` in high-accuracy mode, best first; stays within the budget."""
        wanted = frozenset(codes)
        if len(wanted) < 2:
            raise ValueError("high-accuracy detection needs two languages or more")
        with self._lock:
            detector = self._detectors.get(wanted)
            if detector is None:
                detector = self._detectors[wanted] = self._build(wanted)
            values = detector.compute_language_confidence_values(text)
            for code in sorted(wanted):
                self._uses[code] += 1
                if code not in self._resident:
                    self.loads += 1
                self._resident.pop(code, None)
                self._resident[code] = None
            self._evict()
        return [(iso_of(v.language), float(v.value)) for v in values]

    def _evict(self) -> None:
        excess = len(self._resident) - self.budget
        if excess <= 0:
            return
        # Least used first, least recent among equals: a store's own languages outlive rare rivals.
        order = {code: i for i, code in enumerate(self._resident)}
        victims = sorted(self._resident, key=lambda c: (self._uses[c], order[c]))[:excess]
        for code in victims:
            # A one-language detector never loads models, but unloading through it frees them.
            self._build([code]).unload_language_models()
            del self._resident[code]
            self.unloads += 1
        release_freed_memory()

    def resident(self) -> list[str]:
        """Languages whose high-accuracy models are loaded now."""
        with self._lock:
            return sorted(self._resident)

    def set_budget(self, budget: int) -> None:
        """Change how many languages' high-accuracy models may stay loaded."""
        with self._lock:
            self.budget = max(budget, 0)
            self._evict()
