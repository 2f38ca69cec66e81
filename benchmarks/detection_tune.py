"""Choosing detection settings robustly: the real detector on two folds of the 'tune' half.

The tune half is split again by catalogue (a second hash byte), and every setting is scored on both folds
against the baseline; a setting is kept only if it beats the baseline on both. The report half is never
read here.

Run: python benchmarks/detection_tune.py --devset tune.jsonl 'K,T,MINW,W' ...   (e.g. '3,0.98,0,0.2')
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections import Counter
from pathlib import Path

from pgrecall.detection import short_text as detection
from pgrecall.detection.full import AllLanguagesDetector
from pgrecall.domain.language import ISO_TO_CONFIG

STEMMABLE = frozenset(ISO_TO_CONFIG)


def fold_of(source: str) -> int:
    """0 or 1 from the second byte of the catalogue's hash (the first byte chose the half)."""
    return hashlib.sha256(source.encode()).digest()[1] & 1


def norm(code: str | None) -> str | None:
    """'no' and 'nb' are both Norwegian Bokmål."""
    return "nb" if code == "no" else code


def tally(rows: list[dict[str, str]], answers: list[str | None]) -> dict[str, list[float]]:
    """fold/bucket/group → [n, right %, simple %, wrong %]."""
    counts: dict[str, Counter[str]] = {}
    for row, answer in zip(rows, answers, strict=True):
        want = norm(row["lang"]) if row["lang"] in STEMMABLE else None
        got = norm(answer)
        group = "stem" if row["lang"] in STEMMABLE else "other"
        key = f"f{fold_of(row['source'])} {row['bucket']} {group}"
        outcome = "right" if got == want else ("simple" if got is None else "wrong")
        counts.setdefault(key, Counter())[outcome] += 1
    out: dict[str, list[float]] = {}
    for key, c in sorted(counts.items()):
        n = sum(c.values())
        out[key] = [n, *(100 * c[k] / n for k in ("right", "simple", "wrong"))]
    return out


def main() -> None:
    """Score the baseline and each setting on both folds; print a line each and the JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--devset", type=Path, required=True, help="tune-half JSONL with a source field")
    parser.add_argument("settings", nargs="+", help="K,OVERWHELMING,SHORTCUT_MIN_WORDS,LOOKALIKE_WEIGHT")
    args = parser.parse_args()
    rows = [json.loads(line) for line in args.devset.read_text(encoding="utf-8").splitlines() if line]
    base = AllLanguagesDetector(ISO_TO_CONFIG)
    results = {"baseline": tally(rows, [base.detect(r["text"]).iso for r in rows])}
    detection.lingua_models().set_budget(200)
    for setting in args.settings:
        k, t, minw, w = setting.split(",")
        detection.STAGE1_CANDIDATES, detection.OVERWHELMING = int(k), float(t)
        detection.SHORTCUT_MIN_WORDS, detection.LOOKALIKE_WEIGHT = int(minw), float(w)
        det = detection.ShortTextDetector(ISO_TO_CONFIG)
        results[setting] = tally(rows, [det.detect(r["text"]).iso for r in rows])
        print(setting, file=sys.stderr, flush=True)
    base_r = results["baseline"]
    for name, res in results.items():
        cells = []
        for key, (_n, right, _, wrong) in res.items():
            if key.endswith("stem"):
                d_right, d_wrong = right - base_r[key][1], wrong - base_r[key][3]
                cells.append(f"{key} {right:5.1f}/{wrong:4.1f} ({d_right:+.1f}/{d_wrong:+.1f})")
        print(f"{name:<18} " + " | ".join(cells))
    print(json.dumps(results))


if __name__ == "__main__":
    main()
