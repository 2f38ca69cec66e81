"""Export → import into an empty store → export again gives the same bytes; re-import changes nothing."""

from __future__ import annotations

import io
import json
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql
from pydantic import SecretStr
from typer.testing import CliRunner

from pgrecall.app import App
from pgrecall.cli.root import app as cli_app
from pgrecall.config import Settings
from pgrecall.db.embedded import EmbeddedServer
from pgrecall.services.transfer.export import export_jsonl
from pgrecall.services.transfer.importer import ImportOptions, ImportReport, RecordValidator, import_jsonl

MODEL = "test-model-384"


@pytest.fixture
def other_db_url(pg_server: EmbeddedServer) -> Iterator[str]:
    """A second fresh database at head: the empty store an export is imported into."""
    name = f"t_other_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pg_server.url("postgres"), autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {} TEMPLATE pgrecall_template").format(sql.Identifier(name)))
    yield pg_server.url(name)
    with psycopg.connect(pg_server.url("postgres"), autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


@pytest.fixture
def store_a(settings: Settings) -> Iterator[App]:
    with App(settings, embedder=None) as opened:
        yield opened


@pytest.fixture
def store_b(settings: Settings, other_db_url: str) -> Iterator[App]:
    with App(settings.model_copy(update={"database_url": SecretStr(other_db_url)}), embedder=None) as opened:
        yield opened


def _vector(seed: int) -> list[float]:
    return [((i * 7919 + seed * 104729) % 1000) / 1000.0 - 0.5 for i in range(384)]


def populate(app: App) -> dict[str, Any]:
    """Several owners, unicode, metadata, tags, an edited entry, a deleted one, some vectors."""
    e = app.entries
    german = e.add(
        "alice",
        text="Die Häuser am See sind im Winter still, und der Steg knarrt im Wind.",
        title="Seehaus  am\tSee",
        tags=["haus", "see", "Ünïcödé"],
        source="notes/seehaus.md",
        metadata={"z": 1, "a": {"nested": [1, 2.5, "x", None, True]}, "ä": "ü"},
    ).entry
    emoji = e.add(
        "bob", text="Emoji 🎉 and CJK 漢字, with  double  spaces\nand a newline.", kind="fact"
    ).entry
    edited = e.add(
        "alice", text="Her retirement plan needs a review before next spring.", language="en"
    ).entry
    e.update("alice", edited.id, text="Her retirement plan needs a review before next summer.", tags=["plan"])
    deleted = e.add("default", text="An entry that was deleted but must survive the round trip.").entry
    e.delete("default", deleted.id)
    zoe = e.add("Zoë", text="Owner names sort by code point: 'Z' comes before 'a'.", language="simple").entry
    for owner, entry, seed in (("alice", german, 1), ("bob", emoji, 2), ("Zoë", zoe, 3)):
        assert app.store.set_embedding(owner, entry.id, entry.content_hash, _vector(seed), MODEL)
    return {"german": german, "edited": edited, "deleted": deleted}


def export_text(app: App, **kwargs: Any) -> str:
    out = io.StringIO()
    with app.db.connect() as conn:
        export_jsonl(conn, out, **kwargs)
    return out.getvalue()


def import_text(app: App, text: str, tmp_path: Path, **options: Any) -> ImportReport:
    path = tmp_path / f"import-{uuid.uuid4().hex[:8]}.jsonl"
    path.write_text(text, encoding="utf-8")
    validator = RecordValidator(
        app.catalog,
        app.detector,
        max_text_chars=app.settings.max_text_chars,
        default_owner=app.settings.owner,
    )
    with app.db.connect() as conn:
        return import_jsonl(conn, path, validator, ImportOptions(**options))


@pytest.mark.parametrize("with_vectors", [False, True])
def test_round_trip_is_byte_identical(store_a: App, store_b: App, tmp_path: Path, with_vectors: bool) -> None:
    made = populate(store_a)
    first = export_text(store_a, with_vectors=with_vectors)
    report = import_text(store_b, first, tmp_path)
    assert (report.inserted, report.updated, report.errors) == (5, 0, [])
    second = export_text(store_b, with_vectors=with_vectors)
    assert second.encode() == first.encode()

    lines = [json.loads(line) for line in first.splitlines()]
    assert [line["owner"] for line in lines] == ["Zoë", "alice", "alice", "bob", "default"]
    by_id = {line["id"]: line for line in lines}
    deleted = by_id[str(made["deleted"].id)]
    assert deleted["deleted_at"] is not None and deleted["deleted_at"].endswith("+00:00")
    edited = by_id[str(made["edited"].id)]
    assert (edited["version"], edited["tags"], edited["language"]) == (2, ["plan"], "english")
    german = by_id[str(made["german"].id)]
    assert german["language"] == "german" and german["title"] == "Seehaus am See"
    assert list(german["metadata"]) == ["a", "z", "ä"]
    if with_vectors:
        assert german["embedding_model"] == MODEL and german["embedding_dim"] == 384
        assert len(german["embedding"]) == 384
        assert edited["embedding"] is None and edited["embedding_model"] is None
        b = store_b.entries.get("alice", made["german"].id)
        assert (b.embedding_model, b.embedding_dim) == (MODEL, 384)
    else:
        assert "embedding" not in german
        assert store_b.entries.get("alice", made["german"].id).embedding_model is None
    # The stored rows match field by field, not only their exports.
    for owner, key in (("alice", "german"), ("default", "deleted")):
        a = store_a.entries.get(owner, made[key].id, include_deleted=True)
        b = store_b.entries.get(owner, made[key].id, include_deleted=True)
        assert (a.body, a.content_hash, a.version, a.created_at, a.updated_at, a.deleted_at) == (
            b.body,
            b.content_hash,
            b.version,
            b.created_at,
            b.updated_at,
            b.deleted_at,
        )


def test_reimport_is_idempotent(store_a: App, store_b: App, tmp_path: Path) -> None:
    populate(store_a)
    text = export_text(store_a, with_vectors=True)
    import_text(store_b, text, tmp_path)
    before = export_text(store_b, with_vectors=True)
    again = import_text(store_b, text, tmp_path)
    assert (again.inserted, again.updated, again.unchanged, again.kept) == (0, 0, 5, 0)
    # Into the source store itself, too: every line is already there.
    same = import_text(store_a, text, tmp_path)
    assert (same.inserted, same.updated, same.unchanged) == (0, 0, 5)
    assert export_text(store_b, with_vectors=True) == before


def test_owner_restricts_export_and_import(store_a: App, store_b: App, tmp_path: Path) -> None:
    populate(store_a)
    alice = export_text(store_a, owner="alice")
    assert {json.loads(line)["owner"] for line in alice.splitlines()} == {"alice"}
    everything = export_text(store_a)
    report = import_text(store_b, everything, tmp_path, owner="bob")
    assert (report.inserted, report.other_owner) == (1, 4)
    assert export_text(store_b) == export_text(store_a, owner="bob")


def _cli(url: str, tmp_path: Path, *args: str) -> Any:
    env = {"PGRECALL_DATABASE_URL": url, "PGRECALL_HOME": str(tmp_path / "unused-home")}
    return CliRunner().invoke(cli_app, list(args), env=env)


def test_cli_export_import_export(
    store_a: App, other_db_url: str, settings: Settings, tmp_path: Path
) -> None:
    populate(store_a)
    assert settings.database_url is not None
    url_a = settings.database_url.get_secret_value()
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    out = _cli(url_a, tmp_path, "export", str(first), "--with-vectors")
    assert out.exit_code == 0, out.output
    assert "exported 5 entries" in out.stdout
    imported = _cli(other_db_url, tmp_path, "import", str(first))
    assert imported.exit_code == 0, imported.output
    assert "5 inserted, 0 updated, 0 unchanged" in imported.stdout
    assert _cli(other_db_url, tmp_path, "export", str(second), "--with-vectors").exit_code == 0
    assert second.read_bytes() == first.read_bytes()
    again = _cli(other_db_url, tmp_path, "import", str(first))
    assert again.exit_code == 0 and "0 inserted, 0 updated, 5 unchanged" in again.stdout
    # No temp file is left next to the export.
    assert sorted(p.name for p in tmp_path.glob("*.jsonl")) == ["a.jsonl", "b.jsonl"]


def test_links_expiry_and_supersedes_round_trip(store_a: App, store_b: App, tmp_path: Path) -> None:
    made = populate(store_a)
    e = store_a.entries
    newer = e.add(
        "alice",
        text="Her retirement plan was reviewed; the next review is in two years.",
        supersedes=str(made["edited"].id),
        expires_at="2031-05-01T00:00:00Z",
    ).entry
    store_a.links.link("alice", str(newer.id), str(made["german"].id), "mentions", note="the lake house")
    store_a.links.link("alice", str(made["german"].id), str(newer.id), "relates_to")
    first = export_text(store_a)
    lines = [json.loads(line) for line in first.splitlines()]
    links = [line for line in lines if line.get("type") == "link"]
    assert [(x["owner"], x["relation"]) for x in links] == [("alice", "mentions"), ("alice", "relates_to")]
    assert links[0]["note"] == "the lake house" and "note" not in links[1]
    # After alice's entries, before bob's.
    owners = [line["owner"] for line in lines]
    assert owners.index("bob") > max(i for i, line in enumerate(lines) if line.get("type") == "link")
    current = next(line for line in lines if line.get("id") == str(newer.id))
    assert current["supersedes"] == str(made["edited"].id)
    assert current["expires_at"] == "2031-05-01T00:00:00.000000+00:00"

    report = import_text(store_b, first, tmp_path)
    assert (report.inserted, report.errors) == (6, [])
    assert (report.links.seen, report.links.inserted, report.links.dangling) == (2, 2, 0)
    assert export_text(store_b).encode() == first.encode()
    related = store_b.links.related("alice", str(newer.id))
    assert {(r.id, r.relation, r.direction) for r in related} == {
        (str(made["german"].id), "mentions", "out"),
        (str(made["german"].id), "relates_to", "in"),
    }
    again = import_text(store_b, first, tmp_path)
    assert (again.links.inserted, again.links.existing) == (0, 2)


def test_a_link_may_come_before_its_entries_and_a_dangling_one_is_counted(
    store_b: App, tmp_path: Path
) -> None:
    a, b, gone = (str(uuid.uuid4()) for _ in range(3))
    text = "\n".join(
        json.dumps(line)
        for line in (
            {"type": "link", "from_id": a, "relation": "Depends on", "to_id": b},
            {"type": "link", "from_id": a, "relation": "part_of", "to_id": gone},
            {"type": "link", "from_id": a, "relation": "loves", "to_id": b},
            {"type": "link", "from_id": a, "relation": "relates_to", "to_id": a},
            {"id": a, "text": "The task: write the links migration."},
            {"id": b, "text": "The decision: links live in PostgreSQL."},
        )
    )
    report = import_text(store_b, text, tmp_path)
    assert (report.lines, report.inserted) == (4, 2)
    assert (report.links.seen, report.links.inserted, report.links.dangling, report.links.dangling_first) == (
        2,
        1,
        1,
        [2],
    )
    assert [(err.line, err.message.split(":")[0]) for err in report.errors] == [(3, "relation"), (4, "to_id")]
    owner = store_b.settings.owner
    assert [(r.id, r.relation) for r in store_b.links.related(owner, a)] == [(b, "depends_on")]


HANDBOOK = """# Operator handbook

## Backups

Every night at two o'clock the scheduler copies the database files to the attached storage. Copies
older than thirty days are pruned automatically, and the newest one is checked by a restore test.

## Networking

The server listens on port 8080 by default. Put it behind a reverse proxy for TLS; the proxy must
forward the Host header unchanged, and firewalls should allow only the proxy.

## Troubleshooting

If the service does not start, read the log in the data folder. A full disk is the usual cause;
free some space and start it again, then check that the last backup completed.
"""


def test_documents_and_their_chunks_round_trip(settings: Settings, other_db_url: str, tmp_path: Path) -> None:
    small = settings.model_copy(update={"chunk_chars": 300})
    with (
        App(small, embedder=None) as a,
        App(small.model_copy(update={"database_url": SecretStr(other_db_url)}), embedder=None) as b,
    ):
        done = a.documents.ingest("alice", HANDBOOK.encode(), source="handbook.md", version="2.0")
        note = a.entries.add("alice", text="A note beside the handbook.", language="en").entry
        first = export_text(a)
        lines = [json.loads(line) for line in first.splitlines()]
        assert lines[0]["type"] == "document"
        assert lines[0]["text"] == a.documents.store.text("alice", done.document.id)
        chunks = [line for line in lines if line.get("kind") == "chunk"]
        assert len(chunks) == done.document.chunk_count >= 3
        assert [c["ordinal"] for c in chunks] == list(range(len(chunks)))
        assert all(c["document_id"] == str(done.document.id) and c["section_path"] for c in chunks)

        assert settings.database_url is not None
        exported = _cli(
            settings.database_url.get_secret_value(), tmp_path, "export", str(tmp_path / "a.jsonl")
        )
        assert f"exported {len(chunks) + 1} entries and 1 document to" in exported.stdout, exported.output
        report = import_text(b, first, tmp_path)
        assert (report.documents_inserted, report.inserted, report.errors) == (1, len(chunks) + 1, [])
        assert export_text(b).encode() == first.encode()
        document, sections = b.documents.outline("alice", done.document.id)
        assert (document.source, document.version_label) == ("handbook.md", "2.0")
        assert [s.path[-1] for s in sections] == ["Backups", "Networking", "Troubleshooting"]
        assert b.entries.get("alice", note.id).document_id is None

        again = import_text(b, first, tmp_path)
        assert (again.documents_inserted, again.documents_kept, again.inserted) == (0, 1, 0)

        # A line from before documents travelled (no document fields) leaves the chunk in its document.
        place = ("document_id", "ordinal", "section_path")
        old_style = {k: v for k, v in chunks[0].items() if k not in place}
        kept = import_text(b, json.dumps(old_style), tmp_path, on_conflict="overwrite")
        assert (kept.unchanged, kept.updated, kept.errors) == (1, 0, [])
        assert b.entries.get("alice", uuid.UUID(chunks[0]["id"])).document_id == done.document.id
        # A chunk whose document is in neither the file nor the store is a bad line, not an orphan.
        lone = next(line for line in first.splitlines() if '"kind":"chunk"' in line)
        report = import_text(b, lone.replace(str(done.document.id), str(uuid.uuid4())), tmp_path)
        assert [e.message.split(":")[0] for e in report.errors] == ["document_id"]
