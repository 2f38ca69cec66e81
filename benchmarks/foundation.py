"""Foundation figures: embedded server cold init / warm restart, migrate on an empty DB, lingua cost.

Run: python benchmarks/foundation.py [--json benchmarks/foundation.json]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psycopg
from psycopg import sql

from pgrecall.db import migrate as schema
from pgrecall.db.embedded import EmbeddedServer
from pgrecall.evaluation import record

LINGUA_PROBE = r"""
import json, resource, statistics, time
from pgrecall.detection.detectors import in_process_backend
from pgrecall.domain.language import LanguageCatalog, LanguageDetector, Thresholds
import sys
configs = set(json.loads(sys.argv[1]))
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t = time.perf_counter()
catalog = LanguageCatalog(configs)
det = LanguageDetector(catalog, in_process_backend(catalog, Thresholds(), "full"))
load = time.perf_counter() - t
texts = ["Die Häuser am See sind im Winter kalt und still.", "The retirement plan was discussed at length.",
         "Les maisons au bord du lac sont magnifiques.", "Las casas junto al lago son muy bonitas.",
         "Дома у озера очень красивые и дорогие.", "I gatti dormono sul divano tutto il giorno."]
t = time.perf_counter(); det.detect(texts[0]); first = time.perf_counter() - t
times = []
for _ in range(50):
    for x in texts:
        t = time.perf_counter(); det.detect(x); times.append(time.perf_counter() - t)
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"load_s": load, "first_call_ms": first * 1000, "median_ms": statistics.median(times) * 1000,
                  "rss_added_mb": (rss - base) / 1024, "rss_total_mb": rss / 1024}))
"""


def main() -> None:
    """Measure and print the figures as JSON."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    run = record.Run(vars(args))
    root = Path(tempfile.mkdtemp(prefix="pgrecall-bench-", dir="/tmp"))
    root.chmod(0o755)
    out: dict[str, object] = {}
    try:
        server = EmbeddedServer(root / "home")
        t = time.perf_counter()
        server.acquire()
        out["cold_init_s"] = time.perf_counter() - t
        server.release()
        assert server.wait_stopped()
        warm = []
        for _ in range(5):
            t = time.perf_counter()
            server.acquire()
            warm.append(time.perf_counter() - t)
            server.release()
        out["warm_restart_s_median"] = statistics.median(warm)
        server.acquire()
        with psycopg.connect(server.url("postgres"), autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier("bench_empty")))
            configs = [r[0] for r in conn.execute("SELECT cfgname::text FROM pg_ts_config").fetchall()]
        t = time.perf_counter()
        schema.upgrade(server.url("bench_empty"), "head")
        out["migrate_upgrade_head_empty_s"] = time.perf_counter() - t
        server.release()
        # The detector as the model worker runs it (models load per language, on first need).
        probe = subprocess.run(
            [sys.executable, "-c", LINGUA_PROBE, json.dumps(configs)],
            capture_output=True,
            text=True,
            check=True,
        )
        out["language_detector"] = json.loads(probe.stdout)
    finally:
        EmbeddedServer(root / "home").stop()
        shutil.rmtree(root, ignore_errors=True)
    text = record.dumps(run.finish(out))
    print(text)
    if args.json:
        args.json.write_text(text + "\n")


if __name__ == "__main__":
    main()
