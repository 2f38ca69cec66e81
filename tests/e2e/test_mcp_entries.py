"""Entry tools through a real (in-memory) MCP client session."""

from __future__ import annotations

import uuid

import pytest
from mcp import Client

from pgrecall.mcp.runtime import Runtime
from tests.helpers.mcp_calls import call, call_error

pytestmark = pytest.mark.anyio

EXPECTED_TOOLS = {
    "add_entry",
    "update_entry",
    "delete_entry",
    "restore_entry",
    "get_entry",
    "list_entries",
    "stats",
}


async def test_tools_are_listed_with_documented_schemas(client: Client) -> None:
    tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) >= EXPECTED_TOOLS
    for name, tool in tools.items():
        assert tool.description and len(tool.description) > 40, name
        assert tool.output_schema is not None, name
        for prop, schema in tool.input_schema.get("properties", {}).items():
            assert schema.get("description"), f"{name}.{prop} has no description"
    add = tools["add_entry"].input_schema
    assert add["required"] == ["text"]
    assert {"text", "title", "tags", "source", "kind", "metadata", "language", "idempotency_key"} <= set(
        add["properties"]
    )
    assert "similar" in tools["add_entry"].output_schema["properties"]  # type: ignore[index]


@pytest.mark.parametrize(
    ("text", "regconfig", "iso"),
    [
        ("Die Häuser am See sind im Winter kalt und still.", "german", "de"),
        ("Les maisons au bord du lac sont magnifiques en été.", "french", "fr"),
        ("Дома у озера очень красивые и дорогие зимой.", "russian", "ru"),
    ],
)
async def test_add_detects_language(client: Client, text: str, regconfig: str, iso: str) -> None:
    added = await call(client, "add_entry", text=text, tags=["lake"])
    assert added["language"] == {
        "regconfig": regconfig,
        "iso": iso,
        "how": "detected",
        "detected": None,
        "note": None,
    }
    assert added["content_hash"].startswith("sha256:") and added["version"] == 1
    assert added["vector_pending"] is False and added["idempotent_replay"] is False
    fetched = await call(client, "get_entry", id=added["id"])
    assert fetched["text"] == text and fetched["language"] == regconfig and fetched["tags"] == ["lake"]
    assert "embedding" not in str(fetched).lower() or "vector_pending" in fetched


async def test_update_delete_restore(client: Client) -> None:
    added = await call(
        client, "add_entry", text="The deploy window is Tuesday.", title="Deploys", language="en"
    )
    updated = await call(client, "update_entry", id=added["id"], text="The deploy window is Thursday.")
    entry = updated["entry"]
    assert entry["version"] == 2 and entry["title"] == "Deploys"
    assert entry["content_hash"] != added["content_hash"] and updated["language"]["how"] == "kept"
    relang = await call(client, "update_entry", id=added["id"], language="simple", title="")
    assert relang["entry"]["language"] == "simple" and relang["entry"]["title"] is None
    deleted = await call(client, "delete_entry", id=added["id"])
    assert deleted["id"] == added["id"] and deleted["deleted_at"]
    assert "deleted" in await call_error(client, "get_entry", id=added["id"])
    again = await call_error(client, "delete_entry", id=added["id"])
    assert "no live entry" in again and "already deleted" in again
    listed = await call(client, "list_entries")
    assert added["id"] not in [e["id"] for e in listed["entries"]]
    with_deleted = await call(client, "list_entries", include_deleted=True)
    assert added["id"] in [e["id"] for e in with_deleted["entries"]]
    restored = await call(client, "restore_entry", id=added["id"])
    assert restored["entry"]["deleted_at"] is None and restored["entry"]["version"] == 3
    assert "no deleted entry" in await call_error(client, "restore_entry", id=added["id"])


async def test_pagination_walks_every_entry_once(client: Client) -> None:
    ids = [
        (await call(client, "add_entry", text=f"Paged entry number {i}.", language="en"))["id"]
        for i in range(11)
    ]
    seen: list[str] = []
    cursor = None
    pages = 0
    while True:
        args = {"limit": 4} | ({"cursor": cursor} if cursor else {})
        page = await call(client, "list_entries", **args)
        seen += [e["id"] for e in page["entries"]]
        pages += 1
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert pages == 3 and seen == list(reversed(ids))
    filtered = await call(client, "list_entries", language="en", limit=50)
    assert len(filtered["entries"]) == 11


async def test_idempotency_key(client: Client) -> None:
    first = await call(client, "add_entry", text="Pay the invoice by Friday.", idempotency_key="req-42")
    again = await call(client, "add_entry", text="Pay the invoice by Friday.", idempotency_key="req-42")
    assert again["id"] == first["id"] and again["idempotent_replay"] is True and again["similar"] == []
    other = await call(client, "add_entry", text="Pay the invoice by Friday.", idempotency_key="req-43")
    assert other["id"] != first["id"]
    stats = await call(client, "stats")
    assert stats["entries"] == 2


async def test_exact_duplicate_is_reported(client: Client) -> None:
    first = await call(client, "add_entry", text="Standup moved to 9:30 every weekday.")
    second = await call(client, "add_entry", text="  Standup moved to 9:30   every weekday. ")
    assert second["content_hash"] == first["content_hash"]
    assert second["similar"][0]["id"] == first["id"] and second["similar"][0]["exact"] is True
    assert second["similar"][0]["overlap"] == 1.0


async def test_stats(client: Client, runtime: Runtime) -> None:
    await call(client, "add_entry", text="Ein kurzer deutscher Satz über das Wetter heute.", kind="fact")
    await call(client, "add_entry", text="An English sentence about the weather today.", kind="note")
    stats = await call(client, "stats")
    assert stats["entries"] == 2 and stats["by_language"] == {"english": 1, "german": 1}
    assert stats["by_kind"] == {"fact": 1, "note": 1}
    assert stats["pending_vectors"] == 0 and stats["embedding_model"] == runtime.active_model
    assert stats["schema_revision"]


@pytest.mark.parametrize(
    ("tool", "arguments", "expected"),
    [
        ("add_entry", {"text": ""}, "text: must not be empty"),
        ("add_entry", {"text": "x" * 5001}, "text: is 5001 characters; the limit is 5000"),
        ("add_entry", {"text": "hello", "language": "xx"}, "language: unknown language 'xx'"),
        ("add_entry", {"text": "hello", "kind": "two words"}, "kind: must be 1-64 characters"),
        ("add_entry", {"text": "hello", "tags": ["ok", " "]}, "tags: tags must not be empty"),
        (
            "add_entry",
            {
                "text": "hello",
                "metadata": {"a": {"b": {"c": {"d": {"e": {"f": {"g": {"h": {"i": {"j": {}}}}}}}}}}},
            },
            "metadata: is nested deeper",
        ),
        ("add_entry", {"text": "a\x00b"}, "text: must not contain NUL"),
        ("add_entry", {"text": "hello", "idempotency_key": ""}, "idempotency_key: must be 1-200"),
        ("add_entry", {"title": "no text"}, "text"),
        ("get_entry", {"id": "42"}, "id: must be a UUID"),
        ("get_entry", {"id": str(uuid.UUID(int=1))}, "id: no entry"),
        ("update_entry", {"id": "nope", "text": "x"}, "id: must be a UUID"),
        ("update_entry", {"id": str(uuid.UUID(int=1)), "text": "x"}, "id: no entry"),
        ("delete_entry", {"id": "'; DROP TABLE entries; --"}, "id: must be a UUID"),
        ("restore_entry", {"id": str(uuid.UUID(int=2))}, "id: no deleted entry"),
        ("list_entries", {"limit": 0}, "limit"),
        ("list_entries", {"limit": 201}, "limit"),
        ("list_entries", {"cursor": "bogus"}, "cursor: not a cursor"),
        ("list_entries", {"language": "zz"}, "language: unknown language 'zz'"),
        ("update_entry", {"id": str(uuid.UUID(int=3)), "expected_version": 0}, "expected_version"),
    ],
)
async def test_bad_input_is_a_clear_tool_error_and_writes_nothing(
    client: Client, tool: str, arguments: dict[str, object], expected: str
) -> None:
    message = await call_error(client, tool, **arguments)
    assert expected in message
    assert "Error executing tool" in message and message != f"Error executing tool {tool}"
    assert (await call(client, "stats"))["entries"] == 0


async def test_version_conflict_is_reported(client: Client) -> None:
    added = await call(client, "add_entry", text="Optimistic locking test entry.", language="en")
    await call(client, "update_entry", id=added["id"], kind="fact", expected_version=1)
    message = await call_error(client, "update_entry", id=added["id"], kind="note", expected_version=1)
    assert "expected_version: entry" in message and "is at version 2, not 1" in message
