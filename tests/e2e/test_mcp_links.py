"""Issue 15.1: typed, directed links between entries through a real MCP client session."""

from __future__ import annotations

import pytest
from mcp import Client

from pgrecall.mcp.runtime import Runtime
from pgrecall.mcp.server import create_server
from tests.helpers.mcp_calls import call, call_error

pytestmark = pytest.mark.anyio


async def _add(client: Client, text: str, title: str) -> str:
    return str((await call(client, "add_entry", text=text, title=title))["id"])


async def _graph(client: Client) -> dict[str, str]:
    ids = {
        "decision": await _add(
            client, "We store memories in PostgreSQL with pgvector.", "Decision: PostgreSQL"
        ),
        "task": await _add(
            client, "Write the migration that creates the links table.", "Task: links migration"
        ),
        "doc": await _add(client, "The design document of the memory store.", "Design document"),
        "section": await _add(client, "Section 3 of the design: relations between entries.", "Design §3"),
        "old": await _add(client, "We store memories in SQLite files.", "Old decision: SQLite"),
    }
    await call(client, "link_entries", from_id=ids["task"], to_id=ids["decision"], relation="depends_on")
    await call(client, "link_entries", from_id=ids["section"], to_id=ids["doc"], relation="part_of")
    await call(client, "link_entries", from_id=ids["decision"], to_id=ids["section"], relation="Mentions")
    await call(client, "link_entries", from_id=ids["decision"], to_id=ids["old"], relation="contradicts")
    return ids


async def _related(client: Client, entry: str, **options: object) -> list[tuple[str, str, str, int]]:
    found = await call(client, "get_related", id=entry, **options)
    return [(r["id"], r["relation"], r["direction"], r["depth"]) for r in found["related"]]


async def test_links_are_typed_directed_and_walked(client: Client) -> None:
    ids = await _graph(client)
    around = await _related(client, ids["decision"])
    assert sorted(around) == sorted(
        [
            (ids["task"], "depends_on", "in", 1),
            (ids["section"], "mentions", "out", 1),
            (ids["old"], "contradicts", "out", 1),
        ]
    )
    assert await _related(client, ids["decision"], direction="in") == [(ids["task"], "depends_on", "in", 1)]
    assert await _related(client, ids["decision"], relation="contradicts") == [
        (ids["old"], "contradicts", "out", 1)
    ]
    two = await call(client, "get_related", id=ids["task"], depth=2)
    reached = {(r["id"], r["depth"], r["via"]) for r in two["related"]}
    assert (ids["decision"], 1, ids["task"]) in reached
    assert {(ids["section"], 2, ids["decision"]), (ids["old"], 2, ids["decision"])} <= reached
    assert ids["doc"] not in {r[0] for r in reached}  # three steps away
    assert [r["depth"] for r in two["related"]] == sorted(r["depth"] for r in two["related"])


async def test_linking_twice_keeps_one_link_and_unlink_removes_it(client: Client) -> None:
    ids = await _graph(client)
    again = await call(
        client,
        "link_entries",
        from_id=ids["task"],
        to_id=ids["decision"],
        relation="depends on",
        note="blocker",
    )
    assert again["created"] is False and again["link"]["note"] == "blocker"
    assert len(await _related(client, ids["task"])) == 1
    # Direction matters: the reverse link does not exist.
    nothing = await call(client, "unlink_entries", from_id=ids["decision"], to_id=ids["task"])
    assert nothing["removed"] == []
    gone = await call(
        client, "unlink_entries", from_id=ids["task"], to_id=ids["decision"], relation="depends_on"
    )
    assert gone["removed"] == ["depends_on"]
    assert await _related(client, ids["task"]) == []


async def test_deleting_an_entry_hides_its_links_and_restoring_brings_them_back(client: Client) -> None:
    ids = await _graph(client)
    await call(client, "delete_entry", id=ids["section"])
    assert ids["section"] not in {r[0] for r in await _related(client, ids["decision"])}
    assert "deleted" in await call_error(client, "get_related", id=ids["section"])
    assert "deleted" in await call_error(
        client, "link_entries", from_id=ids["task"], to_id=ids["section"], relation="relates_to"
    )
    await call(client, "restore_entry", id=ids["section"])
    assert (ids["section"], "mentions", "out", 1) in await _related(client, ids["decision"])
    assert (ids["doc"], "part_of", "out", 1) in await _related(client, ids["section"])


async def test_recent_activity_lists_links(client: Client) -> None:
    ids = await _graph(client)
    changes = (await call(client, "recent_activity", since="1h", limit=100))["changes"]
    linked = [(c["id"], c["change"]) for c in changes if c["change"] == "linked"]
    assert (ids["task"], "linked") in linked and len(linked) == 4
    first = next(c for c in changes if c["change"] == "linked" and c["id"] == ids["task"])
    assert first["link"] == {"relation": "depends_on", "to_id": ids["decision"]}


@pytest.mark.parametrize(
    ("arguments", "field", "rule"),
    [
        ({"relation": "loves"}, "relation", "unknown relation"),
        ({"relation": ""}, "relation", "unknown relation"),
        ({"relation": "depends_on", "to_id": "not-an-id"}, "to_id", "UUID"),
        ({"relation": "depends_on", "to_id": "0190f3a2-0000-7000-8000-000000000000"}, "to_id", "no entry"),
        ({"relation": "depends_on", "note": "x" * 1001}, "note", "limit"),
    ],
)
async def test_bad_links_are_one_line_naming_the_field(
    client: Client, arguments: dict[str, str], field: str, rule: str
) -> None:
    a = await _add(client, "First entry.", "A")
    b = await _add(client, "Second entry.", "B")
    message = await call_error(client, "link_entries", **{"from_id": a, "to_id": b, **arguments})
    assert f"{field}: " in message and rule in message and "\n" not in message.strip()


async def test_an_entry_cannot_link_to_itself(client: Client) -> None:
    a = await _add(client, "Alone.", "A")
    message = await call_error(client, "link_entries", from_id=a, to_id=a, relation="relates_to")
    assert "to_id" in message and "itself" in message
    assert "depth" in await call_error(client, "get_related", id=a, depth=3)
    assert "relation" in await call_error(client, "get_related", id=a, relation="loves")


async def test_another_owners_entry_is_not_found(two_owners: tuple[Runtime, Runtime]) -> None:
    alice_rt, bob_rt = two_owners
    async with Client(create_server(alice_rt)) as alice, Client(create_server(bob_rt)) as bob:
        mine = await _add(alice, "Alice's note.", "A")
        theirs = await _add(bob, "Bob's note.", "B")
        message = await call_error(alice, "link_entries", from_id=mine, to_id=theirs, relation="relates_to")
        assert "to_id: " in message and "no entry" in message
        assert "no entry" in await call_error(alice, "get_related", id=theirs)
        assert "no entry" in await call_error(alice, "unlink_entries", from_id=theirs, to_id=mine)
        assert (await call(bob, "get_related", id=theirs))["related"] == []


async def test_build_context_expand_related_adds_linked_entries_labelled(client: Client) -> None:
    question = "How long are database backups kept?"
    backups = await _add(
        client,
        "Database backups are kept for thirty days in cold storage. The nightly job copies every "
        "database to the bucket at two o'clock, checks the copy, and deletes copies older than thirty "
        "days; a weekly copy goes to a second region and is kept for a year.",
        "Backups",
    )
    restore = await _add(client, "Restores take about two hours for the largest tenant.", "Restore drill")
    policy = await _add(client, "Legal requires a copy of every invoice for ten years.", "Retention law")
    stale = await _add(client, "Invoices older than a year move to the archive bucket.", "Archive v1")
    await _add(client, "Knead the bread dough for ten minutes.", "Bread")
    await call(client, "link_entries", from_id=restore, to_id=backups, relation="depends_on")
    await call(client, "link_entries", from_id=backups, to_id=policy, relation="implements")
    await call(client, "link_entries", from_id=backups, to_id=stale, relation="relates_to")
    await call(client, "add_entry", text="Invoices older than two years move to archive.", supersedes=stale)

    plain = await call(client, "build_context", query=question, top_k=1)
    assert [c["id"] for c in plain["citations"]] == [backups]
    assert all(c["linked"] is None for c in plain["citations"])

    expanded = await call(client, "build_context", query=question, top_k=1, expand_related=True)
    cited = {c["id"]: c for c in expanded["citations"]}
    assert cited[backups]["label"] == "S1" and cited[backups]["linked"] is None
    assert cited[restore]["linked"] == {"label": "S1", "relation": "depends_on", "direction": "in"}
    assert cited[policy]["linked"] == {"label": "S1", "relation": "implements", "direction": "out"}
    assert stale not in cited  # superseded: left out, as search leaves it out
    restore_label = cited[restore]["label"]
    assert f"[{restore_label}] Restore drill (linked: {restore_label} depends_on S1)" in expanded["context"]
    assert f"(linked: S1 implements {cited[policy]['label']})" in expanded["context"]

    budget = max(plain["total_tokens"] + 5, 50)  # room for the hit, not for a linked entry
    tight = await call(
        client, "build_context", query=question, top_k=1, expand_related=True, token_budget=budget
    )
    assert [c["id"] for c in tight["citations"]] == [backups]
    assert {d["id"] for d in tight["dropped"]} >= {restore, policy}
    assert tight["total_tokens"] <= budget
