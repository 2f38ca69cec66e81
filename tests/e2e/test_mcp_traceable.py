"""Answers that say what they did, through a real MCP client: the request echoed, why nothing came
back, candidate counts and sources, citations with their weight, and the opt-in stage trace."""

from __future__ import annotations

import pytest
from mcp import Client

from tests.helpers.mcp_calls import call

pytestmark = pytest.mark.anyio

BASE = (
    "The quarterly planning meeting moves from Monday to Tuesday at ten in room four, and the agenda "
    "is shared the evening before by the team lead, who also books the projector and orders lunch."
)
NOTES = [
    ("The backup job copies the production database to cold storage every night.", "ops/backup.md"),
    ("Restoring a backup requires the on-call engineer and a second approver.", "ops/restore.md"),
    ("The office coffee machine is descaled every Friday afternoon.", None),
]


async def _load(client: Client) -> list[dict[str, object]]:
    added = [
        await call(
            client,
            "add_entry",
            text=t,
            source=s,
            tags=["ops"],
            kind="runbook",
            metadata={"n": i},
            language="en",
        )
        for i, (t, s) in enumerate(NOTES)
    ]
    return added


async def test_every_answer_echoes_what_it_ran_with(client: Client) -> None:
    empty = await call(client, "search", query="database backups", kind="runbook")
    assert empty["status"] == "empty_store" and empty["reason"] == "the store has no live entries"
    await _load(client)
    found = await call(client, "search", query="database backups", top_k=3, kind="RUNBOOK", min_relevance=0.1)
    assert found["applied"] == {
        "mode": "hybrid",
        "top_k": 3,
        "filters": {"kind": "RUNBOOK"},
        "min_relevance": 0.1,
        "min_score": None,
        "recency_half_life_days": None,
        "fusion": found["fusion"],
        "diversify": False,
    }
    assert found["reason"] is None and found["trace"] is None
    assert found["total_candidates"] >= len(found["hits"]) > 0
    assert found["sources"] == list(dict.fromkeys(h["source"] for h in found["hits"] if h["source"]))
    assert found["hits"][0]["kind"] == "runbook"
    built = await call(client, "build_context", query="database backups", tags_any=["ops"], token_budget=500)
    assert built["applied"]["filters"] == {"tags_any": ["ops"]} and built["applied"]["token_budget"] == 500
    assert built["applied"]["min_relevance"] == 0.7


async def test_an_empty_answer_says_which_filter_or_floor_left_nothing(client: Client) -> None:
    await _load(client)
    filtered = await call(client, "search", query="database backups", kind="decision", tags_any=["ops"])
    assert filtered["status"] == "no_matches"
    assert filtered["reason"].startswith(
        "filters keep 0 of 3 current entries (kind keeps 0, tags_any keeps 3)"
    )
    # Not even the coffee note is a perfect answer on the model's scale: a floor of 1 removes all.
    floored = await call(client, "search", query="coffee machine descaling", min_relevance=1.0)
    assert floored["status"] == "no_matches", floored
    assert f"min_relevance 1.0 removed {floored['below_relevance']}" in floored["reason"]
    nothing = await call(client, "build_context", query="zebra giraffe savanna", mode="lexical")
    assert nothing["status"] == "no_matches" and "no candidate" in nothing["reason"]


async def test_citations_carry_weight_tags_kind_metadata_and_section(client: Client) -> None:
    await _load(client)
    built = await call(client, "build_context", query="database backup restore", min_relevance=0.0)
    first = built["citations"][0]
    assert first["weight"] > 0 and first["tags"] == ["ops"] and first["kind"] == "runbook"
    assert first["metadata"] in ({"n": 0}, {"n": 1}) and first["section"] is None
    assert built["sources"] == list(dict.fromkeys(c["source"] for c in built["citations"] if c["source"]))
    sectioned = await call(client, "build_context", query="backups", sections=["restore"], trace=True)
    assert {c["section"] for c in sectioned["citations"]} <= {"restore"}
    assert {s.get("section") for s in sectioned["trace"]} == {"restore"}


async def test_trace_gives_each_stage_and_what_dedup_collapsed(client: Client) -> None:
    first = await call(client, "add_entry", text=BASE, language="en")
    copy = await call(client, "add_entry", text=BASE, language="en")
    near = await call(client, "add_entry", text=BASE.replace("room four", "room five"), language="en")
    await call(client, "add_entry", text="The planning poker deck lives in the top drawer.", language="en")
    result = await call(client, "search", query="quarterly planning meeting room", top_k=10, trace=True)
    stages = [s["stage"] for s in result["trace"]]
    assert stages == ["vector", "lexical", "fusion", "ranked", "relevance_floor", "dedup", "top_k"]
    by = {s["stage"]: s for s in result["trace"]}
    assert by["fusion"]["candidates"] == result["total_candidates"] == 4
    collapsed = {c["id"]: c["into"] for c in by["dedup"]["collapsed"]}
    assert collapsed == {copy["id"]: first["id"], near["id"]: first["id"]}
    assert by["top_k"]["candidates"] == len(result["hits"]) == 2
    assert all(s["ms"] >= 0 for s in result["trace"] if "ms" in s)
    diverse = await call(client, "search", query="planning", diversify=True, trace=True)
    assert "mmr" in [s["stage"] for s in diverse["trace"]]
