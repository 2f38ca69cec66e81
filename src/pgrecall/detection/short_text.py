"""Language detection that is right on short texts and small: lingua twice, loading only what it needs.

Non-Latin scripts go through the script rules of first_stage (alphabets, function words), which
decide alone or name a few candidates. Latin-script texts go to lingua in low-accuracy mode over every
Latin-script language it knows (trigram models only, ~1 MB a language); its `STAGE1_CANDIDATES` best
languages are the candidates, joined by the languages whose PostgreSQL stop words the text holds most
(`stopword_languages`). When a text of `SHORTCUT_MIN_WORDS` words or more has a best candidate
holding `OVERWHELMING` of their confidence and its stop words name no other language, it is the
answer; otherwise lingua decides in high-accuracy mode over those candidates only, so a process loads
the high-accuracy models (~23 MB each) of the languages its texts are written in and of their closest
rivals, keeping `models.DEFAULT_BUDGET` of them loaded between bursts of writes.

Languages that share a stemmer are one candidate (`SAME_STEMMER`: Malay counts as Indonesian, Bosnian
as Croatian, and Croatian is stemmed as Serbian, whose lingua model knows Cyrillic only).
Languages we cannot stem (Nynorsk, Polish, Galician…) are candidates so that their texts are not given a
stemmable neighbour, but their confidence counts `LOOKALIKE_WEIGHT` times: close calls go to the
language we can stem, as lingua over the stemmable languages alone would have decided. Thresholds
mean what they mean in pgrecall.language: fewer than `min_letters` letters, or a best language below
`min_confidence` or not `min_ratio` times the runner-up, gives None ('simple').
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable

from pgrecall.detection.first_stage import first_stage
from pgrecall.detection.models import LinguaModels, latin_codes, lingua_codes
from pgrecall.detection.stopwords import LATIN_STOPWORDS
from pgrecall.domain.language import DEFAULT_THRESHOLDS, Detection, Thresholds

# Stemmable languages lingua knows (pgrecall.language.ISO_TO_CONFIG less 'ne', 'yi' and 'no' = 'nb').
UNSURE = Detection(None, None)  # too short or unsure: the entry is stored unstemmed

STEMMABLE = frozenset(
    ["ar", "hy", "eu", "ca", "da", "nl", "en", "et", "fi", "fr", "de", "el", "hi", "hu", "id", "ga", "it",
     "lt", "nb", "pt", "ro", "ru", "sr", "hr", "es", "sv", "ta", "tr"]
)  # fmt: skip
# Codes whose texts one stemmer serves, and the code their confidences are pooled under: which of the
# two lingua prefers does not change how a text is stemmed, so it must not make a text 'simple' either.
SAME_STEMMER = {"ms": "id", "bs": "hr"}
# Chosen on two folds of the 'tune' half (catalogues split by hash) as the settings that beat the baseline
# on short stemmable texts in both folds, right and wrong alike (benchmarks/detection_tune.py):
# fold 0 90.9% right / 4.1% wrong against 86.8 / 6.1, fold 1 91.0 / 4.5 against 89.7 / 5.2. Trigrams alone
# decide only texts of `SHORTCUT_MIN_WORDS` words or more; a short text always gets high accuracy.
STAGE1_CANDIDATES = 3
OVERWHELMING = 0.995
SHORTCUT_MIN_WORDS = 13
LOOKALIKE_WEIGHT = 0.5
# From SHORTCUT_MIN_WORDS words on, high accuracy separates real languages well, and what is left
# between a stemmable language and its unstemmable look-alike (id/ms, nb/nn) is mostly a close call
# that the stemmable one's stemmer serves: its look-alikes count less. On both tune folds 0.1 beat
# the baseline on long stemmable texts (+0.2 and +1.2 points right, −2.8 and −1.2 wrong) where 0.5
# lost 0.6 points on one fold.
LONG_LOOKALIKE_WEIGHT = 0.1
# Look-alikes that keep their whole confidence: Slovenian beside Croatian (stemmed as Serbian). A close
# call between them is not one the Serbian stemmer serves: down-weighted, Slovenian texts went to
# Croatian; at full weight they stay unstemmed, at the price of a few Croatian and Bosnian short texts
# left `simple` (docs/languages.md).
FULL_WEIGHT_LOOKALIKES = frozenset({"sl"})
# Function words: the languages whose PostgreSQL stop words the text holds most (at least
# STOPWORD_MIN_HITS, and half the best one's) join the trigram candidates, at most STOPWORD_CANDIDATES.
# Trigrams alone ranked German 8th for "Die Häuser am See sind im Winter kalt und still."
# One function word is enough to make its language a candidate (never the answer by itself): Debian's
# synopses ("Dokumentation zu yacas", "Audio-Dateien für GNOME") hold one, and trigrams missed their
# language (benchmarks/ddtp_devset.py; tuned on the tune halves of both dev sets).
STOPWORD_CANDIDATES = 2
# On short texts high accuracy alone often weighs a neighbour's trigrams above the function words that
# name the language ("Servidor de estado del sistema": Portuguese; "greffon Markdown pour Geany":
# English): among the candidates that have a stop-word list, each stop word of a language multiplies
# its confidence by 1 + STOPWORD_PRIOR. Chosen on the tune halves of both dev sets: a stronger prior
# suits synopses, whose languages all have a list, and is no gain where most languages have none
# (docs/languages.md, "What the tuning changed").
STOPWORD_PRIOR = 2.0
STOPWORD_MIN_HITS = 1
# A short text without a single function word ("PipeWire libcamera plugin", "magical config file
# parser") is judged on names and jargon alone. Trigrams then miss its language more often, so they name
# more candidates; and its best language must be `BARE_RATIO` times as likely as the runner-up instead of
# the thresholds' ratio, or it stays `simple`: a name's trigrams are weak evidence of a stemmer.
# Chosen on the tune halves of both dev sets (docs/languages.md, "What the tuning changed").
BARE_CANDIDATES = 5
BARE_RATIO = 2.0
_WORD = re.compile(r"\w+")

_MODELS: LinguaModels | None = None
_MODELS_LOCK = threading.Lock()


def lingua_models() -> LinguaModels:
    """The process-wide lingua models (lingua caches its models per process, so must we)."""
    global _MODELS
    with _MODELS_LOCK:
        if _MODELS is None:
            _MODELS = LinguaModels(latin_codes())
        return _MODELS


def word_count(text: str) -> int:
    """Whitespace-separated tokens holding a letter (as the dev set counts words)."""
    return sum(1 for token in text.split() if any(ch.isalpha() for ch in token))


def stopword_hits(sample: str) -> dict[str, int]:
    """How many of `sample`'s words are stop words of each Latin-script language PostgreSQL stems."""
    words = [w.lower() for w in _WORD.findall(sample)]
    return {code: sum(w in stops for w in words) for code, stops in LATIN_STOPWORDS.items()}


def stopword_languages(sample: str, hits: dict[str, int] | None = None) -> list[str]:
    """Languages whose stop words `sample` holds most: at least STOPWORD_MIN_HITS and half the best."""
    hits = stopword_hits(sample) if hits is None else hits
    best = max(hits.values(), default=0)
    floor = max(STOPWORD_MIN_HITS, (best + 1) // 2)
    ranked = sorted((code for code, n in hits.items() if n >= floor), key=lambda c: (-hits[c], c))
    return ranked[:STOPWORD_CANDIDATES]


def with_stopword_prior(found: list[tuple[str, float]], hits: dict[str, int]) -> list[tuple[str, float]]:
    """High-accuracy confidences, the share of the languages with a stop-word list redistributed by it.

    Each such language's confidence is multiplied by 1 + STOPWORD_PRIOR per stop word of its own that
    the text holds, then together they get back the share they had. Languages without a list here
    (PostgreSQL has none for Catalan or Romanian, and none for the languages it cannot stem) keep
    theirs: the prior must not push their texts to a neighbour that has one.
    """
    listed = {c: v for c, v in found if c in LATIN_STOPWORDS}
    boosted = {c: v * (1.0 + STOPWORD_PRIOR * hits.get(c, 0)) for c, v in listed.items()}
    total = sum(boosted.values())
    if total <= 0:
        return found
    mass = sum(listed.values())
    return [(c, mass * boosted[c] / total if c in boosted else v) for c, v in found]


def pooled_by_stemmer(values: Iterable[tuple[str, float]]) -> dict[str, float]:
    """Confidences summed per stemmer (`SAME_STEMMER`), under the code the stemmer is reported by."""
    pooled: dict[str, float] = {}
    for code, value in values:
        code = SAME_STEMMER.get(code, code)
        pooled[code] = pooled.get(code, 0.0) + value
    return pooled


def _weighted(values: Iterable[tuple[str, float]], lookalike: float) -> list[tuple[str, float]]:
    """Confidences pooled per stemmer, look-alikes down-weighted, renormalised, best first."""
    scored = {
        code: v * (1.0 if code in STEMMABLE or code in FULL_WEIGHT_LOOKALIKES else lookalike)
        for code, v in pooled_by_stemmer(values).items()
    }
    total = sum(scored.values())
    if total <= 0:
        return []
    return sorted(((code, v / total) for code, v in scored.items()), key=lambda kv: (-kv[1], kv[0]))


class ShortTextDetector:
    """Two-stage detector over the stemmable languages `codes`; thread-safe, models loaded lazily."""

    def __init__(
        self,
        codes: Iterable[str],
        thresholds: Thresholds = DEFAULT_THRESHOLDS,
    ) -> None:
        wanted = {c.strip().lower() for c in codes}
        # 'no' and 'nb' are both Norwegian Bokmål; report the code the caller gave (nb first).
        self._norwegian = "nb" if "nb" in wanted else ("no" if "no" in wanted else None)
        self.codes = frozenset("nb" if c == "no" else c for c in wanted)
        self.thresholds = thresholds

    def _report(self, iso: str | None, confidence: float | None) -> Detection:
        if iso is None or iso not in self.codes:
            return Detection(None, confidence)
        if iso == "nb" and self._norwegian is not None:
            iso = self._norwegian
        return Detection(iso, confidence)

    def _decide(self, ranked: list[tuple[str, float]], ratio: float = 0.0) -> Detection:
        """The best of `ranked` if the thresholds trust it and it is `ratio` times the runner-up."""
        if not ranked:
            return UNSURE
        iso, best = ranked[0]
        runner_up = ranked[1][1] if len(ranked) > 1 else 0.0
        if not self.thresholds.trusted(best, runner_up) or best < ratio * runner_up:
            return Detection(None, best)
        return self._report(iso, best)

    def detect(self, text: str) -> Detection:
        """Best language of `text` among `codes`, or None when too short, unsure, or another language."""
        sample = self.thresholds.sample(text)
        if sample is None:
            return UNSURE
        stage = first_stage(sample)
        models = lingua_models()
        words = word_count(sample)
        lookalike = LONG_LOOKALIKE_WEIGHT if words >= SHORTCUT_MIN_WORDS else LOOKALIKE_WEIGHT
        if stage.latin:
            hits = stopword_hits(sample)
            bare = words < SHORTCUT_MIN_WORDS and not any(hits.values())
            wanted = BARE_CANDIDATES if bare else STAGE1_CANDIDATES
            ranked = _weighted(models.low_accuracy(sample)[: max(wanted, 8)], lookalike)
            candidates = [code for code, _ in ranked[:wanted]]
            if not candidates:
                return UNSURE
            extra = [c for c in stopword_languages(sample, hits) if c not in candidates]
            if extra:
                candidates += extra
            elif len(candidates) == 1 or (
                words >= SHORTCUT_MIN_WORDS
                and ranked[0][1] >= OVERWHELMING * sum(v for _, v in ranked[:STAGE1_CANDIDATES])
            ):
                top = ranked[:STAGE1_CANDIDATES]
                total = sum(v for _, v in top)
                return self._decide([(c, v / total) for c, v in top])
        elif not stage.candidates:
            return self._report(stage.decided, stage.confidence)
        else:
            candidates = [c for c in stage.candidates if c in lingua_codes()]
            if len(candidates) < 2:
                return self._report(candidates[0], None) if candidates else UNSURE
            return self._decide(_weighted(models.high_accuracy(sample, candidates), lookalike))
        found = models.high_accuracy(sample, candidates)
        if bare:
            return self._decide(_weighted(found, lookalike), BARE_RATIO)
        if words < SHORTCUT_MIN_WORDS:
            found = with_stopword_prior(found, hits)
        return self._decide(_weighted(found, lookalike))

    def loaded_languages(self) -> list[str]:
        """ISO codes whose high-accuracy lingua models this process holds now."""
        return lingua_models().resident()
