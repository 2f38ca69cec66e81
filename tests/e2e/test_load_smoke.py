"""Smoke run of the load test (benchmarks/load.py): a few seconds, two clients, a small seed.

The load test is a measurement, not a test; this only proves that it runs end to end against a
real server and that its own checks hold: no errors, every acknowledged write found again.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow


def test_load_test_runs_clean(db_url: str, tmp_path: Path) -> None:
    out = tmp_path / "load.json"
    command = [sys.executable, str(ROOT / "benchmarks" / "load.py"), "--seconds", "5", "--clients", "2"]
    command += ["--seed-entries", "200", "--database-url", db_url, "--json", str(out)]
    # Its own process group: should it hang, the server it started goes down with it.
    proc = subprocess.Popen(
        command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        # Generous "does not hang" bound: seeding, server start-up (model loads) and 5 s of load.
        stdout, stderr = proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 0, stderr[-3000:] + stdout[-3000:]
    report = json.loads(out.read_text())
    assert report["seed"]["entries"] == 200
    assert report["errors"]["total"] == 0, report["errors"]
    assert report["operations"]["overall"]["count"] > 0
    verification = report["verification"]
    assert verification["ok"] and verification["acknowledged"] >= 1
    assert verification["verified"] == verification["acknowledged"]


def test_embedding_cpu_benchmark_runs(tmp_path: Path) -> None:
    out = tmp_path / "embed_cpu.json"
    command = [sys.executable, str(ROOT / "benchmarks" / "embed_cpu.py"), "--texts", "2", "--json", str(out)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(out.read_text())
    assert set(report["per_text"]) == {f"threads {t}, batch {b}" for t in (1, 2) for b in (1, 8)}
    for figures in report["per_text"].values():
        assert figures["query"]["cpu_ms"] > 0 and figures["note"]["cpu_ms"] > 0
    # The ceiling follows from the figures: fewer embedded queries, a higher ceiling.
    cold, warm = report["model_only_ceiling"].values()
    assert cold["model_cpu_ms_per_operation"] > warm["model_cpu_ms_per_operation"]
    assert cold["max_operations_per_s"] < warm["max_operations_per_s"]
