"""Short ids through a real MCP client: the 8 hex digits the CLI and the web page show work everywhere.

Two entries get chosen ids that share their first 8 digits (as everything written within a minute
does, UUIDv7) and their last 8, so both ends can be ambiguous on purpose.
"""

from __future__ import annotations

import json
import uuid

import pytest
from mcp import Client
from mcp.types import TextResourceContents

from pgrecall.domain.entries import NewEntry
from pgrecall.mcp.runtime import Runtime
from pgrecall.store.entries_sql import SQL_IDS_MATCHING
from pgrecall.store.scope import owner_transaction
from tests.helpers.mcp_calls import call, call_error

pytestmark = pytest.mark.anyio

FIRST = "01900000-0000-7000-8000-00aadeadbeef"
SECOND = "01900000-0001-7000-8000-00bbdeadbeef"


async def _two_entries(runtime: Runtime, client: Client) -> tuple[str, str]:
    a = await call(client, "add_entry", text="The boiler is serviced every October.", title="Boiler")
    b = await call(client, "add_entry", text="Nightly backups start at two o'clock.", title="Backups")
    with owner_transaction(runtime.app.pool, runtime.app.settings.owner) as conn:
        conn.execute("UPDATE entries SET id = %s WHERE id = %s", (FIRST, a["id"]))
        conn.execute("UPDATE entries SET id = %s WHERE id = %s", (SECOND, b["id"]))
    return FIRST, SECOND


async def test_tools_and_the_resource_take_a_unique_part_of_an_id(runtime: Runtime, client: Client) -> None:
    first, second = await _two_entries(runtime, client)
    # The end the CLI shows (8 digits and more) and a unique start (dashes optional).
    assert (await call(client, "get_entry", id="aadeadbeef"))["id"] == first
    assert (await call(client, "get_entry", id="01900000-0001"))["id"] == second
    assert (await call(client, "get_entry", id="0190000000017"))["id"] == second
    result = await client.read_resource("pgrecall://entry/bbdeadbeef")
    [content] = result.contents
    assert isinstance(content, TextResourceContents) and json.loads(content.text)["id"] == second
    updated = await call(client, "update_entry", id="aadeadbeef", title="Boiler service")
    assert updated["entry"]["id"] == first and updated["entry"]["title"] == "Boiler service"
    await call(client, "link_entries", from_id="aadeadbeef", to_id="0190000000017", relation="depends_on")
    related = await call(client, "get_related", id="bbdeadbeef")
    assert [r["id"] for r in related["related"]] == [first]
    cited = await call(client, "get_entry", id=first)
    report = await call(
        client, "verify_citations", citations=[{"id": "aadeadbeef", "content_hash": cited["content_hash"]}]
    )
    assert report["all_valid"] is True and report["results"][0]["id"] == first
    assert (await call(client, "delete_entry", id="aadeadbeef"))["id"] == first
    assert (await call(client, "restore_entry", id="aadeadbeef"))["entry"]["id"] == first


async def test_an_ambiguous_or_short_part_is_one_line_naming_the_field(
    runtime: Runtime, client: Client
) -> None:
    first, second = await _two_entries(runtime, client)
    for part in ("deadbeef", "01900000"):
        message = await call_error(client, "get_entry", id=part)
        assert "\n" not in message and "id:" in message and "several entries" in message, message
        assert first in message and second in message
    linked = await call_error(client, "link_entries", from_id="deadbeef", to_id=first, relation="depends_on")
    assert "from_id:" in linked and "several entries" in linked
    short = await call_error(client, "get_entry", id="adbeef")
    assert "\n" not in short and "id:" in short and "at least 8 hex digits" in short
    unknown = await call_error(client, "get_entry", id="0badc0de")
    assert "no entry" in unknown


async def test_both_ends_of_an_id_are_found_through_an_index(runtime: Runtime, client: Client) -> None:
    from pgrecall.store.entries import _tail

    await _two_entries(runtime, client)
    # Enough entries that reading all of the owner's ids would cost the planner more than the index.
    runtime.app.store.insert_many(
        runtime.app.settings.owner,
        [
            NewEntry(body=f"filler {i}", content_hash=f"sha256:{i:064x}", language="simple")
            for i in range(3000)
        ],
    )
    digits = "aadeadbeef"
    params = {
        "owner": runtime.app.settings.owner,
        "low": uuid.UUID(digits.ljust(32, "0")),
        "high": uuid.UUID(digits.ljust(32, "f")),
        "tail": _tail(digits),
        "tail_end": _tail(digits) + "~",
        "include_deleted": True,
        "limit": 6,
    }
    with owner_transaction(runtime.app.pool, runtime.app.settings.owner) as conn:
        plan = "\n".join(r["QUERY PLAN"] for r in conn.execute("EXPLAIN " + SQL_IDS_MATCHING, params))
    assert "entries_pkey" in plan and "entries_id_tail" in plan, plan
