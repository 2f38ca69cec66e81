"""Language detection on short real texts: today's lingua baseline against ShortTextDetector.

The dev set comes from the machine's gettext catalogues (pgrecall.evaluation.detection_devset), split
in halves by catalogue; the first stage was tuned on the 'tune' half and figures are reported on the
'report' half. Memory is the resident size of a fresh process after detecting texts from a store
holding two (en+de) or three (en+de+fr) languages, and its peak while it did.

A second dev set, Debian's package descriptions in de/fr/es/en (benchmarks/ddtp_devset.py), is scored
too when --ddtp names the directory holding the Translation files.

Run: python benchmarks/detection.py [--half report] [--ddtp DIR] [--json benchmarks/detection.json]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
import unicodedata
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pgrecall.detection import short_text
from pgrecall.detection.full import AllLanguagesDetector
from pgrecall.detection.short_text import ShortTextDetector, lingua_models
from pgrecall.domain.language import ISO_TO_CONFIG, Thresholds
from pgrecall.evaluation import detection_devset as devset
from pgrecall.evaluation import record

STEMMABLE = frozenset(ISO_TO_CONFIG)
THRESHOLDS = Thresholds(min_letters=20, min_confidence=0.2, min_ratio=1.2)

# A fresh interpreter per configuration, so that lingua's per-language model caches never mix.
MEMORY_PROBE = r"""
import json, sys, time, psutil
kind, texts = sys.argv[1], json.loads(sys.stdin.read())
proc = psutil.Process()
started = time.perf_counter()
from pgrecall.domain.language import ISO_TO_CONFIG
if kind == "baseline":
    from pgrecall.detection.full import AllLanguagesDetector
    det = AllLanguagesDetector(ISO_TO_CONFIG)
    det.detect("Loading every model before the clock stops: this sentence is long enough.")
else:
    from pgrecall.detection.short_text import ShortTextDetector
    from pgrecall.worker.detection import limit_resident_memory
    limit_resident_memory()  # as the detection process starts
    det = ShortTextDetector(ISO_TO_CONFIG)
detect = det.detect
loaded = det.loaded_languages
load_s = time.perf_counter() - started
started = time.perf_counter()
for text in texts:
    detect(text)
total_s = time.perf_counter() - started
rss_mb, during = proc.memory_info().rss / 1e6, loaded()
trimmed = 0
if kind != "baseline":
    # What the burst's lingering rivals leave once their 30 s are over (the timer's work, now).
    from pgrecall.detection.short_text import lingua_models
    trimmed = lingua_models().trimmed  # candidates left out for want of room
    lingua_models().set_budget(lingua_models().budget, linger=0.0)
after_mb = proc.memory_info().rss / 1e6
# VmHWM: this interpreter's own peak (ru_maxrss would start from its parent's, all models loaded).
with open("/proc/self/status") as status:
    peak_mb = next(int(l.split()[1]) for l in status if l.startswith("VmHWM:")) * 1024 / 1e6
print(json.dumps({"rss_mb": rss_mb, "peak_rss_mb": peak_mb, "loaded_during": during,
                  "rss_after_linger_mb": after_mb, "trimmed": trimmed,
                  "load_s": load_s, "ms_per_text": 1000 * total_s / max(len(texts), 1), "loaded": loaded()}))
"""


def baseline_detector() -> Callable[[str], str | None]:
    """The full detector: lingua high accuracy over every stemmable language."""
    det = AllLanguagesDetector(ISO_TO_CONFIG, THRESHOLDS)
    return lambda text: det.detect(text).iso


def new_detector() -> Callable[[str], str | None]:
    """ShortTextDetector over every stemmable language, same thresholds."""
    det = ShortTextDetector(ISO_TO_CONFIG, THRESHOLDS)
    # Answers do not depend on which models stay loaded; a budget for all ~90 languages of the dev set
    # only spares reloading them (the memory runs below keep the default budget).
    lingua_models().set_budget(100)
    return lambda text: det.detect(text).iso


def expected(lang: str) -> str | None:
    """The right answer: the language if we can stem it, else None ('simple')."""
    return lang if lang in STEMMABLE else None


def same(got: str | None, want: str | None) -> bool:
    """The same stemmer: 'no' and 'nb' are both norwegian, 'ms' and 'id' both indonesian."""
    return ISO_TO_CONFIG.get(got or "") == ISO_TO_CONFIG.get(want or "")


def score(texts: list[devset.DevText], answers: list[str | None]) -> dict[str, Any]:
    """right / simple / wrong rates per bucket, overall and for stemmable vs other languages."""
    out: dict[str, Any] = {}
    for bucket in (*devset.BUCKETS, OVERALL):
        rows = [(t, a) for t, a in zip(texts, answers, strict=True) if bucket in {t.bucket, OVERALL}]
        result: dict[str, Any] = {}
        groups: tuple[tuple[str, Callable[[devset.DevText], bool]], ...] = (
            ("all", lambda t: True),
            ("stemmable", lambda t: t.lang in STEMMABLE),
            ("other", lambda t: t.lang not in STEMMABLE),
        )
        for group, keep in groups:
            sub = [(t, a) for t, a in rows if keep(t)]
            counts: Counter[str] = Counter()
            for t, a in sub:
                want = expected(t.lang)
                counts["right" if same(a, want) else ("simple" if a is None else "wrong")] += 1
            n = max(len(sub), 1)
            result[group] = {"n": len(sub), **{k: counts[k] / n for k in ("right", "simple", "wrong")}}
        wrong_by_lang: Counter[str] = Counter()
        confusions: Counter[str] = Counter()
        for t, a in rows:
            if a is not None and not same(a, expected(t.lang)):
                wrong_by_lang[t.lang] += 1
                confusions[f"{t.lang}->{a}"] += 1
        result["by_language"] = {}
        for lang in sorted({t.lang for t, _ in rows}):
            got = [a for t, a in rows if t.lang == lang]
            outcome = Counter(
                "right" if same(a, expected(lang)) else ("simple" if a is None else "wrong") for a in got
            )
            result["by_language"][lang] = {
                "n": len(got),
                **{k: round(outcome[k] / len(got), 4) for k in ("right", "simple", "wrong")},
            }
        result["worst_languages"] = wrong_by_lang.most_common(10)
        result["worst_confusions"] = confusions.most_common(10)
        out[bucket] = result
    return out


def run(name: str, make: Callable[[], Callable[[str], str | None]], texts: list[devset.DevText]) -> Any:
    """Answers of one detector over the dev set, with timings."""
    started = time.perf_counter()
    detect = make()
    load_s = time.perf_counter() - started
    started = time.perf_counter()
    answers = [detect(t.text) for t in texts]
    per_text = (time.perf_counter() - started) / max(len(texts), 1)
    print(f"{name}: load {load_s:.2f} s, {1000 * per_text:.2f} ms/text", file=sys.stderr)
    return {"load_s": load_s, "ms_per_text": 1000 * per_text, **score(texts, answers)}


def memory(kind: str, texts: list[str]) -> dict[str, Any]:
    """RSS of a fresh interpreter after detecting `texts`."""
    proc = subprocess.run(
        [sys.executable, "-c", MEMORY_PROBE, kind],
        input=json.dumps(texts),
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def store_texts(texts: list[devset.DevText], langs: tuple[str, ...], per_language: int) -> list[str]:
    """Interleaved texts of a store holding `langs`, both buckets."""
    by_lang = {lang: [t.text for t in texts if t.lang == lang][:per_language] for lang in langs}
    out: list[str] = []
    for i in range(per_language):
        out.extend(by_lang[lang][i] for lang in langs if i < len(by_lang[lang]))
    return out


def letters(text: str) -> int:
    """Letter count as the detectors count it."""
    return sum(1 for ch in text if unicodedata.category(ch).startswith("L"))


def print_accuracy(title: str, results: dict[str, Any]) -> None:
    """Right / simple / wrong per bucket and group, both detectors, with their worst confusions."""
    names = {SHORT: "≤12 words", LONG: "20–40 words", OVERALL: "both"}
    print(title)
    print(f"{'bucket':<12} {'texts':<10} {'detector':<10} {'n':>6} {'right':>7} {'simple':>7} {'wrong':>7}")
    for bucket in (*devset.BUCKETS, OVERALL):
        for group in ("all", "stemmable", "other"):
            for det in ("baseline", "new"):
                r = results[det][bucket][group]
                if not r["n"]:
                    continue
                print(
                    f"{names[bucket]:<12} {group:<10} {det:<10} {r['n']:>6} {r['right']:>7.1%} "
                    f"{r['simple']:>7.1%} {r['wrong']:>7.1%}"
                )
        for det in ("baseline", "new"):
            worst = ", ".join(f"{lang} {n}" for lang, n in results[det][bucket]["worst_languages"])
            print(f"  wrong by language, {det}: {worst}")
            conf = ", ".join(f"{c} {n}" for c, n in results[det][bucket]["worst_confusions"])
            print(f"  worst confusions, {det}: {conf}")
    print()


def print_table(results: dict[str, Any], mem: dict[str, Any]) -> None:
    """The human-readable summary."""
    print_accuracy("gettext catalogues", results)
    print(
        f"{'store':<10} {'detector':<10} {'texts':>6} {'RSS MB':>8} {'peak':>7} {'after':>7} {'load s':>7} "
        f"{'ms/text':>8}  loaded (during -> after)"
    )
    for store, per_det in mem.items():
        for det, m in per_det.items():
            print(
                f"{store:<10} {det:<10} {m['texts']:>6} {m['rss_mb']:>8.1f} {m['peak_rss_mb']:>7.1f} "
                f"{m['rss_after_linger_mb']:>7.1f} "
                f"{m['load_s']:>7.2f} {m['ms_per_text']:>8.2f}  "
                f"{' '.join(m['loaded_during'])} -> {' '.join(m['loaded'])}"
            )
    for det in ("baseline", "new"):
        r = results[det]
        print(f"whole dev set, {det}: load {r['load_s']:.2f} s, {r['ms_per_text']:.2f} ms/text")


SHORT, LONG = devset.SHORT, devset.LONG
OVERALL = "overall"  # both buckets together


def main() -> None:
    """Build or load the dev set, run both detectors, print the table, optionally write JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--half", choices=[*devset.HALVES, "all"], default="report")
    parser.add_argument("--devset", type=Path, help="a JSONL dev set instead of the gettext catalogues")
    parser.add_argument(
        "--cache", type=Path, help="JSONL file to keep the built dev set in (reused if present)"
    )
    parser.add_argument("--per-language", type=int, default=200)
    parser.add_argument("--store-texts", type=int, default=300, help="texts per language in the memory runs")
    parser.add_argument("--skip-baseline", action="store_true", help="only the new detector (while tuning)")
    parser.add_argument("--skip-memory", action="store_true")
    parser.add_argument("--json", type=Path)
    parser.add_argument(
        "--ddtp", type=Path, help="directory of bookworm Translation-{en,de,fr,es}: also the DDTP dev set"
    )
    parser.add_argument("--ddtp-per-language", type=int, default=400)
    parser.add_argument(
        "--full-weight-lookalikes",
        help="comma-separated look-alike codes counted whole (while tuning; default: pgrecall's)",
    )
    args = parser.parse_args()
    if args.full_weight_lookalikes is not None:
        short_text.FULL_WEIGHT_LOOKALIKES = frozenset(filter(None, args.full_weight_lookalikes.split(",")))
    recording = record.Run(vars(args))
    if args.devset:
        texts = devset.load_jsonl(args.devset)
    elif args.cache and args.cache.exists():
        texts = devset.load_jsonl(args.cache)
    else:
        half = None if args.half == "all" else args.half
        texts = devset.build(half=half, per_language=args.per_language)
        if args.cache:
            devset.save_jsonl(texts, args.cache)
    print(
        f"dev set: {len(texts)} texts, {len({t.lang for t in texts})} languages, half {args.half}",
        file=sys.stderr,
    )
    results: dict[str, Any] = {"new": run("new", new_detector, texts)}
    if not args.skip_baseline:
        results["baseline"] = run("baseline", baseline_detector, texts)
    else:
        results["baseline"] = results["new"]
    mem: dict[str, Any] = {}
    if not args.skip_memory:
        for store in (("en", "de"), ("en", "de", "fr")):
            sample = store_texts(texts, store, args.store_texts)
            name = "+".join(store)
            mem[name] = {}
            for det in ("baseline", "new"):
                mem[name][det] = {"texts": len(sample), **memory(det, sample)}
    print_table(results, mem)
    ddtp: dict[str, Any] = {}
    if args.ddtp:
        from ddtp_devset import build as build_ddtp

        half = None if args.half == "all" else args.half
        ddtp_texts = build_ddtp(args.ddtp, half=half, per_language=args.ddtp_per_language)
        ddtp = {"half": args.half, "texts": len(ddtp_texts), "accuracy": {}}
        for name, make in (("new", new_detector), ("baseline", baseline_detector)):
            if name == "baseline" and args.skip_baseline:
                continue
            ddtp["accuracy"][name] = run(f"{name} (DDTP)", make, ddtp_texts)
        ddtp["accuracy"].setdefault("baseline", ddtp["accuracy"]["new"])
        print_accuracy(f"DDTP descriptions (de/fr/es/en), half {args.half}", ddtp["accuracy"])
    if args.json:
        report = {
            "half": args.half,
            "texts": len(texts),
            "languages": len({t.lang for t in texts}),
            "thresholds": THRESHOLDS.as_dict(),
            "accuracy": results,
            "memory": mem,
            "ddtp": ddtp,
        }
        record.write(recording.finish(report), args.json)


if __name__ == "__main__":
    main()
