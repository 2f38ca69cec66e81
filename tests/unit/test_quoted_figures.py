"""Figures quoted in the docs are the ones in the committed JSON their command wrote: they cannot drift.

Each check names the page, the JSON (written by the command the page names next to the figure) and
how the figure is read from both. A re-run that changes a JSON fails here until the page says so.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
ROWS = {"hybrid (convex)": "hybrid", "hybrid (rrf)": "hybrid_rrf", "vector": "vector", "lexical": "lexical"}


def _json(name: str) -> Any:
    return json.loads((ROOT / "benchmarks" / name).read_text())


def _table_after(page: str, marker: str) -> dict[str, list[str]]:
    """The first Markdown table after `marker` on a docs page: first cell → the other cells (no **)."""
    text = (DOCS / page).read_text()
    start = text.index(marker)
    rows: dict[str, list[str]] = {}
    for line in text[start:].splitlines()[1:]:
        if not line.startswith("|"):
            if rows:
                break
            continue
        cells = [c.strip().strip("*") for c in line.strip("|").split("|")]
        rows[cells[0]] = cells[1:]
    return rows


@pytest.mark.parametrize(
    ("marker", "json_name"),
    [
        ("debian-manuals at 1200 (benchmarks/", "documents-eval-debian-manuals-1200.json"),
        ("documents-eval-postgresql-doc.json. Again a subset", "documents-eval-postgresql-doc.json"),
    ],
)
def test_the_documents_eval_tables_are_the_json(marker: str, json_name: str) -> None:
    results = _json(json_name)["results"]
    table = _table_after("benchmarks-documents.md", marker)
    for row, system in ROWS.items():
        chunked_doc, chunked_passage, whole_doc, _ = table[row]
        assert float(chunked_doc) == results["chunked"][system]["document"]["nDCG@10"], row
        assert float(chunked_passage) == results["chunked"][system]["passage"]["nDCG@10"], row
        assert float(whole_doc) == results["whole"][system]["document"]["nDCG@10"], row


def test_the_tool_list_size_is_the_json() -> None:
    quoted = re.search(r"input schemas\) is ([\d ]+) bytes", (DOCS / "mcp.md").read_text())
    assert quoted is not None, "docs/mcp.md no longer quotes the model-visible size of tools/list"
    assert int(quoted.group(1).replace(" ", "")) == _json("tool_surface.json")["model_visible_bytes"]
