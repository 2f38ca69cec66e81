"""Tag counts and recent changes (the pgrecall://tags and pgrecall://recent resources) in PostgreSQL."""

from __future__ import annotations

from pgrecall.app import App
from pgrecall.services.activity import MAX_TAGS

OWNER = "default"


def _age(app: App, entry_id: object) -> None:
    """Move an entry's history an hour back (a test cannot wait for it to age)."""
    assert app.pool is not None
    with app.pool.connection() as conn:
        conn.execute(
            "UPDATE entries SET created_at = created_at - interval '1 hour',"
            " updated_at = updated_at - interval '1 hour' WHERE id = %s",
            (entry_id,),
        )


def test_fresh_entries_are_added_not_updated_and_a_restore_is_an_update(app: App) -> None:
    fresh = [app.entries.add(OWNER, text=f"Fresh note number {i}.", language="en").entry for i in range(5)]
    assert app.pool is not None
    with app.pool.connection() as conn:
        # What the insert's two clock_timestamp() defaults often give: updated_at a little later.
        conn.execute("UPDATE entries SET updated_at = created_at + interval '7 microseconds'")
    assert [(c.id, c.change) for c in app.activity.recent(OWNER)] == [(e.id, "added") for e in fresh[::-1]]
    old = app.entries.add(OWNER, text="An old note that was deleted and restored.", language="en").entry
    _age(app, old.id)
    app.entries.delete(OWNER, old.id)
    assert app.activity.recent(OWNER)[0].change == "deleted"
    app.entries.restore(OWNER, old.id)
    newest = app.activity.recent(OWNER)[0]
    assert (newest.id, newest.change, newest.title) == (old.id, "updated", None)
    assert newest.snippet == "An old note that was deleted and restored."


def test_tags_count_live_entries_and_say_when_cut(app: App) -> None:
    app.entries.add(OWNER, text="One.", tags=["b", "a"], language="en")
    app.entries.add(OWNER, text="Two.", tags=["b"], language="en")
    gone = app.entries.add(OWNER, text="Three.", tags=["c"], language="en").entry
    app.entries.delete(OWNER, gone.id)
    app.entries.add("someone-else", text="Four.", tags=["b", "z"], language="en")
    found = app.activity.tags(OWNER)
    assert [(t.tag, t.entries) for t in found.tags] == [("b", 2), ("a", 1)] and not found.truncated
    for start in range(0, MAX_TAGS + 1, 20):
        batch = [f"t{n:04d}" for n in range(start, min(start + 20, MAX_TAGS + 1))]
        app.entries.add("many", text=f"Tagged {start}.", tags=batch, language="en")
    many = app.activity.tags("many")
    assert len(many.tags) == MAX_TAGS and many.truncated
