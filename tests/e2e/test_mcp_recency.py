"""Issue 15.3: opt-in recency in ranking (recency_half_life_days), explained; through a real MCP client."""

from __future__ import annotations

import psycopg
import pytest
from mcp import Client

from tests.helpers.mcp_calls import call, call_error

pytestmark = pytest.mark.anyio

FILLER = [
    "Knead the bread dough for ten minutes and let it rise in a warm place.",
    "Jupiter has at least ninety-five moons; Ganymede is the largest of them.",
    "The tenant must give three months' notice before leaving the apartment.",
    "Bicycle chains last longer when they are cleaned and oiled every few weeks.",
    "The choir rehearses Bach's Mass in B minor on Thursday evenings.",
    "Tomatoes need full sun and regular watering once the fruit sets.",
    "The ferry to the island leaves every two hours during the summer season.",
    "Marathon runners taper their training in the last three weeks before a race.",
]
QUESTION = "How long are the database backups kept in cold storage?"


def _age(db_url: str, entry_id: str, days: int) -> None:
    # Test setup only: the store has no way to write an entry in the past.
    with psycopg.connect(db_url) as conn:
        conn.execute(
            "UPDATE entries SET created_at = now() - make_interval(days => %(d)s), "
            "updated_at = now() - make_interval(days => %(d)s) WHERE id = %(id)s",
            {"d": days, "id": entry_id},
        )


async def _fill(client: Client) -> None:
    for text in FILLER:
        await call(client, "add_entry", text=text)


async def test_off_by_default_and_explained_when_on(client: Client, db_url: str) -> None:
    await _fill(client)
    text = "Database backups are kept for 30 days in cold storage; restores are tested monthly."
    old = (await call(client, "add_entry", text=text, title="Backups"))["id"]
    _age(db_url, old, 60)
    plain = await call(client, "search", query=QUESTION, top_k=5, explain=True)
    assert all(h["breakdown"]["recency"] == 0.0 for h in plain["hits"])
    on = await call(client, "search", query=QUESTION, top_k=5, explain=True, recency_half_life_days=30)
    # What a first place in one branch gives: 1/61 in rrf, the smaller weight in convex.
    first_place = 1 / 61 if on["fusion"] == "rrf" else min(on["fusion_weights"].values())
    for hit in on["hits"]:
        b = hit["breakdown"]
        assert 0.0 < b["recency"] <= first_place + 1e-6  # the weights are given to 6 decimals
        assert b["fused"] == pytest.approx(b["vector_share"] + b["lexical_share"] + b["recency"], abs=1e-6)
        assert hit["score"] == pytest.approx(b["fused"])
    aged = next(h for h in on["hits"] if h["id"] == old)["breakdown"]["recency"]
    assert aged == pytest.approx(0.25 * first_place, rel=0.01)  # two half-lives old
    fresh = [h["breakdown"]["recency"] for h in on["hits"] if h["id"] != old]
    assert all(r == pytest.approx(first_place, rel=0.01) for r in fresh)


async def test_with_equal_text_the_newer_entry_wins(client: Client, db_url: str) -> None:
    await _fill(client)
    text = "The backup job copies the Postgres database to the cold storage bucket every night."
    older = (await call(client, "add_entry", text=text))["id"]
    newer = (await call(client, "add_entry", text=text))["id"]
    _age(db_url, older, 10)
    # Exact duplicates collapse to the best-ranked one: ties go to the lower id, the older entry.
    plain = await call(client, "search", query=QUESTION, top_k=3)
    assert plain["hits"][0]["id"] == older
    recent = await call(client, "search", query=QUESTION, top_k=3, recency_half_life_days=7)
    assert recent["hits"][0]["id"] == newer
    context = await call(client, "build_context", query=QUESTION, recency_half_life_days=7)
    assert context["citations"][0]["id"] == newer


async def test_a_strongly_relevant_old_entry_beats_a_weak_new_one(client: Client, db_url: str) -> None:
    old = (
        await call(
            client,
            "add_entry",
            text="Database backups are kept for 30 days in cold storage before they are deleted.",
            title="How long backups are kept",
        )
    )["id"]
    _age(db_url, old, 3 * 365)
    await _fill(client)  # every other entry is new and unrelated
    strict = await call(client, "search", query=QUESTION, top_k=5, explain=True, recency_half_life_days=1)
    top = strict["hits"][0]
    assert top["id"] == old
    assert top["breakdown"]["vector_rank"] == 1 and top["breakdown"]["lexical_rank"] == 1
    assert top["breakdown"]["recency"] < 1e-12
    # The new ones moved up among themselves; none passed the old entry.
    assert all(h["breakdown"]["recency"] > 0.016 for h in strict["hits"][1:])


@pytest.mark.parametrize("value", [0, -1, 0.0, 36501, "week"])
@pytest.mark.parametrize("tool", ["search", "build_context"])
async def test_half_life_must_be_positive_days(client: Client, tool: str, value: object) -> None:
    message = await call_error(client, tool, query=QUESTION, recency_half_life_days=value)
    assert "recency_half_life_days" in message and "\n" not in message.strip()


async def test_the_description_says_what_each_fusion_adds(client: Client) -> None:
    # Convex adds the smaller fusion weight (~0.4), not 1/61: the description must say both.
    tools = {t.name: t for t in (await client.list_tools()).tools}
    for name in ("search", "build_context"):
        text = tools[name].input_schema["properties"]["recency_half_life_days"]["description"]
        assert "1/61 in rrf" in text and "smaller fusion weight in convex" in text, text
        assert "/ 61 added" not in text, text
