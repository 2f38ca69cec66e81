"""CPU and memory a write's language detection costs in a burst of short notes, by how many rival models
may stay resident and how long they linger.

The texts are the load test's notes (benchmarks/load.py: a Cranfield or CISI question plus a marker),
detected one after another in a fresh interpreter that imports what the model worker's detection child
imports, as that child does. Prints the CPU per text, how many high-accuracy models were loaded, which
stay resident, the peak RSS over the burst (models loading included), the RSS at its end and once the
lingering rivals are gone, and what each language's models took when they loaded.

With `--scenario rivals`, the writes are high-accuracy calls of a store of short English and German
notes whose texts name eight rival languages in turn (the unit test's scenario), timed after the
first round has loaded them: what a cap too small for a store's rivals costs every write.

Run: python benchmarks/detection_churn.py [--detector compact|full] [--linger 30] [--ceiling 8] [--memory 110]
     [--resident 238] [--texts 300] [--scenario notes|rivals]
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys

from load import note_text, queries

# The detection child's imports (pgrecall.worker.detection and what its first request loads; not psutil,
# so RSS is read from /proc), then the burst. Warm-up writes (the first note, which loads the
# low-accuracy models and its own; the first round of the rivals) are not the burst's cost.
BURST = r"""
import json, os, resource, sys, time
from pgrecall.worker.detection import RESIDENT_LIMIT_MB, limit_resident_memory
from pgrecall.detection.detectors import make_detector
from pgrecall.detection.models import LinguaModels
from pgrecall.detection.short_text import STEMMABLE, lingua_models

args, texts = json.loads(sys.argv[1]), json.loads(sys.stdin.read())
if args["scenario"] == "rivals":
    models = LinguaModels(["en", "de", "la", "it", "fi", "nl", "lt", "sv"], resident_mb=RESIDENT_LIMIT_MB)
    rivals = ["de", "la", "it", "fi", "nl", "lt", "sv"]
    pairs = list(zip(rivals, rivals[1:] + rivals[:1]))
    detect = lambda i, text: models.high_accuracy(text, ["en", *pairs[i % len(pairs)]])
    warmup = len(pairs)
else:
    limit_resident_memory()  # as the detection process starts
    models = lingua_models()
    detector = make_detector(args["detector"], STEMMABLE)
    detect = lambda i, text: detector.detect(text)
    warmup = 1
models.set_budget(models.budget, linger=args["linger"])
if args["ceiling"] is not None:
    models.ceiling = args["ceiling"]
if args["memory"] is not None:
    models.memory_mb = args["memory"]
if args["resident"] is not None:
    models.resident_mb = args["resident"] or None
for i, text in enumerate(texts[:warmup]):
    detect(i, text)
loads, trimmed, trigram_texts = models.loads, models.trimmed, models.trigram_texts
started, wall = time.process_time(), time.perf_counter()
for i, text in enumerate(texts[warmup:], warmup):
    detect(i, text)
cpu_ms = (time.process_time() - started) / (len(texts) - warmup) * 1000
wall_ms = (time.perf_counter() - wall) / (len(texts) - warmup) * 1000
def rss_mb():
    with open("/proc/self/statm", "rb") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
end_mb, resident = rss_mb(), models.resident()
models.set_budget(models.budget, linger=0.0)  # what the linger timer does once the burst is over
peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({
    "cpu_ms": cpu_ms, "wall_ms": wall_ms, "loads": models.loads - loads, "resident": resident,
    "trimmed": models.trimmed - trimmed, "trigram_texts": models.trigram_texts - trigram_texts,
    "ceiling": max(models.ceiling, models.budget), "memory": models.memory_mb,
    "resident_limit": models.resident_mb, "peak_mb": peak_mb,
    "end_mb": end_mb, "after_linger_mb": rss_mb(), "sizes": models.sizes(),
}))
"""
# The unit test's store of short English and German notes that names eight rivals in turn
# (tests/unit/test_detection.py): a cap that keeps fewer loads a model on every write.
RIVALS_TEXT = "Note 3 on Winterreifen im Oktober and drag."


def main() -> None:
    """Detect the burst in a fresh interpreter and print one line of figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--detector", choices=["compact", "full"], default="compact")
    parser.add_argument("--linger", type=float, default=None, help="seconds (default: pgrecall's)")
    parser.add_argument(
        "--ceiling", type=int, default=None, help="models resident at most (default: pgrecall's)"
    )
    parser.add_argument(
        "--memory", type=float, default=None, help="MB the resident models may take (default: pgrecall's)"
    )
    parser.add_argument(
        "--resident",
        type=float,
        default=None,
        help="MiB the process stays under while models load, 0: no limit (default: the detection process's)",
    )
    parser.add_argument("--texts", type=int, default=300)
    parser.add_argument(
        "--scenario",
        choices=["notes", "rivals"],
        default="notes",
        help="the load test's notes, or high accuracy over a store meeting eight rivals in turn",
    )
    args = parser.parse_args()
    rng = random.Random(7)  # noqa: S311 - reproducible texts, not security
    pool = queries(rng)
    if args.scenario == "rivals":
        texts = [RIVALS_TEXT] * args.texts
    else:
        texts = [note_text(rng.choice(pool), 1, i) for i in range(args.texts)]
    settings = {"detector": args.detector, "linger": args.linger, "ceiling": args.ceiling}
    settings |= {"memory": args.memory, "resident": args.resident, "scenario": args.scenario}
    out = subprocess.run(
        [sys.executable, "-c", BURST, json.dumps(settings)],
        input=json.dumps(texts),
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    r = json.loads(out.strip().splitlines()[-1])
    cap = "no cap in MB" if r["memory"] is None else f"models {r['memory']:g} MB"
    cap += (
        ", no resident limit" if r["resident_limit"] is None else f", resident ≤ {r['resident_limit']:.0f} MB"
    )
    what = "rivals" if args.scenario == "rivals" else args.detector
    print(
        f"{what}, ceiling {r['ceiling']}, {cap}: {r['cpu_ms']:.1f} ms CPU ({r['wall_ms']:.1f} ms wall) "
        f"a text, {r['loads']} model loads, {r['trimmed']} candidates left out, {r['trigram_texts']} "
        f"texts by trigrams alone, resident {' '.join(r['resident']) or '-'}; RSS peak "
        f"{r['peak_mb']:.0f} MB, at the end {r['end_mb']:.0f} MB, "
        f"after the linger {r['after_linger_mb']:.0f} MB"
    )
    sizes = sorted(r["sizes"].items(), key=lambda kv: -kv[1])
    print("MB a language's models took when they loaded: " + ", ".join(f"{c} {mb:.0f}" for c, mb in sizes))


if __name__ == "__main__":
    main()
