"""CPU a write's language detection costs in a burst of short notes, by how long rival models linger.

The texts are the load test's notes (benchmarks/load.py: a Cranfield or CISI question plus a marker),
detected in this process one after another, as the model worker's detection child does. Prints the
CPU per text, how many high-accuracy models were loaded, which stay resident and the peak RSS.

Run: python benchmarks/detection_churn.py [--detector compact|full] [--linger 30] [--ceiling 8]
"""

from __future__ import annotations

import argparse
import random
import resource
import time

from load import note_text, queries

from pgrecall.detection.detectors import make_detector
from pgrecall.detection.short_text import STEMMABLE, lingua_models


def main() -> None:
    """Detect the burst and print one line of figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--detector", choices=["compact", "full"], default="compact")
    parser.add_argument("--linger", type=float, default=None, help="seconds (default: pgrecall's)")
    parser.add_argument(
        "--ceiling", type=int, default=None, help="models resident at most (default: pgrecall's)"
    )
    parser.add_argument("--texts", type=int, default=300)
    args = parser.parse_args()
    models = lingua_models()
    models.set_budget(models.budget, linger=args.linger)
    if args.ceiling is not None:
        models.ceiling = args.ceiling
    rng = random.Random(7)  # noqa: S311 - reproducible texts, not security
    pool = queries(rng)
    texts = [note_text(rng.choice(pool), 1, i) for i in range(args.texts)]
    detector = make_detector(args.detector, STEMMABLE)
    detector.detect(texts[0])  # the low-accuracy models and the first text's: not the burst's cost
    loads, started = models.loads, time.process_time()
    for text in texts[1:]:
        detector.detect(text)
    cpu_ms = (time.process_time() - started) / (len(texts) - 1) * 1000
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    ceiling = max(models.ceiling, models.budget)
    print(
        f"{args.detector}, linger {models.linger:g} s, ceiling {ceiling}: {cpu_ms:.1f} ms CPU a text, "
        f"{models.loads - loads} model loads, resident {' '.join(models.resident()) or '-'}, "
        f"peak RSS {peak_mb:.0f} MB"
    )


if __name__ == "__main__":
    main()
