"""Word segmenters against character bigrams for Chinese, Japanese and Korean lexical search (a study).

    python benchmarks/cjk_segmenter.py [--json benchmarks/cjk_segmenter.json]

Issue 37, point 1 asks that unspaced text get a lexical representation that matches words inside it,
"bigrams, or a segmenter from a well-kept package — measure which is better". Migration 0017 ships
bigrams (Lucene CJKAnalyzer's rule). This study ranks the questions of debian-ja, debian-zh and
debian-ko with the bm25s reference of `pgrecall eval` (Lucene BM25, k1 1.5, b 0.75; every text
tokenized in its own language, English stemmed) and changes only how the Han, kana and Hangul runs of
the Chinese, Japanese and Korean texts become tokens:

- bigrams: `runner.cjk_bigram_tokens`, the reference itself (its figure must come out as in
  benchmarks/eval-cjk.json, or the study stops);
- words: the tokens a segmenter gives for the characters of those runs (two settings per language);
- words + bigrams: both lists, in one vocabulary, as one tsvector would hold them.

Text outside the runs (Latin words, digits) is tokenized exactly as the reference does in all three.
The segmenter reads the whole width-folded text, so it sees the context, and keeps only the tokens
that lie inside a run.

Segmenters (the best-kept package per language on PyPI, 2026-11):
- Japanese: SudachiPy with sudachidict-core, split mode A (shortest units) and C (named entities
  whole), each morpheme's normalized form (コンピュータ and コンピューター, ライブラリ and ライブラリー,
  okurigana and kanji variants fold to one token, which a question and an answer spell apart);
- Chinese: rjieba (jieba-rs), its default mode and its search mode (long words also as their
  dictionary sub-words);
- Korean: kiwipiepy, every morpheme, and content morphemes only (nouns, verb and adjective stems,
  adverbs, determiners, roots, Hanja: no particles, endings or suffixes), without its typo and
  multi-word dictionaries (its resident memory with them is recorded too).

Side checks, words only: Sudachi mode A with each morpheme's surface instead of its normalized form;
Kiwi's content morphemes with its typo and multi-word dictionaries loaded.

For each it records the tokenization speed (characters a second over the collection's CJK documents,
best of 3 timings of at least 0.5 s each, the variant's whole tokenizer), the installed size of its
packages (the files their RECORD lists; shared dependencies such as numpy left out) and the resident
memory it adds in a fresh process, once loaded (one sentence segmented) and after segmenting the
collection's CJK documents (a dictionary read through mmap becomes resident as it is used).

nDCG@10 comes from `runner.score` (ir-measures, as `pgrecall eval`); each variant is compared with
bigrams question by question (better, worse, and a two-sided paired sign-flip test of the mean
difference, 10 000 rounds, fixed seed, as benchmarks/fusion_normalisation.py does).

The segmenters are declared in the `cjk-study` extra only (`pip install -e '.[bench,cjk-study]'`);
nothing in the product uses them.
"""

from __future__ import annotations

import argparse
import bisect
import importlib.metadata
import importlib.util
import json
import logging
import math
import random
import statistics
import subprocess
import sys
import time
import unicodedata
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pgrecall.config import Settings
from pgrecall.domain.entries import embedding_text
from pgrecall.domain.language import CJK_RUN, SEGMENTED
from pgrecall.domain.validation import InvalidInputError, check_body, check_title
from pgrecall.evaluation import record, runner
from pgrecall.evaluation.dataset import BeirDataset, load_dataset

HERE = Path(__file__).resolve().parent
EXTRA = "cjk-study"
COLLECTIONS = {"ja": "debian-ja", "zh": "debian-zh", "ko": "debian-ko"}
REFERENCE = HERE / "eval-cjk.json"
ROUNDS = 10000
SPEED_REPEATS = 3
SPEED_MIN_SECONDS = 0.5
# Korean content morphemes (Sejong tags, kiwipiepy's irregular-verb suffix "-I"/"-R" cut off): nouns,
# pronouns, numerals, verb and adjective stems, adverbs, determiners, roots, Hanja.
KOREAN_CONTENT = frozenset({"NNG", "NNP", "NR", "NP", "VV", "VA", "MAG", "MM", "XR", "SH"})
SAMPLE = {
    "ja": "本パッケージには、OpenCV カメラ較正ランタイムライブラリが含まれます。",
    "zh": "本软件包包含 OpenCV 相机校准运行时库。",
    "ko": "이 패키지에는 OpenCV 카메라 보정 런타임 라이브러리가 포함되어 있습니다.",
}

# A segmenter: the folded text → (token, start, end) in characters.
Segment = Callable[[str], list[tuple[str, int, int]]]


@dataclass(frozen=True)
class Segmenter:
    """One segmenter setting: its language, the distributions it needs, and how to build it."""

    name: str
    language: str
    modules: tuple[str, ...]  # import names, checked before anything runs
    distributions: tuple[str, ...]  # what its installed size counts
    setting: str
    against: str | None = None  # a side check: compared with this segmenter, words only


SEGMENTERS = (
    Segmenter(
        "sudachi-A",
        "ja",
        ("sudachipy", "sudachidict_core"),
        ("SudachiPy", "sudachidict-core"),
        "SudachiPy, sudachidict-core, split mode A, normalized form",
    ),
    Segmenter(
        "sudachi-C",
        "ja",
        ("sudachipy", "sudachidict_core"),
        ("SudachiPy", "sudachidict-core"),
        "SudachiPy, sudachidict-core, split mode C, normalized form",
    ),
    Segmenter("rjieba", "zh", ("rjieba",), ("rjieba",), "rjieba (jieba-rs), default mode, HMM on"),
    Segmenter(
        "rjieba-search",
        "zh",
        ("rjieba",),
        ("rjieba",),
        "rjieba (jieba-rs), search mode (long words also as their sub-words), HMM on",
    ),
    Segmenter(
        "kiwi",
        "ko",
        ("kiwipiepy", "kiwipiepy_model"),
        ("kiwipiepy", "kiwipiepy_model"),
        "kiwipiepy, every morpheme's form, typo and multi-word dictionaries off",
    ),
    Segmenter(
        "kiwi-content",
        "ko",
        ("kiwipiepy", "kiwipiepy_model"),
        ("kiwipiepy", "kiwipiepy_model"),
        "kiwipiepy, content morphemes only ("
        + ", ".join(sorted(KOREAN_CONTENT))
        + "), typo and multi-word dictionaries off",
    ),
)


SIDE_CHECKS = (
    Segmenter(
        "sudachi-A-surface",
        "ja",
        ("sudachipy", "sudachidict_core"),
        ("SudachiPy", "sudachidict-core"),
        "SudachiPy, sudachidict-core, split mode A, surface form",
        against="sudachi-A",
    ),
    Segmenter(
        "kiwi-content-all-dictionaries",
        "ko",
        ("kiwipiepy", "kiwipiepy_model"),
        ("kiwipiepy", "kiwipiepy_model"),
        "kiwipiepy, content morphemes only, typo and multi-word dictionaries loaded (Kiwi's default)",
        against="kiwi-content",
    ),
)


def require_extra() -> None:
    """Stop with one line naming the extra when a segmenter package is missing."""
    missing = sorted({m for s in SEGMENTERS for m in s.modules if importlib.util.find_spec(m) is None})
    if missing:
        raise SystemExit(
            f"cjk_segmenter.py: {', '.join(missing)} not installed; install the {EXTRA} extra: "
            f"pip install -e '.[bench,{EXTRA}]'"
        )


def build(segmenter: Segmenter, all_dictionaries: bool = False) -> Segment:
    """The segmenter ready to run. Kiwi's typo and multi-word (WikiData names) dictionaries stay unloaded
    unless `all_dictionaries`: they serve chat-style and multi-word text and cost resident memory."""
    if segmenter.language == "ja":
        from sudachipy import Dictionary, SplitMode  # type: ignore[import-not-found,unused-ignore]

        mode = SplitMode.A if "-A" in segmenter.name else SplitMode.C
        sudachi = Dictionary(dict="core").tokenizer(mode=mode)
        surface = segmenter.name.endswith("surface")

        def japanese(text: str) -> list[tuple[str, int, int]]:
            return [
                (m.surface() if surface else m.normalized_form(), m.begin(), m.end())
                for m in sudachi.tokenize(text)
            ]

        return japanese
    if segmenter.language == "zh":
        import rjieba  # type: ignore[import-not-found,unused-ignore]

        jieba = rjieba.Jieba()
        mode = "search" if segmenter.name.endswith("search") else "default"

        def chinese(text: str) -> list[tuple[str, int, int]]:
            return [(w, s, e) for w, s, e in jieba.tokenize(text, mode=mode)]

        return chinese
    from kiwipiepy import Kiwi  # type: ignore[import-not-found,unused-ignore]

    every = all_dictionaries or segmenter.name.endswith("all-dictionaries")
    kiwi = Kiwi(load_typo_dict=every, load_multi_dict=every)
    content = "-content" in segmenter.name

    def korean(text: str) -> list[tuple[str, int, int]]:
        return [
            (t.form, t.start, t.start + t.len)
            for t in kiwi.tokenize(text)
            if not content or t.tag.split("-")[0] in KOREAN_CONTENT
        ]

    return korean


Tokenize = Callable[[str], list[str]]


def variant(segment: Segment | None, bigrams: bool, pattern: str, stopwords: frozenset[str]) -> Tokenize:
    """A CJK text's tokens: the reference's for the text outside the runs; bigrams, words or both inside."""

    def tokens(text: str) -> list[str]:
        if segment is None:
            return runner.cjk_bigram_tokens(text, pattern, stopwords)
        folded = unicodedata.normalize("NFKC", text)
        runs = [(m.start(), m.end()) for m in CJK_RUN.finditer(folded)]
        if bigrams:
            out = runner.cjk_bigram_tokens(folded, pattern, stopwords)
        else:
            # The reference's rule on the same text with the runs blanked: its words outside them.
            out = runner.cjk_bigram_tokens(CJK_RUN.sub(" ", folded), pattern, stopwords)
        starts = [s for s, _ in runs]
        for word, start, end in segment(folded):
            at = bisect.bisect_right(starts, start) - 1
            if at >= 0 and start < end <= runs[at][1]:
                out.append(word)
        return out

    return tokens


@dataclass(frozen=True)
class Collection:
    """A collection's texts as `pgrecall eval` indexes them, and its questions."""

    name: str
    ids: list[str]
    texts: list[str]
    languages: list[str]
    queries: dict[str, str]
    query_languages: dict[str, str]
    qrels: dict[str, dict[str, int]]


def read(name: str, max_chars: int) -> Collection:
    """The texts the eval's loader stores (title + two newlines + body), in its order; its clipped queries."""
    dataset: BeirDataset = load_dataset(HERE / "collections" / name)
    ids, texts, languages = [], [], []
    for doc in dataset.docs:
        text, title = (doc.text, doc.title) if doc.text.strip() else (doc.title, "")
        try:
            body = check_body(text, max_chars)
            clean_title = check_title(title)
        except InvalidInputError:
            continue
        ids.append(doc.id)
        texts.append(embedding_text(clean_title, body))
        languages.append(str(doc.language))
    queries = {q: runner.clip_query(t) for q, t in dataset.evaluated_queries(None).items()}
    majority = Counter(languages).most_common(1)[0][0]
    query_languages = {q: dataset.query_languages.get(q, majority) for q in queries}
    return Collection(
        name, ids, texts, languages, queries, query_languages, {q: dataset.qrels[q] for q in queries}
    )


def tokenized(
    texts: Sequence[str], languages: Sequence[str], cfg: runner.Bm25Settings, cjk: Tokenize
) -> list[list[str]]:
    """Every text's tokens: CJK ones with `cjk`, the others as the reference tokenizes them."""
    out: list[list[str]] = [[] for _ in texts]
    for iso in set(languages):
        positions = [i for i, lang in enumerate(languages) if lang == iso]
        items = [texts[i] for i in positions]
        done = [cjk(t) for t in items] if iso in SEGMENTED else runner.stemmed_tokens(items, iso, cfg)
        for i, tokens in zip(positions, done, strict=True):
            out[i] = tokens
    return out


def bm25_top(
    c: Collection, cfg: runner.Bm25Settings, cjk: Tokenize, depth: int
) -> dict[str, list[tuple[int, float]]]:
    """bm25s top `depth` per question: (document index, BM25 > 0), best first."""
    import bm25s  # type: ignore[import-untyped,import-not-found,unused-ignore]

    logging.getLogger("bm25s").setLevel(logging.WARNING)
    retriever = bm25s.BM25(method=cfg.method, k1=cfg.k1, b=cfg.b)
    retriever.index(tokenized(c.texts, c.languages, cfg, cjk), show_progress=False)
    qids = list(c.queries)
    query_tokens = tokenized([c.queries[q] for q in qids], [c.query_languages[q] for q in qids], cfg, cjk)
    top: dict[str, list[tuple[int, float]]] = {}
    for qid, tokens in zip(qids, query_tokens, strict=True):
        if not tokens:
            top[qid] = []
            continue
        docs, scores = retriever.retrieve(
            [tokens], k=min(depth, len(c.ids)), show_progress=False, n_threads=1
        )
        top[qid] = [(int(d), float(s)) for d, s in zip(docs[0], scores[0], strict=True) if s > 0]
    return top


def rank(c: Collection, cfg: runner.Bm25Settings, cjk: Tokenize) -> dict[str, list[str]]:
    """bm25s top 100 per question, as `runner.bm25_by_language_run` retrieves them."""
    return {q: [c.ids[d] for d, _ in found] for q, found in bm25_top(c, cfg, cjk, runner.DEPTH).items()}


def paired(a: dict[str, dict[str, float]], b: dict[str, dict[str, float]]) -> dict[str, Any]:
    """a against b question by question on nDCG@10: wins, losses, and a two-sided paired sign-flip test
    of the mean difference (signs flipped at random, fixed seed), as fusion_normalisation.py's `paired`."""
    diffs = [a[q]["nDCG@10"] - b[q]["nDCG@10"] for q in a]
    observed = abs(statistics.fmean(diffs))
    rng = random.Random(0)  # noqa: S311 (a reproducible test, not a secret)
    extreme = sum(
        abs(statistics.fmean(d if rng.random() < 0.5 else -d for d in diffs)) >= observed - 1e-12
        for _ in range(ROUNDS)
    )
    return {
        "mean_difference": round(statistics.fmean(diffs), 4),
        "better": sum(d > 0 for d in diffs),
        "worse": sum(d < 0 for d in diffs),
        "p_two_sided": round((extreme + 1) / (ROUNDS + 1), 4),
    }


def speed(texts: Sequence[str], cjk: Tokenize) -> dict[str, Any]:
    """Characters a second tokenizing `texts`, best of SPEED_REPEATS timings; each timing goes over the
    texts as many times as fill SPEED_MIN_SECONDS, so a fast tokenizer is not timed on a few ms."""

    def timed(passes: int) -> float:
        started = time.perf_counter()
        for _ in range(passes):
            for text in texts:
                cjk(text)
        return time.perf_counter() - started

    passes = max(1, math.ceil(SPEED_MIN_SECONDS / max(timed(1), 1e-6)))
    best = min(timed(passes) for _ in range(SPEED_REPEATS)) / passes
    chars = sum(len(t) for t in texts)
    return {
        "documents": len(texts),
        "characters": chars,
        "passes_per_timing": passes,
        "best_seconds_per_pass": round(best, 4),
        "chars_per_second": round(chars / best),
    }


def installed_mb(distributions: Sequence[str]) -> dict[str, float]:
    """MB on disk of each distribution's installed files (as its RECORD lists them)."""
    out: dict[str, float] = {}
    for name in distributions:
        dist = importlib.metadata.distribution(name)
        total = 0
        for file in dist.files or []:
            path = Path(str(dist.locate_file(file)))
            if path.is_file():
                total += path.stat().st_size
        out[f"{name} {dist.version}"] = round(total / 1e6, 1)
    return out


def probe(name: str, all_dictionaries: bool) -> None:
    """In a fresh process: RSS before building the segmenter, after segmenting one sentence, and after
    segmenting the collection's CJK documents (a dictionary read through mmap becomes resident as used)."""
    import psutil

    segmenter = next(s for s in SEGMENTERS if s.name == name)
    c = read(COLLECTIONS[segmenter.language], Settings().max_text_chars)
    texts = [
        unicodedata.normalize("NFKC", t)
        for t, lang in zip(c.texts, c.languages, strict=True)
        if lang in SEGMENTED
    ]
    me = psutil.Process()
    before = me.memory_info().rss
    segment = build(segmenter, all_dictionaries)
    segment(SAMPLE[segmenter.language])
    loaded = me.memory_info().rss
    for text in texts:
        segment(text)
    used = me.memory_info().rss
    mb = 1e6
    print(
        json.dumps(
            {
                "rss_before_mb": round(before / mb, 1),
                "added_mb_loaded": round((loaded - before) / mb, 1),
                "added_mb_after_collection": round((used - before) / mb, 1),
            }
        )
    )


def memory(name: str, all_dictionaries: bool = False) -> dict[str, float]:
    """`probe` run in a fresh interpreter."""
    command = [
        sys.executable,
        __file__,
        "--probe",
        name,
        *(["--all-dictionaries"] if all_dictionaries else []),
    ]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def reference_figure(name: str) -> float:
    """The bm25s nDCG@10 `pgrecall eval` recorded for the collection."""
    doc = json.loads(REFERENCE.read_text(encoding="utf-8"))
    (found,) = [c for c in doc["collections"] if c["dataset"]["name"] == name]
    return float(found["results"]["bm25s"]["metrics"]["nDCG@10"])


def study(language: str, settings: Settings) -> dict[str, Any]:
    """Every variant on one collection."""
    import bm25s  # type: ignore[import-untyped,import-not-found,unused-ignore]

    name = COLLECTIONS[language]
    c = read(name, settings.max_text_chars)
    cfg = runner.bm25_settings({"english": 1})
    english = frozenset(bm25s.stopwords.STOPWORDS_EN)
    cjk_texts = [t for t, lang in zip(c.texts, c.languages, strict=True) if lang in SEGMENTED]

    bigrams = variant(None, True, cfg.token_pattern, english)
    reference_run, _ = runner.bm25_by_language_run(
        c.ids, c.texts, c.languages, c.queries, c.query_languages, cfg
    )
    run = rank(c, cfg, bigrams)
    base_mean, base_per = runner.score(run, c.qrels)
    recorded = reference_figure(name)
    if run != reference_run or abs(base_mean["nDCG@10"] - recorded) > 1e-12:
        raise SystemExit(
            f"{name}: bigrams give {base_mean['nDCG@10']} here, eval-cjk.json records {recorded}"
        )
    out: dict[str, Any] = {
        "collection": name,
        "documents": len(c.ids),
        "cjk_documents": len(cjk_texts),
        "questions": len(c.queries),
        "bigrams": {
            "metrics": {k: round(v, 4) for k, v in base_mean.items()},
            "reproduces_eval_cjk": True,
            "speed": speed(cjk_texts, bigrams),
        },
        "segmenters": {},
        "side_checks": {},
    }
    per_query: dict[str, dict[str, dict[str, float]]] = {}
    for segmenter in (s for s in SEGMENTERS if s.language == language):
        segment = build(segmenter)
        entry: dict[str, Any] = {"setting": segmenter.setting}
        for label, both in (("words", False), ("words+bigrams", True)):
            cjk = variant(segment, both, cfg.token_pattern, english)
            mean, per = runner.score(rank(c, cfg, cjk), c.qrels)
            if not both:
                per_query[segmenter.name] = per
            entry[label] = {
                "metrics": {k: round(v, 4) for k, v in mean.items()},
                "vs_bigrams": paired(per, base_per),
                "speed": speed(cjk_texts, cjk),
            }
        entry["installed_mb"] = installed_mb(segmenter.distributions)
        entry["installed_mb_total"] = round(sum(entry["installed_mb"].values()), 1)
        entry["memory"] = memory(segmenter.name)
        if segmenter.language == "ko":
            # What Kiwi() as documented, with every bundled dictionary, holds.
            entry["memory_all_dictionaries"] = memory(segmenter.name, all_dictionaries=True)
        out["segmenters"][segmenter.name] = entry
        print(
            f"{name} {segmenter.name}: words {entry['words']['metrics']['nDCG@10']}, "
            f"words+bigrams {entry['words+bigrams']['metrics']['nDCG@10']}, "
            f"bigrams {out['bigrams']['metrics']['nDCG@10']}",
            file=sys.stderr,
        )
    for check in (s for s in SIDE_CHECKS if s.language == language):
        mean, per = runner.score(
            rank(c, cfg, variant(build(check), False, cfg.token_pattern, english)), c.qrels
        )
        out["side_checks"][check.name] = {
            "setting": check.setting,
            "words": {"metrics": {k: round(v, 4) for k, v in mean.items()}},
            "vs_bigrams": paired(per, base_per),
            f"vs_{check.against}": paired(per, per_query[str(check.against)]),
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--json", type=Path, default=None, help="write the figures here")
    parser.add_argument("--language", action="append", choices=sorted(COLLECTIONS), help="default: all three")
    parser.add_argument("--probe", help=argparse.SUPPRESS)
    parser.add_argument("--all-dictionaries", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    require_extra()
    if args.probe:
        probe(args.probe, args.all_dictionaries)
        return
    languages = args.language or list(COLLECTIONS)
    run = record.Run(
        {
            "languages": languages,
            "rounds": ROUNDS,
            "speed_repeats": SPEED_REPEATS,
            "speed_min_seconds": SPEED_MIN_SECONDS,
        }
    )
    result = run.finish({"results": {lang: study(lang, Settings()) for lang in languages}})
    if args.json is not None:
        record.write(result, args.json)
    print(record.dumps(result))


if __name__ == "__main__":
    main()
