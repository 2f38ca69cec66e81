"""Issue 16 item 5, forgiving import: id-less lines, format hints, progress in lines, relation counts."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from pgrecall.app import App
from pgrecall.config import Settings
from pgrecall.domain.entries import EntryFilters
from pgrecall.domain.text import content_hash
from pgrecall.services.transfer import RelationCounts, count_lines
from pgrecall.services.transfer.importer import (
    ImportOptions,
    ImportReport,
    RecordValidator,
    derived_id,
    import_jsonl,
)
from pgrecall.services.transfer.lines import max_line_bytes
from pgrecall.services.transfer.memory_json import import_memory_json
from tests.helpers.cli import Ran, run_here
from tests.helpers.subprocess_server import server_env

OWNER = "default"
SAMPLE = Path(__file__).resolve().parents[1] / "data" / "memory.json"
MEMORY_HINT = "this looks like the reference memory server's memory.json: use --format memory-json"


def _validator(app: App) -> RecordValidator:
    return RecordValidator(
        app.catalog, app.detector, max_text_chars=app.settings.max_text_chars, default_owner=OWNER
    )


def _import(app: App, path: Path, **options: Any) -> ImportReport:
    with app.db.connect() as conn:
        return import_jsonl(conn, path, _validator(app), ImportOptions(**options))


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _count(app: App, owner: str = OWNER) -> int:
    return len(app.entries.list(owner, EntryFilters(include_deleted=True), limit=200).entries)


def _cli(settings: Settings, *args: str) -> Ran:
    # In this process: these tests are about what `pgrecall import` answers, not about its process.
    return run_here(server_env(settings), *args)


IDLESS = [
    json.dumps({"text": "The boiler is serviced every October by the same firm.", "language": "en"}),
    json.dumps({"id": None, "text": "Die Katze schläft am liebsten auf der warmen Fensterbank."}),
    json.dumps({"text": "Notes of another owner, without an id either.", "owner": "someone-else"}),
]


def test_lines_without_an_id_get_one_and_a_reimport_adds_nothing(app: App, tmp_path: Path) -> None:
    path = _write(tmp_path / "idless.jsonl", IDLESS)
    first = _import(app, path)
    assert first.errors == []
    assert (first.inserted, first.ids_derived) == (3, 3)
    texts = [json.loads(line)["text"] for line in IDLESS]
    # The id is derived from owner + content hash, so it is the same on every run.
    for text, owner in zip(texts, [OWNER, OWNER, "someone-else"], strict=True):
        assert app.entries.get(owner, derived_id(owner, content_hash(text))).body == text
    again = _import(app, path)
    assert again.errors == []
    assert (again.inserted, again.updated, again.unchanged) == (0, 0, 3)
    assert (_count(app), _count(app, "someone-else")) == (2, 1)


def test_repeated_and_clashing_idless_lines(app: App, tmp_path: Path) -> None:
    text = "A line that appears twice in the file."
    lines = [
        json.dumps({"text": text, "language": "en"}),
        json.dumps({"text": text, "language": "en"}),  # the same line again: a duplicate, skipped
        json.dumps({"text": text, "language": "en", "title": "another"}),  # same id, other content
        json.dumps({"id": 12345, "text": "an id that is a number"}),
        json.dumps({"id": "not-a-uuid", "text": "an id that is no UUID"}),
    ]
    report = _import(app, _write(tmp_path / "repeats.jsonl", lines))
    assert (report.inserted, report.duplicates, report.ids_derived) == (1, 1, 1)
    messages = {e.line: e.message for e in report.errors}
    assert messages.keys() == {3, 4, 5}
    assert messages[3].startswith("id: none given, and line 1 has the same owner and text")
    assert messages[4].startswith("id: must be a UUID string")
    assert messages[5].startswith("id:")
    assert _count(app) == 1


def test_memory_json_given_as_jsonl_is_refused_with_a_hint(app: App, settings: Settings) -> None:
    result = _cli(settings, "import", str(SAMPLE))
    assert result.returncode == 2, result
    assert result.stderr.strip() == f"pgrecall: {SAMPLE}: {MEMORY_HINT}"
    assert result.stdout == ""
    assert _count(app) == 0


@pytest.mark.parametrize(
    ("content", "hint"),
    [
        ('[{"text": "a"}, {"text": "b"}]\n', "this is a JSON array, not JSON lines"),
        ('{\n  "text": "pretty"\n}\n', "this looks like pretty-printed JSON"),
        ("id,text\n1,hello\n", "this does not look like JSON lines"),
    ],
)
def test_other_wrong_inputs_get_a_one_line_hint(
    app: App, settings: Settings, tmp_path: Path, content: str, hint: str
) -> None:
    path = tmp_path / "wrong.jsonl"
    path.write_text(content, encoding="utf-8")
    result = _cli(settings, "import", str(path))
    assert result.returncode == 2, result
    assert len(result.stderr.strip().splitlines()) == 1
    assert f"pgrecall: {path}: {hint}" in result.stderr
    assert _count(app) == 0


def test_an_export_given_as_memory_json_is_refused_with_a_hint(
    app: App, settings: Settings, tmp_path: Path
) -> None:
    path = _write(tmp_path / "export.jsonl", [json.dumps({"id": str(uuid.uuid4()), "text": "x"})])
    result = _cli(settings, "import", str(path), "--format", "memory-json")
    assert result.returncode == 2, result
    assert "use --format jsonl" in result.stderr
    assert _count(app) == 0


def test_progress_counts_lines(app: App, tmp_path: Path) -> None:
    lines = [json.dumps({"text": f"progress note number {i}", "language": "en"}) for i in range(7)]
    lines.insert(3, "")  # a blank line is read (and counted) too, and imports nothing
    lines.append('{"text": "a last line without newline", "language": "en"}')
    path = tmp_path / "progress.jsonl"
    path.write_text("\n".join(lines), encoding="utf-8")
    calls: list[None] = []
    with app.db.connect() as conn:
        report = import_jsonl(
            conn, path, _validator(app), ImportOptions(batch_size=3), on_line=lambda: calls.append(None)
        )
    assert report.inserted == 8
    # One call per line read, the same count as the total of the bar, whatever the bytes per line.
    assert len(calls) == count_lines(path) == len(lines) == 9


def test_cli_progress_stays_off_when_stderr_is_no_terminal(
    app: App, settings: Settings, tmp_path: Path
) -> None:
    path = _write(tmp_path / "quiet.jsonl", IDLESS[:1])
    result = _cli(settings, "import", str(path))
    assert result.returncode == 0, result
    assert result.stderr == ""
    assert "1 inserted" in result.stdout and "1 without id (given one from owner + text)" in result.stdout


def _graph_with_dangling(tmp_path: Path) -> Path:
    entity = {"type": "entity", "entityType": "person", "observations": ["x"]}
    relation = {"type": "relation", "relationType": "knows"}
    return _write(
        tmp_path / "memory.jsonl",
        [
            json.dumps({**entity, "name": "Ada"}),
            json.dumps({**entity, "name": "Bob"}),
            json.dumps({**relation, "from": "Ada", "to": "Bob"}),
            json.dumps({**relation, "from": "Ada", "to": "Bob"}),  # repeated
            json.dumps({**relation, "from": "Ada", "to": "Ghost"}),  # dangling, kept on Ada
            json.dumps({**relation, "from": "Ghost", "to": "Nobody"}),  # dangling, dropped
        ],
    )


def test_relations_are_counted(app: App, tmp_path: Path) -> None:
    with app.db.connect() as conn:
        report, graph = import_memory_json(conn, SAMPLE, _validator(app), ImportOptions(owner=OWNER))
    assert report.errors == []
    assert graph.relations == RelationCounts(seen=5, duplicates=0, stored=5, dangling=0, dropped=0, linked=5)
    with app.db.connect() as conn:
        report, graph = import_memory_json(
            conn, _graph_with_dangling(tmp_path), _validator(app), ImportOptions(owner=OWNER)
        )
    assert report.errors == [] and report.inserted == 2
    assert graph.relations == RelationCounts(seen=4, duplicates=1, stored=2, dangling=2, dropped=1, linked=1)
    ada = next(e for e in app.entries.list(OWNER, EntryFilters(), limit=20).entries if e.title == "Ada")
    assert ada.metadata["mcp_memory"]["relations"] == [
        {"from": "Ada", "relationType": "knows", "to": "Bob"},
        {"from": "Ada", "relationType": "knows", "to": "Ghost"},
    ]


def test_cli_json_summary_counts_relations(app: App, settings: Settings, tmp_path: Path) -> None:
    path = _graph_with_dangling(tmp_path)
    result = _cli(settings, "import", str(path), "--format", "memory-json", "--json")
    assert result.returncode == 0, result
    summary = json.loads(result.stdout)
    assert summary["relations"] == {
        "seen": 4,
        "duplicates": 1,
        "stored": 2,
        "dangling": 2,
        "dropped": 1,
        "linked": 1,
    }
    assert (summary["inserted"], summary["bad"], summary["format"]) == (2, 0, "memory-json")
    text = _cli(settings, "import", str(path), "--format", "memory-json")
    assert text.returncode == 0, text
    assert (
        f"{path}: 4 relations: 2 stored in their entities' metadata, 1 linked, "
        "2 dangling (an end is no entity of the file; 1 dropped), 1 repeated"
    ) in text.stdout


def _export(app: App) -> str:
    import io

    from pgrecall.services.transfer import export_jsonl

    out = io.StringIO()
    with app.db.connect() as conn:
        export_jsonl(conn, out, owner=OWNER)
    return out.getvalue()


def test_the_language_of_an_unstemmable_entry_travels_through_export_and_import(
    app: App, tmp_path: Path
) -> None:
    japanese = "東京の会議は来週の火曜日に延期されました。資料は共有フォルダにあります。"
    app.entries.add(OWNER, text=japanese)
    app.entries.add(OWNER, text="Die Katze schläft am liebsten auf der warmen Fensterbank.")
    exported = _export(app)
    records = [json.loads(line) for line in exported.splitlines()]
    by_text = {r["text"]: r for r in records}
    assert (by_text[japanese]["language"], by_text[japanese]["detected_language"]) == ("simple", "ja")
    assert "detected_language" not in by_text["Die Katze schläft am liebsten auf der warmen Fensterbank."]

    # Into an empty store (the entries deleted for good): the export comes back byte for byte.
    path = _write(tmp_path / "export.jsonl", exported.splitlines())
    with app.db.connect() as conn:
        conn.execute("DELETE FROM entries WHERE owner = %s", (OWNER,))
        conn.commit()
    assert _import(app, path).errors == []
    assert _export(app) == exported
    # Japanese is stored as 'simple' but searched by its bigrams: not an unsupported language.
    assert app.entries.stats(OWNER).unsupported_languages == {}


def test_imported_lines_say_which_unstemmable_language_they_are(app: App, tmp_path: Path) -> None:
    path = _write(
        tmp_path / "languages.jsonl",
        [
            json.dumps({"text": "서울의 날씨는 오늘 맑고 내일은 비가 올 예정입니다."}),  # detected by script
            json.dumps({"text": "Spotkanie zostało przełożone na przyszły wtorek.", "language": "pl"}),
            json.dumps(
                {"text": "Un texte marqué à la main.", "language": "simple", "detected_language": "de"}
            ),
            json.dumps({"text": "Another hand-written line.", "language": "en", "detected_language": "th"}),
        ],
    )
    report = _import(app, path)
    assert [(e.line, e.message.split(":")[0]) for e in report.errors] == [
        (3, "detected_language"),
        (4, "detected_language"),
    ]
    assert app.entries.stats(OWNER).unsupported_languages == {"pl": 1}  # Korean: found by bigrams


def _hostile_lines() -> list[str]:
    deep = "[" * 100_000 + "]" * 100_000
    return [
        json.dumps({"text": "Good line before the deep one.", "language": "en"}),
        '{"text": "deeply nested metadata", "metadata": {"x": ' + deep + "}}",
        json.dumps({"text": "Good line between the bad ones.", "language": "en"}),
        '{"text": "a lone surrogate \\ud800 in the text", "language": "en"}',
        '{"text": "a lone low surrogate", "title": "\\udfff", "language": "en"}',
        deep,
        '{"text": "an escaped emoji \\ud83d\\ude00 is fine", "language": "en"}',
        json.dumps({"text": "Good line after the bad ones.", "language": "en"}),
    ]


def test_crafted_lines_are_reported_and_the_good_ones_imported(
    app: App, settings: Settings, tmp_path: Path
) -> None:
    """Issue 39 D: deep nesting (RecursionError) and lone surrogates (UnicodeEncodeError) stopped it all."""
    path = _write(tmp_path / "hostile.jsonl", _hostile_lines())
    report = _import(app, path)
    assert {e.line for e in report.errors} == {2, 4, 5, 6}, report.errors
    assert _count(app) == 4
    result = _cli(settings, "import", str(path), "--owner", "other-run")
    assert "Traceback" not in result.stderr
    for line, reason in ((2, "nested too deeply"), (4, "\\ud800"), (5, "\\udfff"), (6, "nested too deeply")):
        assert f"{path}:{line}: " in result.stderr and reason in result.stderr, (line, result.stderr)


def test_an_overlong_line_is_skipped_unread_between_good_lines(app: App, tmp_path: Path) -> None:
    """Issue 39 J: a line past the size any entry can need is reported, not read whole and parsed."""
    validator = RecordValidator(app.catalog, app.detector, max_text_chars=10, default_owner=OWNER)
    limit = max_line_bytes(10)
    path = tmp_path / "long.jsonl"
    with path.open("wb") as fh:
        fh.write(json.dumps({"text": "Good one.", "language": "en"}).encode() + b"\n")
        fh.write(b'{"text": "' + b"a" * (2 * limit) + b'"}\n')
        fh.write(b'{"text": "caf\xe9 is Latin-1", "language": "fr"}\n')
        fh.write(b'{"text": "' + b"b" * (limit + 5) + b'"}')  # the last line, without a newline
        fh.write(b"\n" + json.dumps({"text": "Good two.", "language": "en"}).encode() + b"\n")
    with app.db.connect() as conn:
        report = import_jsonl(conn, path, validator, ImportOptions())
    errors = {e.line: e.message for e in report.errors}
    assert errors.keys() == {2, 3, 4}, errors
    assert errors[2] == errors[4] == f"longer than {limit} bytes; skipped unread"
    assert errors[3].startswith("not UTF-8")
    assert _count(app) == 2
    assert count_lines(path) == 5  # the progress total still counts each long line once


def test_a_document_line_may_be_as_long_as_a_document(app: App, tmp_path: Path) -> None:
    """An export's document line holds the whole text: read up to the document limit, not the entry one."""
    validator = RecordValidator(
        app.catalog, app.detector, max_text_chars=10, default_owner=OWNER, max_document_bytes=2_000_000
    )
    limit = max_line_bytes(10)
    text = "A long manual. " * (limit // 15 + 1000)  # longer than any entry line may be
    document = {"type": "document", "id": str(uuid.uuid4()), "source": "manual.txt", "format": "text"}
    path = tmp_path / "documents.jsonl"
    with path.open("w", encoding="utf-8") as fh:
        fh.write(json.dumps({**document, "text": text, "language": "english"}, separators=(",", ":")) + "\n")
        too_long = {**document, "id": str(uuid.uuid4()), "source": "huge.txt", "text": text * 4}
        fh.write(json.dumps(too_long, separators=(",", ":")) + "\n")
        fh.write(json.dumps({"text": "x" * (limit + 5)}) + "\n")  # an entry line: the entry limit
    with app.db.connect() as conn:
        report = import_jsonl(conn, path, validator, ImportOptions())
    assert len(text.encode()) > limit and report.documents_inserted == 1
    errors = {e.line: e.message for e in report.errors}
    assert errors == {
        2: f"longer than {2 * 2_000_000 + (1 << 20)} bytes; skipped unread",
        3: f"longer than {limit} bytes; skipped unread",
    }
