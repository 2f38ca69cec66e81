"""lingua's models, loaded only as needed and within a budget.

lingua keeps one model cache per language for the whole process. Low-accuracy mode reads only the
trigram models (~1 MB a language); high-accuracy mode adds uni-, bi-, quadri- and fivegram models
(~23 MB a language once loaded, and about twice that while loading). `LinguaModels` runs both modes
and keeps `budget` languages' high-accuracy models resident between bursts: the languages used most
often stay. A rival loaded for one text lingers `linger` seconds after its last use (at most `ceiling`
languages in all), so a burst of writes whose texts meet the same rivals loads each of them once
instead of loading and unloading two models per text (~120 ms of CPU each time); once the burst is
over they are unloaded. glibc keeps freed model memory in its arenas, so after unloading we ask it to
give that memory back to the system.

All lingua calls go through one lock: an unload must never run while another thread computes.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from functools import cache
from typing import Any

# High-accuracy models a process keeps between texts. Measured on stores of the tune half (300 texts per
# language, short texts always reaching high accuracy): en+de ends at ~128 MB with budget 0, ~151 MB with
# 1 and ~171 MB with 2. Repeated loading fragments the heap, so each resident language costs more than its
# ~23 MB. 1 keeps a store's main language loaded at about the 150 MB target; 2 would be ~20 MB over it.
DEFAULT_BUDGET = 1
# A burst of short technical notes meets a handful of rivals (Latin, Tagalog, Esperanto…). On the load
# test's notes (benchmarks/detection_churn.py), CPU per text: 120 ms with none lingering, 30 ms with up to
# 6 resident, 14 ms with 8, 6 ms with 12 (peak RSS 312 / 389 / 409 / 468 MB; `full`: 0.7 ms, 825 MB).
# Eight in all while a burst lasts, back to the budget 30 s after the last text that used them.
DEFAULT_CEILING = 8
DEFAULT_LINGER_SECONDS = 30.0


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

    def __init__(
        self,
        low_languages: Iterable[str],
        budget: int = DEFAULT_BUDGET,
        *,
        ceiling: int = DEFAULT_CEILING,
        linger: float = DEFAULT_LINGER_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.low_languages = frozenset(low_languages)
        self.budget = budget
        self.ceiling = ceiling  # never below the budget: see _evict
        self.linger = linger
        self._clock = clock
        self._lock = threading.Lock()
        self._low: Any = None
        self._detectors: dict[frozenset[str], Any] = {}
        self._resident: dict[str, float] = {}  # high-accuracy language → last use, least recent first
        self._uses: Counter[str] = Counter()
        self._timer: threading.Timer | None = None
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
            now = self._clock()
            for code in sorted(wanted):
                self._uses[code] += 1
                if code not in self._resident:
                    self.loads += 1
                self._resident.pop(code, None)
                self._resident[code] = now
            self._evict()
        return [(iso_of(v.language), float(v.value)) for v in values]

    def _evict(self) -> None:
        """Unload past the ceiling now, past the budget what has lingered long enough (lock held)."""
        if len(self._resident) <= self.budget:
            return
        now = self._clock()
        # Least used first, least recent among equals: a store's own languages outlive rare rivals.
        order = {code: i for i, code in enumerate(self._resident)}
        ranked = sorted(self._resident, key=lambda c: (self._uses[c], order[c]))
        over_ceiling = max(len(self._resident) - max(self.ceiling, self.budget), 0)
        victims = ranked[:over_ceiling]
        for code in ranked[over_ceiling:]:
            if len(self._resident) - len(victims) <= self.budget:
                break
            if now - self._resident[code] >= self.linger:
                victims.append(code)
        for code in victims:
            # A one-language detector never loads models, but unloading through it frees them.
            self._build([code]).unload_language_models()
            del self._resident[code]
            self.unloads += 1
        if victims:
            release_freed_memory()
        if len(self._resident) > self.budget:
            self._schedule(min(self._resident.values()) + self.linger - now)

    def _schedule(self, delay: float) -> None:
        # One timer at a time: it evicts what lingered long enough, then re-arms while needed.
        if self._timer is not None and self._timer.is_alive():
            return
        self._timer = threading.Timer(max(delay, 0.0) + 0.05, self.reap)
        self._timer.daemon = True
        self._timer.start()

    def reap(self) -> None:
        """Unload the rivals that have lingered long enough (the timer calls this; so may a test)."""
        with self._lock:
            self._timer = None
            self._evict()

    def resident(self) -> list[str]:
        """Languages whose high-accuracy models are loaded now."""
        with self._lock:
            return sorted(self._resident)

    def set_budget(self, budget: int, *, linger: float | None = None) -> None:
        """Change how many languages' high-accuracy models stay loaded (and, if given, the linger)."""
        with self._lock:
            self.budget = max(budget, 0)
            if linger is not None:
                self.linger = max(linger, 0.0)
            self._evict()
