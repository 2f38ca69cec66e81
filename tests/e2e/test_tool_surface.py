"""The tool surface a client pays for in tokens: true descriptions and hints, null as "default",
one-line argument errors, untitled schemas and compact result text (through a real MCP client)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

import pytest
from mcp import Client

from pgrecall.domain.validation import MAX_LIST_LIMIT, MAX_TOP_K
from pgrecall.mcp.runtime import Runtime
from pgrecall.mcp.server import create_server, model_visible_bytes
from tests.helpers.mcp_calls import call, call_error

pytestmark = pytest.mark.anyio

READ_ONLY = {
    "get_entry",
    "list_entries",
    "stats",
    "search",
    "build_context",
    "verify_citations",
    "recent_activity",
    "list_tags",
    "get_related",
    "get_document",
    "list_documents",
}
HASH = "sha256:" + "0" * 64
# Optional alone but one of a required pair (ingest_document takes text or path): null for the one
# given leaves neither, a caller mistake answered with one line (test_mcp_documents).
ONE_OF_REQUIRED = {("ingest_document", "text")}


async def _tools(client: Client) -> dict[str, Any]:
    return {t.name: t for t in (await client.list_tools()).tools}


async def test_annotations_match_what_the_tools_do(client: Client) -> None:
    tools = await _tools(client)
    for name, tool in tools.items():
        hints = tool.annotations
        assert hints is not None, name
        assert hints.open_world_hint is False, name  # the store only, nothing outside it
        assert hints.read_only_hint is (name in READ_ONLY), name
    # Repeating update_entry bumps the version again: not idempotent.
    assert tools["update_entry"].annotations.idempotent_hint is False
    assert tools["add_entry"].annotations.idempotent_hint is False
    # A repeated delete or restore fails and changes nothing.
    assert tools["delete_entry"].annotations.idempotent_hint is True
    assert tools["delete_entry"].annotations.destructive_hint is True
    assert tools["restore_entry"].annotations.idempotent_hint is True


async def test_update_entry_changes_content_hash_as_documented(client: Client) -> None:
    description = (await _tools(client))["update_entry"].description
    assert "only a new text changes it" in description and "title change keeps it" in description
    added = await call(client, "add_entry", text="The build runs on the CI server nightly.")
    first = await call(client, "update_entry", id=added["id"], title="Nightly build")
    assert first["entry"]["content_hash"] == added["content_hash"]
    again = await call(client, "update_entry", id=added["id"], title="Nightly build")
    assert again["entry"]["version"] == first["entry"]["version"] + 1  # why it is not idempotent
    second = await call(client, "update_entry", id=added["id"], text="The build runs hourly.")
    assert second["entry"]["content_hash"] != added["content_hash"]


async def test_date_bounds_are_inclusive_after_and_exclusive_before(client: Client) -> None:
    tools = await _tools(client)
    for name in ("search", "list_entries"):
        props = tools[name].input_schema["properties"]
        for bound in ("created", "updated"):
            assert "inclusive" in props[f"{bound}_after"]["description"], name
            assert "exclusive" in props[f"{bound}_before"]["description"], name
    added = await call(client, "add_entry", text="Bound check: the cutoff is the creation time itself.")
    created = datetime.fromisoformat(added["created_at"])
    at, later = created.isoformat(), (created + timedelta(microseconds=1)).isoformat()

    async def listed(**bounds: str) -> bool:
        page = await call(client, "list_entries", **bounds)
        return added["id"] in {e["id"] for e in page["entries"]}

    assert await listed(created_after=at)
    assert not await listed(created_before=at)
    assert await listed(created_before=later)


def _base_arguments(entry_id: str, other_id: str, document_id: str) -> dict[str, dict[str, Any]]:
    """Valid arguments per tool; where one optional argument is needed, two are given (nulling one
    leaves the other): two changes for update_entry, a query and a selection for the searches."""
    return {
        "add_entry": {"text": "Null means default: an entry added with null options."},
        "update_entry": {"id": entry_id, "title": "Nulls", "kind": "fact"},
        "delete_entry": {"id": entry_id},
        "restore_entry": {"id": entry_id},
        "get_entry": {"id": entry_id},
        "list_entries": {},
        "stats": {},
        "search": {"query": "null default", "selected_text": "defaults"},
        "build_context": {"query": "null default", "selected_text": "defaults"},
        "verify_citations": {"citations": [{"content_hash": HASH}]},
        "recent_activity": {"since": "7d"},
        "list_tags": {},
        "link_entries": {"from_id": entry_id, "to_id": other_id, "relation": "relates_to"},
        "unlink_entries": {"from_id": entry_id, "to_id": other_id},
        "get_related": {"id": entry_id},
        "ingest_document": {"source": "nulls.md", "text": "# Nulls\n\nNull means default.", "title": "N"},
        "get_document": {"id": document_id},
        "list_documents": {},
        "delete_document": {"id": document_id},
    }


def _admits_null(schema: dict[str, Any]) -> bool:
    """Null is accepted: by the type (a type list naming null) or by a branch of an anyOf; an enum,
    if any, lists null too."""
    types = schema.get("type")
    typed = types == "null" or (isinstance(types, list) and "null" in types)
    if "anyOf" in schema:
        return any(_admits_null(branch) for branch in schema["anyOf"])
    return typed and ("enum" not in schema or None in schema["enum"])


async def test_null_for_any_optional_argument_means_its_default(client: Client) -> None:
    added = await call(client, "add_entry", text="An entry the null checks update and read.")
    other = await call(client, "add_entry", text="Another entry, for the link tools.")
    document = await call(client, "ingest_document", source="doc.md", text="# Doc\n\nA document.")
    bases = _base_arguments(added["id"], other["id"], document["document"]["id"])
    tools = await _tools(client)
    assert set(tools) == set(bases)
    checked = 0
    for name, tool in tools.items():
        schema = tool.input_schema
        required = set(schema.get("required", []))
        for prop, prop_schema in schema.get("properties", {}).items():
            if prop in required:
                continue
            assert _admits_null(prop_schema), f"{name}.{prop}: the schema does not admit null"
            if (name, prop) in ONE_OF_REQUIRED:
                continue
            arguments = {**bases[name], prop: None}
            result = await client.call_tool(name, arguments)
            assert not result.is_error, f"{name}({prop}=null): {result.content}"
            checked += 1
    assert checked >= 40  # every optional parameter of every tool was sent as null


async def test_nulls_all_at_once_give_the_defaults(client: Client) -> None:
    await call(client, "add_entry", text="Kubernetes pods restart when the liveness probe fails.")
    nulls = dict.fromkeys(("top_k", "mode", "explain", "diversify", "kind", "language", "min_score"))
    with_nulls = await call(client, "search", query="pods restart", **nulls)
    plain = await call(client, "search", query="pods restart")
    assert [h["id"] for h in with_nulls["hits"]] == [h["id"] for h in plain["hits"]]
    page = await call(client, "list_entries", limit=None, include_deleted=None, cursor=None)
    assert len(page["entries"]) == 1


@pytest.mark.parametrize(
    ("tool", "arguments", "expected"),
    [
        ("search", {"query": "x", "top_k": "many"}, f"top_k: must be an integer between 1 and {MAX_TOP_K}"),
        ("search", {"query": "x", "top_k": 0}, f"top_k: must be an integer between 1 and {MAX_TOP_K}"),
        ("search", {"query": "x", "mode": "fast"}, "mode: must be one of hybrid, vector, lexical"),
        (
            "search",
            {"query": "x", "top_k": 99, "mode": "fast"},
            f"top_k: must be an integer between 1 and {MAX_TOP_K}; "
            "mode: must be one of hybrid, vector, lexical",
        ),
        ("get_entry", {}, "id: required"),
        ("list_entries", {"limit": 1.5}, f"limit: must be an integer between 1 and {MAX_LIST_LIMIT}"),
        ("verify_citations", {"citations": [{"id": "x"}]}, "citations[0].content_hash: required"),
        ("search", {"query": "x", "explain": "perhaps"}, "explain: must be a valid boolean"),
    ],
)
async def test_argument_errors_are_one_line_naming_field_and_rule(
    client: Client, tool: str, arguments: dict[str, Any], expected: str
) -> None:
    text = await call_error(client, tool, **arguments)
    assert text.startswith(f"Error executing tool {tool}: ")
    assert text.removeprefix(f"Error executing tool {tool}: ").startswith(expected), text
    assert "\n" not in text and "http" not in text and "For further information" not in text


async def test_schemas_carry_no_generated_titles_nor_null_defaults(client: Client) -> None:
    def titles(node: Any, path: str) -> list[str]:
        found: list[str] = []
        if isinstance(node, dict):
            for key, value in node.items():
                if key in ("properties", "$defs"):
                    for name, sub in value.items():
                        found += titles(sub, f"{path}.{name}")
                elif key == "title" and isinstance(value, str):
                    found.append(path)
                else:
                    found += titles(value, f"{path}.{key}")
        elif isinstance(node, list):
            for i, item in enumerate(node):
                found += titles(item, f"{path}[{i}]")
        return found

    tools = await _tools(client)
    for name, tool in tools.items():
        assert titles(tool.input_schema, name) == [], name
        assert titles(tool.output_schema, name) == [], name
    for name, tool in tools.items():  # an optional property left out is null already
        nulls = [
            p
            for p, sub in tool.input_schema["properties"].items()
            if "default" in sub and sub["default"] is None
        ]
        assert nulls == [], name
    # A parameter named "title" is a property, not a generated title: it stays.
    assert "title" in tools["add_entry"].input_schema["properties"]


async def test_optional_arguments_admit_null_as_a_type_list_not_an_anyof(client: Client) -> None:
    search = (await _tools(client))["search"].input_schema["properties"]
    assert search["query"] == {"description": search["query"]["description"], "type": ["string", "null"]}
    assert search["top_k"]["type"] == ["integer", "null"] and search["top_k"]["maximum"] == MAX_TOP_K
    assert search["mode"]["enum"] == ["hybrid", "vector", "lexical", None]
    assert search["group_by"]["enum"] == ["document", None]
    assert "anyOf" not in json.dumps(search)


async def test_what_a_model_reads_of_the_tool_list_fits_in_20_kib(client: Client) -> None:
    # Names, descriptions and input schemas are read on every conversation (issue 36: ≤ 20 KB).
    tools = (await client.list_tools()).tools
    assert len(tools) == 19
    assert model_visible_bytes(tools) <= 20 * 1024


async def test_result_text_is_compact_json_of_the_structured_content(client: Client) -> None:
    await call(client, "add_entry", text="Compact results: no indentation in the text copy.")
    for tool, arguments in (("list_entries", {}), ("stats", {}), ("search", {"query": "compact results"})):
        result = await client.call_tool(tool, arguments)
        assert not result.is_error
        text = result.content[0].text  # type: ignore[union-attr]
        assert json.loads(text) == result.structured_content
        assert text == json.dumps(result.structured_content, ensure_ascii=False, separators=(",", ":"))


async def test_the_tool_list_is_computed_once_and_follows_a_tool_added_later(runtime: Runtime) -> None:
    server = create_server(runtime)
    async with Client(server) as client:
        first = (await client.list_tools()).tools
        assert (await server.list_tools()) is (await server.list_tools())  # not recomputed per call

        async def echo_tool(word: str) -> str:
            """Say the word back."""
            return word

        server.add_tool(echo_tool)
        names = {t.name for t in (await client.list_tools()).tools}
        assert names == {t.name for t in first} | {"echo_tool"}
        server.remove_tool("echo_tool")
        assert {t.name for t in (await client.list_tools()).tools} == {t.name for t in first}
