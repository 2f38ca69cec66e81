"""Issue 15.2: what is current — expires_at and supersedes — through a real MCP client session."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from mcp import Client

from pgrecall.mcp.runtime import Runtime
from pgrecall.mcp.server import create_server
from tests.helpers.mcp_calls import call, call_error

pytestmark = pytest.mark.anyio

OLD = "The team meets in room 4.12 on the fourth floor every Monday at nine."
NEW = "The team meets in room 2.07 on the second floor every Monday at nine."
QUESTION = "Where does the team meet on Monday?"


async def _found(client: Client, **extra: Any) -> dict[str, set[str]]:
    searched = await call(client, "search", query=QUESTION, top_k=10, **extra)
    listed = await call(client, "list_entries", limit=100, **extra)
    built = await call(client, "build_context", query=QUESTION, min_relevance=0, **extra)
    return {
        "search": {h["id"] for h in searched["hits"]},
        "list_entries": {e["id"] for e in listed["entries"]},
        "build_context": {c["id"] for c in built["citations"]},
    }


async def test_a_superseded_entry_is_left_out_until_asked_for(client: Client) -> None:
    old = (await call(client, "add_entry", text=OLD, title="Meeting room"))["id"]
    new = (await call(client, "add_entry", text=NEW, title="Meeting room", supersedes=old))["id"]
    for tool, ids in (await _found(client)).items():
        assert new in ids and old not in ids, tool
    for tool, ids in (await _found(client, include_superseded=True)).items():
        assert {new, old} <= ids, tool

    # Deleting the newer entry brings the older one back; restoring it hides the older again.
    await call(client, "delete_entry", id=new)
    for tool, ids in (await _found(client)).items():
        assert old in ids, tool
    await call(client, "restore_entry", id=new)
    assert old not in (await _found(client))["search"]


async def test_get_entry_shows_the_chain_both_ways(client: Client) -> None:
    first = (await call(client, "add_entry", text="Rent is paid on the first of the month.", title="v1"))[
        "id"
    ]
    second = (
        await call(client, "add_entry", text="Rent is paid on the third.", title="v2", supersedes=first)
    )["id"]
    third = (await call(client, "add_entry", text="Rent is paid on the fifth.", title="v3"))["id"]
    updated = await call(client, "update_entry", id=third, supersedes=second)
    assert updated["entry"]["supersedes"] == second

    middle = await call(client, "get_entry", id=second)
    assert middle["supersedes"] == first
    assert [(link["id"], link["depth"]) for link in middle["supersedes_chain"]] == [(first, 1)]
    assert [(link["id"], link["depth"]) for link in middle["superseded_by"]] == [(third, 1)]
    oldest = await call(client, "get_entry", id=first)
    assert [(link["id"], link["depth"]) for link in oldest["superseded_by"]] == [(second, 1), (third, 2)]
    assert oldest["supersedes_chain"] == []
    newest = await call(client, "get_entry", id=third)
    assert [link["title"] for link in newest["supersedes_chain"]] == ["v2", "v1"]

    # A loop is refused: the oldest may not supersede what already supersedes it.
    message = await call_error(client, "update_entry", id=first, supersedes=third)
    assert "supersedes" in message and "loop" in message
    cleared = await call(client, "update_entry", id=third, supersedes="")
    assert cleared["entry"]["supersedes"] is None
    listed = {e["id"] for e in (await call(client, "list_entries", limit=10))["entries"]}
    assert {second, third} <= listed and first not in listed


async def test_expired_entries_are_left_out_until_asked_for(client: Client, db_url: str) -> None:
    soon = (await call(client, "add_entry", text=OLD, expires_at="1h"))["id"]
    lasting = (await call(client, "add_entry", text=NEW, expires_at="2099-01-01T00:00:00Z"))["id"]
    entry = await call(client, "get_entry", id=soon)
    expiry = datetime.fromisoformat(entry["expires_at"])
    assert timedelta(minutes=59) < expiry - datetime.now(UTC) <= timedelta(hours=1)
    for tool, ids in (await _found(client)).items():
        assert {soon, lasting} <= ids, tool

    with psycopg.connect(db_url) as conn:  # test setup: let the hour pass
        conn.execute("UPDATE entries SET expires_at = now() - interval '1 second' WHERE id = %s", (soon,))
    for tool, ids in (await _found(client)).items():
        assert lasting in ids and soon not in ids, tool
    for tool, ids in (await _found(client, include_expired=True)).items():
        assert {soon, lasting} <= ids, tool

    renewed = await call(client, "update_entry", id=soon, expires_at="")
    assert renewed["entry"]["expires_at"] is None
    assert soon in (await _found(client))["search"]
    past = await call(client, "add_entry", text="A note that was already stale.", expires_at="2020-01-01")
    assert past["id"] not in (await _found(client))["list_entries"]


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({"expires_at": "next week"}, "expires_at"),
        ({"expires_at": "5y"}, "expires_at"),
        ({"expires_at": "999999w"}, "expires_at"),
        ({"expires_at": "9999-12-31T00:00:00"}, "expires_at"),
        ({"expires_at": "   "}, "expires_at"),
        ({"supersedes": "not-an-id"}, "supersedes"),
        ({"supersedes": "0190f3a2-0000-7000-8000-000000000000"}, "supersedes"),
    ],
)
async def test_bad_expiry_and_supersedes_are_one_line_naming_the_field(
    client: Client, arguments: dict[str, Any], field: str
) -> None:
    message = await call_error(client, "add_entry", text="Some note.", **arguments)
    assert field in message and "\n" not in message.strip()


async def test_an_entry_cannot_supersede_itself(client: Client) -> None:
    me = (await call(client, "add_entry", text="A note."))["id"]
    message = await call_error(client, "update_entry", id=me, supersedes=me)
    assert "supersedes" in message and "itself" in message


async def test_another_owners_entry_cannot_be_superseded(two_owners: tuple[Runtime, Runtime]) -> None:
    alice_rt, bob_rt = two_owners
    async with Client(create_server(alice_rt)) as alice, Client(create_server(bob_rt)) as bob:
        theirs = (await call(bob, "add_entry", text=OLD))["id"]
        message = await call_error(alice, "add_entry", text=NEW, supersedes=theirs)
        assert "supersedes" in message and "no entry" in message
        assert theirs in {h["id"] for h in (await call(bob, "search", query=QUESTION))["hits"]}
