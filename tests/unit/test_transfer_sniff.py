"""The cheap look at an import file's first lines: sure signs of a wrong format only."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pgrecall.services.transfer.lines import SNIFF_LINE_BYTES, wrong_format_hint

SAMPLE = Path(__file__).resolve().parents[1] / "data" / "memory.json"


def _file(tmp_path: Path, content: str) -> Path:
    path = tmp_path / "f.jsonl"
    path.write_text(content, encoding="utf-8")
    return path


def test_memory_json_is_recognised() -> None:
    assert wrong_format_hint(SAMPLE, "jsonl") == (
        "this looks like the reference memory server's memory.json: use --format memory-json"
    )
    assert wrong_format_hint(SAMPLE, "memory-json") is None


@pytest.mark.parametrize(
    "content",
    [
        "",
        "\n\n",
        '{"text": "fine"}\n',
        '\ufeff{"id": null, "text": "with a byte order mark"}\n',
        '{"text": "broken first line\n{"text": "a good second line"}\n',  # the import reports line 1
        '"a string"\n{"text": "then an object"}\n',
    ],
)
def test_plausible_json_lines_pass(tmp_path: Path, content: str) -> None:
    assert wrong_format_hint(_file(tmp_path, content), "jsonl") is None


def test_a_very_long_first_line_is_not_judged(tmp_path: Path) -> None:
    path = _file(tmp_path, json.dumps({"text": "x" * (3 * SNIFF_LINE_BYTES)}) + "\n")
    assert wrong_format_hint(path, "jsonl") is None
    array = _file(tmp_path, json.dumps([{"text": "x" * (3 * SNIFF_LINE_BYTES)}]))
    assert wrong_format_hint(array, "jsonl") is not None


def test_no_object_on_the_first_lines(tmp_path: Path) -> None:
    hint = wrong_format_hint(_file(tmp_path, "1\n2\n3\n"), "jsonl")
    assert hint == "this does not look like JSON lines: no JSON object on its first lines"
