"""Issue 15.5: tags, kind and source match whatever their case; source_prefix; through a real MCP client."""

from __future__ import annotations

from typing import Any

import pytest
from mcp import Client

from tests.helpers.mcp_calls import call, call_error

pytestmark = pytest.mark.anyio


async def _load(client: Client) -> dict[str, str]:
    rows: list[tuple[str, dict[str, Any]]] = [
        ("adr", {"text": "We chose PostgreSQL for the memory store.", "kind": "Decision",
                 "source": "Docs/ADR/0001-postgres.md", "tags": ["Postgres", "ADR"]}),
        ("adr2", {"text": "We chose HNSW over IVFFlat for the vector index.", "kind": "decision",
                  "source": "docs/adr/0002-hnsw.md", "tags": ["postgres", "index"]}),
        ("wiki", {"text": "The PostgreSQL backup runs nightly at two.", "kind": "note",
                  "source": "https://Wiki.example.org/ops/backups", "tags": ["POSTGRES", "ops"]}),
        ("odd", {"text": "Percent and underscore are plain characters in a PostgreSQL prefix.",
                 "kind": "note", "source": "docs/a_b%/readme", "tags": ["Straße", "ÄÖÜ"]}),
        ("other", {"text": "Buy oat milk and coffee beans on Saturday.", "kind": "todo",
                   "source": "docsadr/shopping", "tags": ["home"]}),
    ]  # fmt: skip
    ids = {}
    for name, args in rows:
        ids[name] = (await call(client, "add_entry", **args))["id"]
    return ids


async def _listed(client: Client, **filters: Any) -> set[str]:
    page = await call(client, "list_entries", limit=100, **filters)
    return {e["id"] for e in page["entries"]}


async def _searched(client: Client, tool: str, **filters: Any) -> set[str]:
    if tool == "search":
        found = await call(client, "search", query="PostgreSQL", top_k=10, **filters)
        return {h["id"] for h in found["hits"]}
    built = await call(client, "build_context", query="PostgreSQL", min_relevance=0, **filters)
    return {c["id"] for c in built["citations"]}


# (filters, names of the entries they select): every case runs through every tool on one seeding.
FILTER_CASES: list[tuple[dict[str, Any], set[str]]] = [
    ({"kind": "DECISION"}, {"adr", "adr2"}),
    ({"kind": "decision"}, {"adr", "adr2"}),
    ({"source": "docs/adr/0001-POSTGRES.md"}, {"adr"}),
    ({"source_prefix": "docs/ADR/"}, {"adr", "adr2"}),
    ({"source_prefix": "HTTPS://wiki.example.org/"}, {"wiki"}),
    ({"source_prefix": "docs/a_b%/"}, {"odd"}),  # literal: no LIKE wildcards
    ({"source_prefix": "docs/a%"}, set()),
    ({"source_prefix": "docs/_"}, set()),
    ({"tags_all": ["postgres"]}, {"adr", "adr2", "wiki"}),
    ({"tags_all": ["POSTGRES", "adr"]}, {"adr"}),
    ({"tags_any": ["Index", "OPS"]}, {"adr2", "wiki"}),
    ({"tags_any": ["STRASSE"]}, set()),  # folded, not transliterated
    ({"tags_all": ["straße", "äöü"]}, {"odd"}),  # beyond ASCII
]


@pytest.mark.parametrize("tool", ["list_entries", "search", "build_context"])
async def test_filters_match_whatever_the_case(client: Client, tool: str) -> None:
    ids = await _load(client)
    names = {entry_id: name for name, entry_id in ids.items()}
    wrong = []
    for filters, expected in FILTER_CASES:
        if tool == "list_entries":
            found = await _listed(client, **filters)
        else:
            # Ranked tools return what matches the query among the filtered entries: all of them here.
            found = await _searched(client, tool, **filters)
        if found != {ids[name] for name in expected}:
            wrong.append((filters, sorted(names.get(i, i) for i in found), sorted(expected)))
    assert not wrong, f"{tool}: (filters, selected, expected) {wrong}"


async def test_entries_keep_what_was_written(client: Client) -> None:
    ids = await _load(client)
    entry = await call(client, "get_entry", id=ids["adr"])
    assert (entry["kind"], entry["source"], entry["tags"]) == (
        "Decision",
        "Docs/ADR/0001-postgres.md",
        ["Postgres", "ADR"],
    )
    deleted = ids["adr2"]
    await call(client, "delete_entry", id=deleted)
    assert deleted in await _listed(client, source_prefix="DOCS/", include_deleted=True)
    assert deleted not in await _listed(client, source_prefix="DOCS/")


@pytest.mark.parametrize(
    ("tool", "value", "rule"),
    [
        ("list_entries", "docs/\x00", "source_prefix"),
        ("search", "x" * 5000, "source_prefix"),
        ("build_context", 42, "source_prefix"),
    ],
)
async def test_bad_source_prefix_is_one_line_naming_it(
    client: Client, tool: str, value: object, rule: str
) -> None:
    args: dict[str, Any] = {"source_prefix": value}
    if tool != "list_entries":
        args["query"] = "PostgreSQL"
    message = await call_error(client, tool, **args)
    assert rule in message and "\n" not in message.strip()
