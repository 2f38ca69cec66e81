"""The entry store against the real embedded PostgreSQL."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import psycopg
import pytest

from pgrecall.app import App
from pgrecall.config import Settings
from pgrecall.domain.entries import EntryFilters
from pgrecall.domain.text import content_hash
from pgrecall.errors import InvalidInputError, NotFoundError

OWNER = "default"


@pytest.fixture
def app(settings: Settings) -> Iterator[App]:
    with App(settings.model_copy(update={"max_text_chars": 2000}), embedder=None) as opened:
        yield opened


def _matches(app: App, entry_id: uuid.UUID, cfg: str, query: str) -> bool:
    assert app.pool is not None
    with app.pool.connection() as conn:
        row = conn.execute(
            "SELECT tsv @@ to_tsquery(%s::regconfig, %s) AS hit FROM entries WHERE id = %s",
            (cfg, query, entry_id),
        ).fetchone()
    assert row is not None
    return bool(row["hit"])


def _count(app: App) -> int:
    assert app.pool is not None
    with app.pool.connection() as conn:
        row = conn.execute("SELECT count(*) AS n FROM entries").fetchone()
    assert row is not None
    return int(row["n"])


def test_tsv_is_stemmed_in_each_rows_language(app: App) -> None:
    german = app.entries.add(OWNER, text="Die Häuser am See sind im Winter kalt und still.").entry
    english = app.entries.add(OWNER, text="Her retirement plan needs a review before next spring.").entry
    assert (german.language, english.language) == ("german", "english")
    assert _matches(app, german.id, "german", "Haus")
    assert _matches(app, english.id, "english", "retiring")
    # Stored as stems, not words: the unstemmed query word no longer matches.
    assert not _matches(app, german.id, "simple", "häuser")


def test_weighted_fields_title_body_tags(app: App) -> None:
    entry = app.entries.add(
        OWNER, text="Body words about gardens.", title="Weather report", tags=["meteorology"], language="en"
    ).entry
    assert app.pool is not None
    with app.pool.connection() as conn:
        row = conn.execute("SELECT tsv::text AS t FROM entries WHERE id = %s", (entry.id,)).fetchone()
    assert row is not None
    assert "'weather':1A" in row["t"] and "'garden':" in row["t"] and "'meteorolog':" in row["t"]
    assert "C" in row["t"].split("'meteorolog':")[1].split()[0]


def test_language_change_regenerates_tsv(app: App) -> None:
    entry = app.entries.add(OWNER, text="retirement retiring houses", language="simple").entry
    assert not _matches(app, entry.id, "english", "retire")
    updated = app.entries.update(OWNER, entry.id, language="en").entry
    assert updated.language == "english" and updated.version == 2
    assert _matches(app, entry.id, "english", "retire")
    assert updated.content_hash == entry.content_hash  # text unchanged


def test_update_rehashes_and_bumps_version(app: App) -> None:
    entry = app.entries.add(OWNER, text="first   version", title="t", tags=["a"], language="en").entry
    assert entry.content_hash == content_hash("first version")
    written = app.entries.update(OWNER, entry.id, text="second version", tags=["b", "c"])
    assert written.entry.version == 2
    assert written.entry.content_hash == content_hash("second version")
    assert written.entry.tags == ["b", "c"] and written.entry.title == "t"
    cleared = app.entries.update(OWNER, entry.id, title=None, expected_version=2).entry
    assert cleared.title is None and cleared.version == 3
    with pytest.raises(InvalidInputError, match=r"expected_version: .* is at version 3, not 1"):
        app.entries.update(OWNER, entry.id, kind="fact", expected_version=1)
    assert app.entries.get(OWNER, entry.id).version == 3


def test_simple_entry_is_redetected_when_its_text_changes(app: App) -> None:
    entry = app.entries.add(OWNER, text="short").entry
    assert entry.language == "simple"
    written = app.entries.update(OWNER, entry.id, text="Les maisons au bord du lac sont très belles en été.")
    assert written.entry.language == "french" and written.language.how == "detected"


def test_soft_delete_and_restore(app: App) -> None:
    entry = app.entries.add(OWNER, text="to be deleted and restored", language="en").entry
    app.entries.delete(OWNER, entry.id)
    with pytest.raises(NotFoundError, match="deleted"):
        app.entries.get(OWNER, entry.id)
    assert app.entries.get(OWNER, entry.id, include_deleted=True).deleted
    assert entry.id not in [e.id for e in app.entries.list(OWNER, EntryFilters(), limit=50).entries]
    with pytest.raises(NotFoundError):
        app.entries.delete(OWNER, entry.id)
    with pytest.raises(NotFoundError, match="deleted"):
        app.entries.update(OWNER, entry.id, text="nope")
    restored = app.entries.restore(OWNER, entry.id)
    assert not restored.deleted
    with pytest.raises(NotFoundError):
        app.entries.restore(OWNER, entry.id)


def test_owner_scoping(app: App) -> None:
    entry = app.entries.add("alice", text="alice's private note", language="en").entry
    with pytest.raises(NotFoundError):
        app.entries.get("bob", entry.id)
    with pytest.raises(NotFoundError):
        app.entries.update("bob", entry.id, text="hijack")
    with pytest.raises(NotFoundError):
        app.entries.delete("bob", entry.id)
    assert app.entries.list("bob", EntryFilters(), limit=10).entries == []


def test_list_filters(app: App) -> None:
    a = app.entries.add(
        OWNER, text="alpha note", kind="fact", source="s1", tags=["x", "y"], language="en"
    ).entry
    b = app.entries.add(OWNER, text="beta note", kind="note", source="s2", tags=["y"], language="de").entry
    c = app.entries.add(OWNER, text="gamma note", kind="fact", source="s1", tags=["z"], language="en").entry

    def ids(**kw: object) -> set[uuid.UUID]:
        return {e.id for e in app.entries.list(OWNER, EntryFilters(**kw), limit=50).entries}  # type: ignore[arg-type]

    assert ids(kind="fact") == {a.id, c.id}
    assert ids(source="s2") == {b.id}
    assert ids(tags_all=["x", "y"]) == {a.id}
    assert ids(tags_any=["x", "z"]) == {a.id, c.id}
    assert ids(language="de") == {b.id}
    assert ids(created_after=b.created_at) == {b.id, c.id}
    assert ids(created_before=b.created_at) == {a.id}
    assert ids(created_after=datetime.now(UTC) + timedelta(days=1)) == set()
    with pytest.raises(InvalidInputError, match="language: unknown language 'xx'"):
        ids(language="xx")


def test_pagination_is_stable_under_concurrent_inserts(app: App, db_url: str) -> None:
    before = {app.entries.add(OWNER, text=f"existing entry {i}", language="en").entry.id for i in range(120)}
    stop = threading.Event()

    def writer() -> None:
        with psycopg.connect(db_url, autocommit=True) as conn:
            i = 0
            while not stop.is_set():
                conn.execute(
                    "INSERT INTO entries (body, content_hash) VALUES (%s, %s)",
                    (f"concurrent {i}", content_hash(f"concurrent {i}")),
                )
                i += 1

    thread = threading.Thread(target=writer)
    thread.start()
    seen: list[uuid.UUID] = []
    try:
        cursor = None
        while True:
            page = app.entries.list(OWNER, EntryFilters(), limit=7, cursor=cursor)
            seen.extend(e.id for e in page.entries)
            if page.next_cursor is None:
                break
            cursor = page.next_cursor
    finally:
        stop.set()
        thread.join()
    assert len(seen) == len(set(seen)), "an entry appeared on two pages"
    assert before <= set(seen), "an existing entry was skipped"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"text": "hello there", "language": "xx"}, "language: unknown language 'xx'; use an ISO 639-1 code"),
        ({"text": "y" * 2001}, "text: is 2001 characters; the limit is 2000"),
        ({"text": "   "}, "text: must not be empty"),
        ({"text": "ok", "tags": ["a", ""]}, "tags: tags must not be empty"),
        ({"text": "nul\x00byte"}, "text: must not contain NUL"),
        ({"text": "ok", "kind": "no spaces allowed"}, "kind: must be 1-64 characters"),
    ],
)
def test_bad_input_writes_nothing(app: App, kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(InvalidInputError) as info:
        app.entries.add(OWNER, **kwargs)  # type: ignore[arg-type]
    assert message in str(info.value)
    assert _count(app) == 0


def test_unknown_language_error_lists_supported_codes(app: App) -> None:
    with pytest.raises(InvalidInputError) as info:
        app.entries.add(OWNER, text="hello", language="klingon")
    for code in ("de", "en", "fr", "ru", "es"):
        assert code in str(info.value)


def test_malformed_and_unknown_ids(app: App) -> None:
    app.entries.add(OWNER, text="keep me", language="en")
    for call in (app.entries.get, app.entries.delete, app.entries.restore):
        with pytest.raises(InvalidInputError, match="id: must be a UUID"):
            call(OWNER, "1; DROP TABLE entries")
    with pytest.raises(InvalidInputError, match="id: must be a UUID"):
        app.entries.update(OWNER, "nope", text="x")
    with pytest.raises(NotFoundError, match="id: no entry"):
        app.entries.get(OWNER, str(uuid.uuid4()))
    assert _count(app) == 1
