"""search through a real MCP client: languages, modes, filters, explain, limits."""

from __future__ import annotations

import pytest
from mcp import Client

from pgrecall.mcp.runtime import Runtime
from tests.helpers.mcp_calls import call, call_error

pytestmark = pytest.mark.anyio

ENTRIES = [
    ("Die Häuser am See werden im Winter kaum bewohnt; viele Seen frieren zu.", ["travel"]),
    ("Les chevaux galopaient dans les prairies au lever du soleil.", ["animals"]),
    ("Las bibliotecas públicas abren los domingos durante el verano.", ["city"]),
    ("Студенты сдавали экзамены по математике в понедельник.", ["school"]),
    ("Retirement accounts let employees save part of their salary before tax.", ["finance"]),
]


async def _load(client: Client) -> list[dict[str, object]]:
    return [await call(client, "add_entry", text=text, tags=tags) for text, tags in ENTRIES]


@pytest.mark.parametrize(
    ("query", "index"),
    [
        ("Häuser am See", 0),
        ("cheval galopant dans la prairie", 1),
        ("biblioteca pública domingo", 2),
        ("экзамен по математике", 3),
        ("How do employees save for retiring?", 4),
    ],
)
async def test_search_finds_each_language_without_a_language_parameter(
    client: Client, query: str, index: int
) -> None:
    added = await _load(client)
    result = await call(client, "search", query=query, mode="lexical", explain=True)
    assert result["status"] == "ok" and result["hits"][0]["id"] == added[index]["id"]
    hybrid = await call(client, "search", query=query)
    assert hybrid["hits"][0]["id"] == added[index]["id"] and hybrid["degraded"] is False
    assert hybrid["hits"][0]["breakdown"] is None
    assert "embedding" not in str(hybrid)


async def test_explain_breakdown_and_request_id(client: Client) -> None:
    await _load(client)
    result = await call(client, "search", query="Häuser am See", explain=True, top_k=3)
    top = result["hits"][0]
    b = top["breakdown"]
    assert b["regconfig"] == "german" and b["lexical_rank"] == 1 and b["vector_rank"] is not None
    assert (
        abs(b["vector_rrf"] + b["lexical_rrf"] - b["fused"]) < 1e-9 and abs(top["score"] - b["fused"]) < 1e-9
    )
    assert len(result["request_id"]) == 32 and set(result["timings"]) >= {"total_ms", "sql_ms"}


async def test_filters_and_empty_states(client: Client) -> None:
    empty = await call(client, "search", query="anything at all")
    assert empty["status"] == "empty_store" and empty["hits"] == []
    await _load(client)
    only_school = await call(client, "search", query="Häuser am See", tags_any=["school"], top_k=5)
    assert [h["tags"] for h in only_school["hits"]] == [["school"]]
    none = await call(client, "search", query="zzzqqq xylophone", mode="lexical")
    assert none["status"] == "no_matches"


async def test_degraded_search_without_embedder(runtime: Runtime) -> None:
    from pgrecall.mcp.server import create_server

    runtime.app.search.embedder = None
    async with Client(create_server(runtime)) as client:
        await call(client, "add_entry", text="Kubernetes pods restart when memory runs out.", language="en")
        result = await call(client, "search", query="pods restarting")
        assert result["degraded"] is True and result["degraded_reason"] and result["hits"]


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({}, "query: give a query or a non-empty selected_text"),
        ({"query": "   "}, "query: give a query or a non-empty selected_text"),
        ({"query": "x" * 1001}, "query"),
        ({"query": "ok", "top_k": 21}, "top_k"),
        ({"query": "ok", "top_k": 0}, "top_k"),
        ({"query": "ok", "top_k": -5}, "top_k"),
        ({"query": "ok", "mode": "fuzzy"}, "mode"),
        ({"query": "ok", "language": "xx"}, "language: unknown language 'xx'"),
        ({"query": "ok", "min_score": 2}, "min_score"),
        ({"query": "ok", "pinned_hashes": ["abc"]}, "pinned_hashes: must look like sha256:"),
        ({"query": "ok", "tags_all": [""]}, "tags_all"),
        ({"query": "ok", "created_after": "not a date"}, "created_after"),
        ({"query": "a & b | !c ( ) : * < > '"}, None),
    ],
)
async def test_search_bad_input(client: Client, arguments: dict[str, object], expected: str | None) -> None:
    if expected is None:  # tsquery syntax in a query is just text
        result = await call(client, "search", **arguments)
        assert result["status"] in {"empty_store", "no_matches", "ok"}
        return
    message = await call_error(client, "search", **arguments)
    assert expected in message
