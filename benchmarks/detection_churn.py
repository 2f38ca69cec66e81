"""CPU and memory a write's language detection costs in a burst of short notes, by how many rival models
may stay resident and how long they linger.

The texts are the load test's notes (benchmarks/load.py: a Cranfield or CISI question plus a marker),
detected one after another in a fresh interpreter that imports what the model worker's detection child
imports, as that child does. Prints the CPU per text, how many high-accuracy models were loaded, which
stay resident, the peak RSS over the burst (models loading included), the RSS at its end and once the
lingering rivals are gone, and what each language's models took when they loaded.

Run: python benchmarks/detection_churn.py [--detector compact|full] [--linger 30] [--ceiling 8] [--memory 110]
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys

from load import note_text, queries

# The detection child's imports (pgrecall.worker.detection and what its first request loads), then the
# burst; the first text loads the low-accuracy models and its own: not the burst's cost.
BURST = r"""
import json, resource, sys, time
import psutil
import pgrecall.config, pgrecall.worker.detection
from pgrecall.detection.detectors import make_detector
from pgrecall.detection.short_text import STEMMABLE, lingua_models

args, texts = json.loads(sys.argv[1]), json.loads(sys.stdin.read())
models = lingua_models()
models.set_budget(models.budget, linger=args["linger"])
if args["ceiling"] is not None:
    models.ceiling = args["ceiling"]
if args["memory"] is not None:
    models.memory_mb = args["memory"]
detector = make_detector(args["detector"], STEMMABLE)
detector.detect(texts[0])
loads, started = models.loads, time.process_time()
for text in texts[1:]:
    detector.detect(text)
cpu_ms = (time.process_time() - started) / (len(texts) - 1) * 1000
rss = psutil.Process().memory_info
end_mb, resident = rss().rss / 2**20, models.resident()
models.set_budget(models.budget, linger=0.0)  # what the linger timer does once the burst is over
peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({
    "cpu_ms": cpu_ms, "loads": models.loads - loads, "resident": resident,
    "ceiling": max(models.ceiling, models.budget), "memory": models.memory_mb, "peak_mb": peak_mb,
    "end_mb": end_mb, "after_linger_mb": rss().rss / 2**20, "sizes": models.sizes(),
}))
"""


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
    parser.add_argument("--texts", type=int, default=300)
    args = parser.parse_args()
    rng = random.Random(7)  # noqa: S311 - reproducible texts, not security
    pool = queries(rng)
    texts = [note_text(rng.choice(pool), 1, i) for i in range(args.texts)]
    settings = {"detector": args.detector, "linger": args.linger, "ceiling": args.ceiling}
    settings["memory"] = args.memory
    out = subprocess.run(
        [sys.executable, "-c", BURST, json.dumps(settings)],
        input=json.dumps(texts),
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    r = json.loads(out.strip().splitlines()[-1])
    print(
        f"{args.detector}, ceiling {r['ceiling']}, models {r['memory']:g} MB: {r['cpu_ms']:.1f} ms CPU "
        f"a text, {r['loads']} model loads, resident {' '.join(r['resident']) or '-'}; RSS peak "
        f"{r['peak_mb']:.0f} MB, at the end {r['end_mb']:.0f} MB, "
        f"after the linger {r['after_linger_mb']:.0f} MB"
    )
    sizes = sorted(r["sizes"].items(), key=lambda kv: -kv[1])
    print("MB a language's models took when they loaded: " + ", ".join(f"{c} {mb:.0f}" for c, mb in sizes))


if __name__ == "__main__":
    main()
