"""lingua's models, loaded only as needed and within a budget.

lingua keeps one model cache per language for the whole process. Low-accuracy mode reads only the
trigram models (~1 MB a language); high-accuracy mode adds uni-, bi-, quadri- and fivegram models
(up to ~22 MB a language once loaded, and tens of MB more while loading). `LinguaModels` runs both
modes and keeps `budget` languages' high-accuracy models resident between bursts: the languages used
most often stay. A rival loaded for one text lingers `linger` seconds after its last use (at most
`ceiling` languages in all, room made before a load), so a burst of writes whose texts meet the same
rivals loads each of them once instead of loading and unloading two models per text; once the burst
is over they are unloaded. With a resident limit (the detection process's), a load first unloads
lingering rivals until the process's size, the models to load and the buffers lingua fills while
loading them (`load_peaks`) fit under it; a text's models load one language at a time, so those
buffers are one language's. After a load or an unload, the process gives back what glibc and
lingua's library pages would keep (`process_memory`).

All lingua calls go through one lock: an unload must never run while another thread computes.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from functools import cache
from typing import Any

from pgrecall.detection.load_peaks import LOAD_MB
from pgrecall.detection.process_memory import (
    keep_large_allocations_out_of_the_heap,
    release_freed_memory,
    release_model_file_pages,
    resident_mb,
)

# High-accuracy models a process keeps between texts, rivals' linger over: a store's main language stays
# loaded; a second would leave less room for the rivals of a burst (docs/languages.md, "Memory").
DEFAULT_BUDGET = 1
# A burst of short technical notes meets a handful of rivals (Latin, Tagalog, Esperanto…); each one
# unloaded too early is loaded again for the next text that meets it, so rivals linger, as many as
# DEFAULT_CEILING languages. A cap in MB (`memory_mb`, counted per language as their models differ in
# size by more than half) bounds the process further, but is off by default: when a store's texts
# name more rivals than fit under it, every write loads a model again (a store of short English and
# German notes: 300 ms a write against 2 ms), a price no memory target is worth (docs/languages.md,
# "Memory").
DEFAULT_CEILING = 8
DEFAULT_MODEL_MEMORY_MB: float | None = None
# A language whose models have not loaded here yet counts as load_peaks measured it; one it does not
# know, as the largest there.
UNMEASURED_MODEL_MB = max(size for size, _ in LOAD_MB.values())
UNMEASURED_LOAD_PEAK_MB = max(peak for _, peak in LOAD_MB.values())
# A resident limit keeps this far below it for what the estimate misses (the low-accuracy stage
# reloading trigram models, the text's own allocations).
LOAD_MARGIN_MB = 6.0
# Languages whose detectors take a moment's 13-34 MB to build (the other Latin-script ones, < 1 MB).
COSTLY_TO_BUILD = frozenset({"az", "cs", "hu"})
# A short text in Latin script without a letter that narrows lingua's languages: loading a language's
# models on it loads what any short text would (load_peaks measured that).
LOAD_PROBE = "Note 3 on Winterreifen im Oktober and drag."
# lingua's high-accuracy mode reads its uni- to fivegram models only for texts of fewer letters than
# this (Unicode letters; digits, punctuation and spaces left out); longer ones it scores by their
# trigrams alone, as low-accuracy mode does.
HIGH_ACCURACY_MAX_LETTERS = 120
DEFAULT_LINGER_SECONDS = 30.0


def scored_by_trigrams_alone(text: str) -> bool:
    """Whether lingua's high-accuracy mode scores `text` by trigram models only (a long text)."""
    return sum(ch.isalpha() for ch in text) >= HIGH_ACCURACY_MAX_LETTERS


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
        memory_mb: float | None = DEFAULT_MODEL_MEMORY_MB,
        resident_mb: float | None = None,
        linger: float = DEFAULT_LINGER_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.low_languages = frozenset(low_languages)
        self.budget = budget
        self.ceiling = ceiling  # never below the budget: see _evict
        self.memory_mb = memory_mb
        # The process's resident MB a load must fit under (the detection process's target), or None.
        self.resident_mb = resident_mb
        self.linger = linger
        self._clock = clock
        keep_large_allocations_out_of_the_heap()
        self._lock = threading.Lock()
        self._low: Any = None
        self._detectors: dict[frozenset[str], Any] = {}
        self._resident: dict[str, float] = {}  # high-accuracy language → last use, least recent first
        self._uses: Counter[str] = Counter()
        self._sizes: dict[str, float] = {}  # language → MB the process grew by when it loaded
        self._timer: threading.Timer | None = None
        self._trigrams_reload = False  # an unload took low-accuracy trigram models along
        self.loads = 0
        self.unloads = 0
        self.trimmed = 0  # candidates left out for want of room
        self.trigram_texts = 0  # high-accuracy calls lingua scored by trigrams alone

    def _build(self, codes: Iterable[str], *, low: bool = False) -> Any:
        from lingua import LanguageDetectorBuilder

        builder = LanguageDetectorBuilder.from_languages(*(_languages()[c] for c in sorted(codes)))
        return (builder.with_low_accuracy_mode() if low else builder).build()

    def low_accuracy(self, text: str) -> list[tuple[str, float]]:
        """(code, confidence) over the low-accuracy languages, best first (trigram models only)."""
        with self._lock:
            first = self._low is None
            if first:
                self._low = self._build(self.low_languages, low=True)
            values = self._low.compute_language_confidence_values(text)
            # The trigram models loaded on first use, and those an unload took along load again.
            if first or self._trigrams_reload:
                self._trigrams_reload = False
                release_freed_memory()
                release_model_file_pages()
        return [(iso_of(v.language), float(v.value)) for v in values]

    def high_accuracy(self, text: str, codes: Iterable[str]) -> list[tuple[str, float]]:
        """(code, confidence) over `codes` in high-accuracy mode, best first; stays within the budget.

        `codes` best first: should the process have no room for all their models, the last of those
        not loaded yet are left out (never below two languages).
        """
        ordered = list(dict.fromkeys(codes))
        if len(ordered) < 2:
            raise ValueError("high-accuracy detection needs two languages or more")
        with self._lock:
            if scored_by_trigrams_alone(text):
                # No model of lingua's high-accuracy mode is read: nothing to load, nothing to count.
                values = self._detector(frozenset(ordered)).compute_language_confidence_values(text)
                self.trigram_texts += 1
                return [(iso_of(v.language), float(v.value)) for v in values]
            # Room first: the ceiling and the memory hold while the new models load, not only once
            # they have.
            wanted = self._make_room(ordered)
            incoming = [code for code in ordered if code in wanted and code not in self._resident]
            if incoming:
                self._load(text, incoming)
            values = self._detector(wanted).compute_language_confidence_values(text)
            now = self._clock()
            for code in sorted(wanted):
                self._uses[code] += 1
                self._resident.pop(code, None)
                self._resident[code] = now
            self._evict()
        return [(iso_of(v.language), float(v.value)) for v in values]

    def _detector(self, codes: frozenset[str]) -> Any:
        detector = self._detectors.get(codes)
        if detector is None:
            detector = self._detectors[codes] = self._build(codes)
        return detector

    def _load(self, text: str, incoming: list[str]) -> None:
        """Load the high-accuracy models of `incoming`, one language at a time (lock held).

        One at a time, the process grows by one load's buffers at most on top of the models, and each
        size is measured alone. Each loads through a detector of it and a language already loaded, as
        a short text loads them (a detector preloading one language's models takes 3-7 MB more):
        Latin-script languages on `LOAD_PROBE`, which no rule of lingua's narrows to fewer
        languages (a text's accented letters may, and its detector would load, later, what it
        left out here); the others, on the text, in their script.
        """
        from lingua import LanguageDetectorBuilder

        latin = latin_codes()
        loaded = list(self._resident)
        for code in self._load_order(incoming):
            kind = code in latin
            anchor = next((c for c in reversed(loaded) if (c in latin) == kind), None)
            before = resident_mb()
            if anchor is None:
                builder = LanguageDetectorBuilder.from_languages(_languages()[code])
                builder.with_preloaded_language_models().build()
            else:
                self._build([anchor, code]).compute_language_confidence_values(LOAD_PROBE if kind else text)
            # Loading leaves freed blocks below the mmap threshold in the heap: give them back before
            # measuring, so that sizes count the models only.
            release_freed_memory()
            release_model_file_pages()
            self._sizes[code] = max(self._sizes.get(code, 0.0), resident_mb() - before)
            self.loads += 1
            loaded.append(code)

    def _make_room(self, ordered: list[str]) -> frozenset[str]:
        """Unload what a text's models need room for (lock held); the languages that fit, best first.

        Past the ceiling or the cap on the models' MB, and, with a resident limit, until the
        process's size now, the models still to load and their load's peak fit under it. When
        they do not fit even with every rival gone, the last of the languages still to load are
        left out.
        """
        wanted = frozenset(ordered)
        self._evict(keep=wanted)
        if self.resident_mb is None:
            return wanted
        while len(wanted) > 2:
            incoming = wanted - self._resident.keys()
            if not incoming or self._expected_peak(incoming) <= self.resident_mb - LOAD_MARGIN_MB:
                break
            dropped = next(c for c in reversed(ordered) if c in incoming)
            wanted -= {dropped}
            self.trimmed += 1
        return wanted

    def _load_order(self, incoming: Iterable[str]) -> list[str]:
        """The order `_load` loads languages in: the largest peak first."""
        return sorted(incoming, key=lambda c: (-self._load_peak(c), c))

    def _expected_peak(self, incoming: Iterable[str]) -> float:
        """The process's size at the peak of loading `incoming` now, one language after another."""
        grown, peak = 0.0, 0.0
        for code in self._load_order(incoming):
            peak = max(peak, grown + self._load_peak(code))
            grown += self._size(code)
        return resident_mb() + peak

    def load_peak_mb(self, codes: Iterable[str]) -> float:
        """What the process would hold at the peak of loading the high-accuracy models of `codes`
        it lacks now (MiB; its size now if it lacks none)."""
        with self._lock:
            return self._expected_peak(set(codes) - self._resident.keys())

    def _load_peak(self, code: str) -> float:
        return LOAD_MB[code][1] if code in LOAD_MB else UNMEASURED_LOAD_PEAK_MB

    def _evict(self, keep: frozenset[str] = frozenset()) -> None:
        """Unload past the ceiling or the memory now, past the budget what lingered long enough (lock held).

        `keep`: languages about to be used, which stay, and whose models still to load count as resident;
        before a load only the ceiling and the memory unload.
        """
        incoming = keep - self._resident.keys()
        now = self._clock()
        # Least used first, least recent among equals: a store's own languages outlive rare rivals.
        order = {code: i for i, code in enumerate(self._resident)}
        by_use = sorted(self._resident, key=lambda c: (self._uses[c], order[c]))
        ranked = [c for c in by_use if c not in keep]
        count = len(self._resident) + len(incoming)
        memory = sum(map(self._size, [*self._resident, *incoming]))
        # The process's size at the peak of the coming load, should nothing be unloaded before it.
        limit = None if not incoming or self.resident_mb is None else self.resident_mb - LOAD_MARGIN_MB
        peak = self._expected_peak(incoming) if limit is not None else 0.0
        main = set(by_use[len(by_use) - self.budget :]) if self.budget > 0 else set()
        victims: list[str] = []
        for code in ranked:
            # The budget's languages may always stay; a load unloads only what it must, as the
            # languages it brings count among the most used once it is done. The resident limit
            # never unloads the store's own languages (the budget's most used): a text that must
            # load rivals beside them leaves its least likely candidates out instead.
            over = (
                count > max(self.ceiling, self.budget)
                or (self.memory_mb is not None and count > self.budget and memory > self.memory_mb)
                or (limit is not None and code not in main and peak > limit)
            )
            lingered = not keep and count > self.budget and now - self._resident[code] >= self.linger
            if over or lingered:
                victims.append(code)
                count -= 1
                memory -= self._size(code)
                peak -= self._size(code)
        # Building a detector of Azerbaijani, Czech or Hungarian fills 13-34 MB of their slot for a
        # moment: those go last, once the others have given their memory back.
        for code in sorted(victims, key=lambda c: c in COSTLY_TO_BUILD):
            # A one-language detector never loads models, but unloading through it frees them, all
            # of them: lingua keeps one slot per language, so its trigram models go too and the
            # low-accuracy stage loads them again when a text needs them (~1 MB, ~8 ms).
            self._build([code]).unload_language_models()
            del self._resident[code]
            self.unloads += 1
            self._trigrams_reload = self._trigrams_reload or code in self.low_languages
            release_freed_memory()
        if len(self._resident) > self.budget:
            self._schedule(min(self._resident.values()) + self.linger - now)

    def _size(self, code: str) -> float:
        if code in self._sizes:
            return self._sizes[code]
        return LOAD_MB[code][0] if code in LOAD_MB else UNMEASURED_MODEL_MB

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

    def sizes(self) -> dict[str, float]:
        """MB the process grew by when each language's high-accuracy models last loaded (the most seen)."""
        with self._lock:
            return dict(self._sizes)

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
