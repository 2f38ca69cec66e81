"""Issue 15 (part): recent_activity(since) and list_tags through a real MCP client session."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from mcp import Client

from pgrecall.mcp.runtime import Runtime
from pgrecall.mcp.server import create_server
from tests.helpers.mcp_calls import call, call_error

pytestmark = pytest.mark.anyio


async def _pages(client: Client, since: str, limit: int) -> list[list[dict[str, object]]]:
    pages: list[list[dict[str, object]]] = []
    cursor = None
    for _ in range(50):  # bounded: the test store holds a handful of changes
        page = await call(client, "recent_activity", since=since, limit=limit, cursor=cursor)
        pages.append(page["changes"])
        cursor = page["next_cursor"]
        if cursor is None:
            return pages
    raise AssertionError("recent_activity kept returning a next_cursor")


async def test_changes_in_a_window_newest_first_and_paginated(client: Client) -> None:
    first = await call(client, "add_entry", text="The heating is serviced every October.", title="Heating")
    second = await call(client, "add_entry", text="Backups run on Sunday night at two o'clock.")
    third = await call(client, "add_entry", text="The office closes early on Fridays in summer.")
    await call(client, "update_entry", id=first["id"], title="Heating service")
    await call(client, "delete_entry", id=second["id"])

    whole = await call(client, "recent_activity", since="24h")
    seen = [(c["id"], c["change"]) for c in whole["changes"]]
    assert set(seen) == {
        (first["id"], "added"),
        (second["id"], "added"),
        (third["id"], "added"),
        (first["id"], "updated"),
        (second["id"], "deleted"),
    }
    times = [c["at"] for c in whole["changes"]]
    assert times == sorted(times, reverse=True)
    assert seen[0] == (second["id"], "deleted")  # the last thing done comes first
    titled = next(c for c in whole["changes"] if c["id"] == first["id"])
    assert titled["title"] == "Heating service" and titled["snippet"] is None
    untitled = next(c for c in whole["changes"] if c["id"] == third["id"])
    assert untitled["snippet"].startswith("The office closes early")
    assert whole["next_cursor"] is None

    # Pages of two give the same changes in the same order, each once.
    paged = [item for page in await _pages(client, "24h", 2) for item in page]
    assert [(c["id"], c["change"]) for c in paged] == seen

    # An ISO time after everything: nothing; one before: everything.
    later = (datetime.now(UTC) + timedelta(minutes=5)).isoformat()
    assert (await call(client, "recent_activity", since=later))["changes"] == []
    earlier = (datetime.now(UTC) - timedelta(hours=1)).replace(tzinfo=None).isoformat()  # no offset: UTC
    assert len((await call(client, "recent_activity", since=earlier))["changes"]) == 5


@pytest.mark.parametrize(
    ("since", "rule"),
    [
        ("yesterday", "since: not understood"),
        ("7 days", "since: not understood"),
        ("", "since: is required"),
        ("99999w", "since: at most 3650 days back"),
    ],
)
async def test_bad_since_is_one_line_naming_it(client: Client, since: str, rule: str) -> None:
    text = await call_error(client, "recent_activity", since=since)
    assert rule in text and "\n" not in text.strip()


async def test_bad_cursor_and_limit_are_refused(client: Client) -> None:
    assert "cursor: not a cursor returned by recent_activity" in await call_error(
        client, "recent_activity", since="7d", cursor="bm90IGEgY3Vyc29y"
    )
    assert "limit" in await call_error(client, "recent_activity", since="7d", limit=0)


async def test_list_tags_counts_live_entries_with_a_case_insensitive_prefix(client: Client) -> None:
    await call(client, "add_entry", text="Rotate the API keys every quarter.", tags=["Ops", "security"])
    await call(client, "add_entry", text="Patch the web servers on Tuesdays.", tags=["ops", "servers"])
    gone = await call(client, "add_entry", text="An old note about the printer.", tags=["ops-old"])
    await call(client, "delete_entry", id=gone["id"])

    everything = await call(client, "list_tags")
    counts = {t["tag"]: t["entries"] for t in everything["tags"]}
    # Folded as the filters match them, in the first spelling on a tie; deleted entries left out.
    assert counts == {"Ops": 2, "security": 1, "servers": 1}
    assert everything["tags"][0]["tag"] == "Ops"
    by_prefix = await call(client, "list_tags", prefix="OP")
    assert [(t["tag"], t["entries"]) for t in by_prefix["tags"]] == [("Ops", 2)]
    one = await call(client, "list_tags", limit=1)
    assert len(one["tags"]) == 1 and one["truncated"] is True


async def test_an_owner_sees_only_their_own_activity_and_tags(two_owners: tuple[Runtime, Runtime]) -> None:
    alice, bob = two_owners
    async with Client(create_server(alice)) as as_alice, Client(create_server(bob)) as as_bob:
        await call(as_alice, "add_entry", text="Alice keeps her travel plans here.", tags=["travel"])
        assert (await call(as_bob, "recent_activity", since="1h"))["changes"] == []
        assert (await call(as_bob, "list_tags"))["tags"] == []
        assert len((await call(as_alice, "recent_activity", since="1h"))["changes"]) == 1
