"""redetect-language: dry-run counts, a real pass, idempotence, --only-simple, explicit choices
kept unless --include-explicit, the CLI."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from pgrecall.app import App
from pgrecall.cli.root import app as cli_app
from pgrecall.config import Settings
from pgrecall.domain.entries import Entry
from pgrecall.services.maintenance.redetect import RedetectReport, redetect_languages
from pgrecall.store.redetect import LanguageChange, RedetectStore

ENGLISH = "Her retirement plan needs a careful review before the end of next spring."
GERMAN = "Die Häuser am See sind im Winter kalt und still, niemand geht am Ufer spazieren."
ENGLISH_TAGGED_FRENCH = "The weather report says it will rain all weekend in the mountains."


@pytest.fixture
def entries(app: App) -> dict[str, Entry]:
    add = app.entries.add
    added = {
        "english": add("alice", text=ENGLISH, language="simple").entry,
        "german": add("bob", text=GERMAN, language="simple").entry,
        "short": add("alice", text="ok then", language="simple").entry,
        "wrong": add("alice", text=ENGLISH_TAGGED_FRENCH, language="fr").entry,  # an explicit, wrong choice
        "unsure": add("bob", text="Hallo Welt", language="de").entry,  # too short to detect
    }
    # The 'simple' ones as stored before migration 0011 recorded how (NULL): re-judged by default.
    assert app.pool is not None
    with app.pool.connection() as conn:
        ids = [added[k].id for k in ("english", "german", "short")]
        conn.execute("UPDATE entries SET language_how = NULL WHERE id = ANY(%s)", (ids,))
    return {k: _reload(app, e) for k, e in added.items()}


def _run(app: App, **kwargs: object) -> RedetectReport:
    assert app.pool is not None
    return redetect_languages(RedetectStore(app.pool), app.detector, batch_size=2, **kwargs)  # type: ignore[arg-type]


def _reload(app: App, entry: Entry) -> Entry:
    return app.entries.get(entry.owner, entry.id)


def test_explicit_languages_are_kept_unless_included(app: App, entries: dict[str, Entry]) -> None:
    kept = _run(app, dry_run=True)
    assert kept.scanned == 3 and kept.kept_explicit == 2
    assert dict(kept.transitions) == {("simple", "english"): 1, ("simple", "german"): 1}
    _run(app)
    assert _reload(app, entries["wrong"]).language == "french", "an explicit choice is the caller's"
    assert _reload(app, entries["english"]).language == "english"
    # A language set explicitly between the read and the write is not overwritten either.
    assert app.pool is not None
    store = RedetectStore(app.pool)
    row = store.batch("alice", False, None, 10, include_explicit=True)[0]
    change = LanguageChange(row["owner"], row["id"], row["language"], "german", row["content_hash"])
    with app.pool.connection() as conn:
        conn.execute("UPDATE entries SET language_how = 'explicit' WHERE id = %s", (row["id"],))
    assert store.apply([change]) == 0 and store.apply([change], include_explicit=True) == 1


def test_dry_run_counts_and_writes_nothing(app: App, entries: dict[str, Entry]) -> None:
    report = _run(app, dry_run=True, include_explicit=True)
    assert report.scanned == 5 and report.kept_explicit == 0
    assert dict(report.transitions) == {
        ("simple", "english"): 1,
        ("simple", "german"): 1,
        ("french", "english"): 1,
    }
    assert (report.unchanged, report.kept_unsure, report.updated) == (1, 1, 0)
    assert all(_reload(app, e) == e for e in entries.values())
    only_simple = _run(app, dry_run=True, only_simple=True, include_explicit=True)
    assert only_simple.scanned == 3 and only_simple.changes == 2


def test_real_pass_changes_language_not_hash_or_version(app: App, entries: dict[str, Entry]) -> None:
    report = _run(app, only_simple=True)
    assert (report.updated, report.skipped_edited) == (2, 0)
    for key, language in (("english", "english"), ("german", "german")):
        before, after = entries[key], _reload(app, entries[key])
        assert after.language == language
        assert (after.content_hash, after.version, after.body) == (
            before.content_hash,
            before.version,
            before.body,
        )
        assert after.updated_at > before.updated_at
    assert _reload(app, entries["wrong"]).language == "french", (
        "--only-simple leaves explicit languages alone"
    )
    # The stored tsv follows the new language: a German stem now matches.
    assert app.pool is not None
    with app.pool.connection() as conn:
        row = conn.execute(
            "SELECT tsv @@ to_tsquery('german', 'Haus') AS hit FROM entries WHERE id = %s",
            (entries["german"].id,),
        ).fetchone()
    assert row is not None and row["hit"]
    # A second pass has nothing left to do: re-running is how an interrupted pass resumes.
    again = _run(app, only_simple=True)
    assert (again.scanned, again.changes, again.updated) == (1, 0, 0)


def test_including_explicit_rejudges_them_but_keeps_unsure_ones(app: App, entries: dict[str, Entry]) -> None:
    report = _run(app, owner="alice", include_explicit=True)
    assert report.scanned == 3 and report.updated == 2
    assert _reload(app, entries["wrong"]).language == "english"
    assert _reload(app, entries["german"]).language == "simple", "another owner is out of scope"
    full = _run(app, include_explicit=True)
    assert full.updated == 1 and full.kept_unsure == 1
    assert _reload(app, entries["unsure"]).language == "german"


def test_an_entry_edited_meanwhile_is_skipped(app: App, entries: dict[str, Entry]) -> None:
    assert app.pool is not None
    store = RedetectStore(app.pool)
    rows = store.batch("bob", True, None, 10)
    app.entries.update("bob", entries["german"].id, text=GERMAN + " Wirklich.", language="simple")
    row = rows[0]
    change = LanguageChange(row["owner"], row["id"], row["language"], "german", row["content_hash"])
    assert store.apply([change]) == 0
    assert _reload(app, entries["german"]).language == "simple"


def test_cli_dry_run_prints_transitions(
    app: App, entries: dict[str, Entry], settings: Settings, tmp_path: Path
) -> None:
    assert settings.database_url is not None
    env = {"PGRECALL_DATABASE_URL": settings.database_url.get_secret_value(), "PGRECALL_HOME": str(tmp_path)}
    result = CliRunner().invoke(cli_app, ["redetect-language", "--dry-run", "--batch-size", "2"], env=env)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == "scanned 3 entries (dry run: nothing written)"
    assert lines[1:3] == ["simple -> english: 1", "simple -> german: 1"]
    assert "kept (language given explicitly; --include-explicit re-judges): 2" in lines
    every = CliRunner().invoke(cli_app, ["redetect-language", "--dry-run", "--include-explicit"], env=env)
    lines = every.stdout.splitlines()
    assert lines[0] == "scanned 5 entries (dry run: nothing written)"
    assert lines[1:4] == ["french -> english: 1", "simple -> english: 1", "simple -> german: 1"]
    assert "unchanged: 1" in lines and "kept (detector unsure): 1" in lines
    real = CliRunner().invoke(cli_app, ["redetect-language", "--only-simple"], env=env)
    assert real.exit_code == 0, real.output
    assert "updated: 2; skipped (edited meanwhile): 0" in real.stdout
    assert _reload(app, entries["english"]).language == "english"


def test_an_unstemmable_text_stored_before_0007_gets_its_language_recorded(app: App) -> None:
    japanese = "東京の会議は来週の火曜日に延期されました。資料は共有フォルダにあります。"
    entry = app.entries.add("carol", text=japanese).entry
    # As written before migration 0007: 'simple' with nothing recorded.
    with app.db.connect() as conn:
        conn.execute("UPDATE entries SET detected_language = NULL WHERE id = %s", (entry.id,))
        conn.commit()
    report = _run(app, owner="carol")
    assert dict(report.transitions) == {("simple", "simple (ja)"): 1}
    assert report.updated == 1
    assert _reload(app, entry).detected_language == "ja"
    again = _run(app, owner="carol")
    assert (again.unchanged, again.updated) == (1, 0)


GUIDE = """# Operations guide

## Overview

This guide describes how the operations team runs the build servers, how releases are prepared and
who is responsible for which machines. Read it before your first on-call shift; it is updated after
every incident review and every quarterly planning meeting, and whenever a machine is replaced.

## Datensicherung

Die Datenbanken werden jede Nacht gesichert. Die gesicherten Dateien liegen drei Wochen lang auf dem
Archivserver, danach werden sie automatisch gelöscht und durch neuere Sicherungen ersetzt.

## Резервные копии

Резервные копии базы данных создаются каждую ночь и хранятся на архивном сервере три недели.
"""


def test_a_documents_chunks_are_judged_as_an_ingest_judges_them(settings: Settings) -> None:
    with App(settings.model_copy(update={"chunk_chars": 400}), embedder=None) as app:
        done = app.documents.ingest("dora", GUIDE.encode(), source="guide.md")
        chunks = app.documents.store.chunks("dora", done.document.id)
        ingested = {c.section_path[-1]: c.language for c in chunks}
        assert done.language is not None and ingested["Резервные копии"] == "russian"
        assert ingested["Datensicherung"] == ingested["Overview"] == done.language.regconfig

        assert _run(app, owner="dora").changes == 0  # what ingest chose is what a pass chooses
        assert app.pool is not None
        with app.pool.connection() as conn:  # as stored by a pgrecall without chunk languages
            conn.execute(
                "UPDATE entries SET language = 'simple', language_how = NULL WHERE id = ANY(%s)",
                ([c.id for c in chunks],),
            )
        _run(app, owner="dora")
        again = {c.section_path[-1]: c.language for c in app.documents.store.chunks("dora", done.document.id)}
        assert again == ingested
