"""Owner isolation: row-level security inside PostgreSQL, and every tool seen from another owner."""

from __future__ import annotations

import psycopg
import pytest
from mcp import Client

from pgrecall.app import App
from pgrecall.config import Settings
from pgrecall.db.database import APP_ROLE
from pgrecall.mcp.runtime import Runtime
from pgrecall.mcp.server import create_server
from tests.helpers.mcp_calls import call, call_error

pytestmark = pytest.mark.anyio


async def test_no_tool_reaches_another_owners_entries(two_owners: tuple[Runtime, Runtime]) -> None:
    alice_rt, bob_rt = two_owners
    async with Client(create_server(alice_rt)) as alice:
        secret = await call(alice, "add_entry", text="Alice's launch code is tangerine seven.", language="en")
        kept = await call(alice, "add_entry", text="Alice keeps a second private note here.", language="en")
        await call(alice, "delete_entry", id=kept["id"])
    async with Client(create_server(bob_rt)) as bob:
        await call(bob, "add_entry", text="Bob's grocery list: tangerines and bread.", language="en")
        for tool, args in [
            ("get_entry", {"id": secret["id"]}),
            ("update_entry", {"id": secret["id"], "text": "overwritten by bob"}),
            ("delete_entry", {"id": secret["id"]}),
            ("restore_entry", {"id": kept["id"]}),
        ]:
            assert "no " in await call_error(bob, tool, **args)
        listed = await call(bob, "list_entries", include_deleted=True)
        assert {e["id"] for e in listed["entries"]}.isdisjoint({secret["id"], kept["id"]})
        found = await call(
            bob,
            "search",
            query="launch code tangerine seven",
            top_k=20,
            pinned_hashes=[secret["content_hash"]],
        )
        assert secret["id"] not in [h["id"] for h in found["hits"]]
        assert found["missing_pins"] == [secret["content_hash"]]
        built = await call(bob, "build_context", query="launch code", pinned_hashes=[secret["content_hash"]])
        assert "tangerine seven" not in built["context"]
        report = await call(
            bob, "verify_citations", citations=[{"id": secret["id"], "content_hash": secret["content_hash"]}]
        )
        assert report["results"][0]["status"] == "missing"
        stats = await call(bob, "stats")
        assert stats["entries"] == 1 and stats["owner"] == "bob"
    async with Client(create_server(alice_rt)) as alice:
        assert (await call(alice, "get_entry", id=secret["id"]))["version"] == 1


def test_row_level_security_holds_without_a_where_clause(db_url: str, settings: Settings) -> None:
    with App(settings.model_copy(update={"owner": "alice"}), embedder=None) as app:
        a = app.entries.add("alice", text="alice row about apples", language="en").entry
        b = app.entries.add("bob", text="bob row about bananas", language="en").entry
    with psycopg.connect(db_url) as conn:
        conn.execute(f"SET ROLE {APP_ROLE}")
        # No owner set: the policy matches nothing.
        assert conn.execute("SELECT count(*) FROM entries").fetchone() == (0,)
        conn.execute("SELECT set_config('pgrecall.owner', 'alice', true)")
        assert conn.execute("SELECT id FROM entries").fetchall() == [(a.id,)]
        assert conn.execute("UPDATE entries SET title = 'x' WHERE id = %s", (b.id,)).rowcount == 0
        assert conn.execute("DELETE FROM entries WHERE id = %s", (b.id,)).rowcount == 0
        owners = conn.execute(
            "SELECT owner FROM lexical_df UNION SELECT owner FROM lexical_df_delta"
        ).fetchall()
        assert owners == [("alice",)]
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute(
                "INSERT INTO entries (owner, body, content_hash) "
                "VALUES ('bob', 'forged', 'sha256:' || repeat('1', 64))"
            )
        conn.rollback()
        conn.execute(f"SET ROLE {APP_ROLE}")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("INSERT INTO api_tokens (owner, token_hash) VALUES ('bob', repeat('a', 64))")
        conn.rollback()
        conn.execute(f"SET ROLE {APP_ROLE}")
        conn.execute("SELECT set_config('pgrecall.owner', 'bob', false)")
        assert conn.execute("SELECT id FROM entries").fetchall() == [(b.id,)]
