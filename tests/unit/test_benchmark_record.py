"""Every regression command writes one envelope: commit, machine, date, parameters beside its results."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from pgrecall.evaluation import record

ROOT = Path(__file__).resolve().parents[2]


def _regression_scripts() -> list[Path]:
    """The `python benchmarks/….py` commands of the index's "Regression commands" table that write JSON."""
    index = (ROOT / "benchmarks" / "README.md").read_text()
    table = index.split("## Regression commands", 1)[1].split("\n## ", 1)[0]
    rows = [row for row in table.splitlines() if row.startswith("| `python") and "(no JSON)" not in row]
    names = sorted({m for row in rows for m in re.findall(r"`python (benchmarks/[\w/]+\.py)", row)})
    return [ROOT / name for name in names]


def test_a_finished_run_names_its_commit_machine_date_and_parameters() -> None:
    run = record.Run({"sizes": [10, 20], "out": Path("/tmp/x.json")}, command="bench --sizes 10,20")
    result = run.finish({"figure": 1.5})
    assert result["figure"] == 1.5  # figures stay where docs and tests read them
    facts = result["run"]
    assert set(record.RUN_KEYS) <= set(facts)
    assert facts["schema"] == record.SCHEMA
    assert facts["command"] == "bench --sizes 10,20"
    assert facts["parameters"] == {"sizes": [10, 20], "out": "/tmp/x.json"}
    assert re.fullmatch(r"[0-9a-f]{40}", facts["commit"]["sha"])  # the tests run from a checkout
    assert isinstance(facts["commit"]["dirty"], bool)
    assert facts["machine"]["cpus"] >= 1 and facts["machine"]["memory_gib"] > 0
    assert facts["started_at"] <= facts["finished_at"]
    assert json.loads(record.dumps(result)) == json.loads(json.dumps(result, default=str))


def test_every_regression_script_writes_through_the_record() -> None:
    scripts = _regression_scripts()
    assert len(scripts) >= 10, scripts  # the table lists them; an empty parse would pass anything
    missing = [str(p.relative_to(ROOT)) for p in scripts if "record.Run(" not in p.read_text()]
    assert missing == []
    for module in ("src/pgrecall/evaluation/speed.py", "src/pgrecall/cli/eval.py"):  # bench, eval
        assert "record.Run(" in (ROOT / module).read_text(), module


def test_a_regression_script_writes_the_envelope(tmp_path: Path) -> None:
    out = tmp_path / "surface.json"
    subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "tool_surface.py"), "--json", str(out)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    written = json.loads(out.read_text())
    assert written["model_visible_bytes"] > 0
    assert written["run"]["parameters"] == {"json": str(out), "per_tool": False}
    assert written["run"]["command"].startswith("tool_surface.py --json")
