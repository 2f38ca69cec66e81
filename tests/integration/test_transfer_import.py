"""Import: bad lines reported by number, --atomic, conflict policies, hand-written lines."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from pgrecall.app import App
from pgrecall.cli.root import app as cli_app
from pgrecall.config import Settings
from pgrecall.domain.entries import EntryFilters
from pgrecall.domain.text import content_hash
from pgrecall.services.transfer.importer import ImportOptions, ImportReport, RecordValidator, import_jsonl

OWNER = "default"
MAX_CHARS = 2000


@pytest.fixture
def app(settings: Settings) -> Iterator[App]:
    with App(settings.model_copy(update={"max_text_chars": MAX_CHARS}), embedder=None) as opened:
        yield opened


def _line(text: str, **fields: Any) -> str:
    record: dict[str, Any] = {"id": str(uuid.uuid4()), "text": text, **fields}
    return json.dumps(record, ensure_ascii=False)


def _write(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / f"in-{uuid.uuid4().hex[:8]}.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _import(app: App, path: Path, **options: Any) -> ImportReport:
    validator = RecordValidator(
        app.catalog, app.detector, max_text_chars=app.settings.max_text_chars, default_owner=OWNER
    )
    with app.db.connect() as conn:
        return import_jsonl(conn, path, validator, ImportOptions(**options))


def _count(app: App) -> int:
    return len(app.entries.list(OWNER, EntryFilters(include_deleted=True), limit=200).entries)


def _bad_file(tmp_path: Path) -> tuple[Path, str]:
    first = str(uuid.uuid4())
    lines = [
        _line("A good first line about the garden.", id=first, language="en"),
        '{"id": "not closed", ',
        json.dumps({"id": str(uuid.uuid4()), "title": "no text"}),
        _line("bad id", id="12345"),
        _line("unknown language", language="xx"),
        _line("hash mismatch", content_hash="sha256:" + "0" * 64),
        _line("y" * (MAX_CHARS + 1)),
        _line("Another good line, about the weather.", language="en"),
        _line("A duplicate of line 1.", id=first),
        _line("unknown field", colour="blue"),
    ]
    return _write(tmp_path, lines), first


EXPECTED = {
    2: "not valid JSON",
    3: "text: is required",
    4: "id: must be a UUID",
    5: "language: unknown language 'xx'",
    6: "content_hash: does not match the text",
    7: f"text: is {MAX_CHARS + 1} characters; the limit is {MAX_CHARS}",
    9: "is already on line 1",
    10: "colour: unknown field",
}


def test_bad_lines_are_reported_by_number_and_good_ones_imported(app: App, tmp_path: Path) -> None:
    path, _ = _bad_file(tmp_path)
    report = _import(app, path, batch_size=2)
    assert {e.line: e.message for e in report.errors}.keys() == EXPECTED.keys()
    for error in report.errors:
        assert EXPECTED[error.line] in error.message, error
    assert (report.lines, report.inserted, report.rolled_back) == (10, 2, False)
    assert _count(app) == 2


def test_atomic_imports_nothing_when_a_line_is_bad(app: App, tmp_path: Path) -> None:
    path, _ = _bad_file(tmp_path)
    # Batches of 1: the good first line was already merged when the bad ones came.
    report = _import(app, path, atomic=True, batch_size=1)
    assert report.rolled_back and report.inserted == 0 and len(report.errors) == len(EXPECTED)
    assert _count(app) == 0
    good = _write(tmp_path, [_line("Only good lines here, so all of them go in.", language="en")])
    assert _import(app, good, atomic=True).inserted == 1


def test_cli_reports_file_and_line_and_exits_1(app: App, settings: Settings, tmp_path: Path) -> None:
    path, _ = _bad_file(tmp_path)
    assert settings.database_url is not None
    env = {
        "PGRECALL_DATABASE_URL": settings.database_url.get_secret_value(),
        "PGRECALL_HOME": str(tmp_path / "unused"),
        "PGRECALL_MAX_TEXT_CHARS": str(MAX_CHARS),
    }
    atomic = CliRunner().invoke(cli_app, ["import", str(path), "--atomic"], env=env)
    assert atomic.exit_code == 1
    assert f"{path}:2: not valid JSON" in atomic.stderr
    assert f"{path}:5: language: unknown language 'xx'" in atomic.stderr
    assert "nothing imported (--atomic)" in atomic.stdout
    assert _count(app) == 0
    partial = CliRunner().invoke(cli_app, ["import", str(path)], env=env)
    assert partial.exit_code == 1
    assert "2 inserted" in partial.stdout and f"{len(EXPECTED)} bad" in partial.stdout
    assert _count(app) == 2


def _stored(app: App, text: str, **kwargs: Any) -> dict[str, Any]:
    entry = app.entries.add(OWNER, text=text, language="en", **kwargs).entry
    return {
        "id": str(entry.id),
        "owner": OWNER,
        "text": entry.body,
        "language": entry.language,
        "version": entry.version,
        "created_at": entry.created_at.isoformat(),
        "updated_at": entry.updated_at.isoformat(),
    }


@pytest.mark.parametrize(
    ("policy", "version", "expected_text", "expected_version", "counts"),
    [
        ("newer", 1, "stored text, edited", 2, (0, 0, 0, 1)),  # the store's version 2 wins
        ("newer", 3, "the file's text", 3, (1, 0, 0, 0)),
        ("skip", 3, "stored text, edited", 2, (0, 0, 1, 0)),
        ("overwrite", 1, "the file's text", 1, (1, 0, 0, 0)),
    ],
)
def test_conflict_policies(
    app: App,
    tmp_path: Path,
    policy: str,
    version: int,
    expected_text: str,
    expected_version: int,
    counts: tuple[int, int, int, int],
) -> None:
    line = _stored(app, "stored text")
    ident = uuid.UUID(line["id"])
    app.entries.update(OWNER, ident, text="stored text, edited")
    assert app.store.set_embedding(OWNER, ident, content_hash("stored text, edited"), [0.1] * 384, "m")
    changed = {**line, "text": "the file's text", "version": version}
    report = _import(app, _write(tmp_path, [json.dumps(changed)]), on_conflict=policy)
    assert (report.updated, report.unchanged, report.kept, report.skipped_not_newer) == counts
    entry = app.entries.get(OWNER, ident)
    assert (entry.body, entry.version) == (expected_text, expected_version)
    # A vector survives only while the text it was made from does.
    assert (entry.embedding_model is None) == (expected_text == "the file's text")


def test_same_text_update_keeps_the_vector(app: App, tmp_path: Path) -> None:
    line = _stored(app, "a note whose tags change")
    ident = uuid.UUID(line["id"])
    assert app.store.set_embedding(OWNER, ident, content_hash(line["text"]), [0.2] * 384, "m")
    report = _import(app, _write(tmp_path, [json.dumps({**line, "tags": ["new"], "version": 2})]))
    assert report.updated == 1
    entry = app.entries.get(OWNER, ident)
    assert entry.tags == ["new"] and entry.embedding_model == "m"


def test_hand_written_lines_get_defaults_and_stay_idempotent(app: App, tmp_path: Path) -> None:
    ident = str(uuid.uuid4())
    text = "Die Häuser am See sind im Winter still und kalt, und niemand ist unterwegs."
    path = _write(tmp_path, [json.dumps({"id": ident, "text": text, "tags": ["see"]})])
    first = _import(app, path)
    assert first.inserted == 1 and first.without_vectors == 1
    entry = app.entries.get(OWNER, ident)
    assert (entry.language, entry.version, entry.kind, entry.content_hash) == (
        "german",
        1,
        "note",
        content_hash(text),
    )
    assert entry.created_at == entry.updated_at
    again = _import(app, path)
    assert (again.inserted, again.updated, again.unchanged) == (0, 0, 1)
    assert app.entries.get(OWNER, ident).updated_at == entry.updated_at
    # An edit of a line without version or updated_at proves nothing: under the default policy it
    # is skipped; --on-conflict overwrite applies it as a new version of the stored entry.
    edited = _write(tmp_path, [json.dumps({"id": ident, "text": text + " Wirklich.", "language": "de"})])
    skipped = _import(app, edited)
    assert (skipped.updated, skipped.skipped_not_newer) == (0, 1)
    assert app.entries.get(OWNER, ident) == entry
    assert _import(app, edited, on_conflict="overwrite").updated == 1
    after = app.entries.get(OWNER, ident)
    assert after.version == 2 and after.created_at == entry.created_at and after.updated_at > entry.updated_at


def test_iso_codes_and_regconfig_names_are_both_accepted(app: App, tmp_path: Path) -> None:
    lines = [_line("english by code", language="en"), _line("french by config name", language="french")]
    report = _import(app, _write(tmp_path, lines))
    assert report.inserted == 2 and report.errors == []
    languages = {e.body: e.language for e in app.entries.list(OWNER, EntryFilters(), limit=10).entries}
    assert languages == {"english by code": "english", "french by config name": "french"}


def _snapshot(app: App, ident: uuid.UUID) -> tuple[Any, ...]:
    entry = app.entries.get(OWNER, ident)
    return (
        entry.title,
        entry.tags,
        entry.kind,
        entry.source,
        entry.body,
        entry.metadata,
        entry.language,
        entry.version,
        entry.content_hash,
        entry.created_at,
        entry.updated_at,
    )


def test_a_bare_line_never_overwrites_under_newer(app: App, tmp_path: Path) -> None:
    stored = app.entries.add(
        OWNER,
        text="The quarterly plan, agreed with the team.",
        title="Q3 plan",
        tags=["plan", "team"],
        kind="decision",
        language="en",
    ).entry
    before = _snapshot(app, stored.id)
    bare = _write(tmp_path, [json.dumps({"id": str(stored.id), "text": "ok"})])
    report = _import(app, bare)
    assert _snapshot(app, stored.id) == before
    assert (report.inserted, report.updated, report.unchanged, report.kept) == (0, 0, 0, 0)
    assert report.skipped_not_newer == 1
    assert report.skipped_not_newer_first == [(1, str(stored.id))]
    # Nor an older version, nor the same version with no (or an earlier) updated_at.
    older = stored.updated_at.replace(year=stored.updated_at.year - 1).isoformat()
    lines = [
        json.dumps({"id": str(stored.id), "text": "ok", "version": 1}),
        json.dumps({"id": str(stored.id), "text": "ok", "updated_at": older}),
        json.dumps({"id": str(stored.id), "text": "ok", "version": 1, "updated_at": older}),
    ]
    for line in lines:
        assert _import(app, _write(tmp_path, [line])).skipped_not_newer == 1
        assert _snapshot(app, stored.id) == before


def test_a_later_updated_at_without_a_version_wins(app: App, tmp_path: Path) -> None:
    stored = app.entries.add(OWNER, text="draft wording", title="t", tags=["x"], language="en").entry
    later = stored.updated_at.replace(year=stored.updated_at.year + 1)
    line = {"id": str(stored.id), "text": "final wording", "updated_at": later.isoformat()}
    report = _import(app, _write(tmp_path, [json.dumps(line)]))
    assert (report.updated, report.skipped_not_newer) == (1, 0)
    after = app.entries.get(OWNER, stored.id)
    assert (after.body, after.version, after.updated_at) == ("final wording", 2, later)


def test_the_summary_names_the_first_skipped_lines(app: App, settings: Settings, tmp_path: Path) -> None:
    stored = [app.entries.add(OWNER, text=f"stored note {i}", language="en").entry for i in range(7)]
    fresh = str(uuid.uuid4())
    lines = [_line("a new note", id=fresh)] + [json.dumps({"id": str(e.id), "text": "ok"}) for e in stored]
    path = _write(tmp_path, lines)
    assert settings.database_url is not None
    env = {"PGRECALL_DATABASE_URL": settings.database_url.get_secret_value(), "PGRECALL_HOME": str(tmp_path)}
    result = CliRunner().invoke(cli_app, ["import", str(path)], env=env)
    assert result.exit_code == 0, result.output
    assert "1 inserted, 0 updated, 0 unchanged, 0 kept" in result.stdout
    first = ", ".join(f"line {n} id {e.id}" for n, e in enumerate(stored[:5], start=2))
    assert (
        f"7 skipped_not_newer (no higher version or later updated_at than the stored entry: {first}, …)"
        in (result.stdout)
    )
    assert [app.entries.get(OWNER, e.id).body for e in stored] == [f"stored note {i}" for i in range(7)]
