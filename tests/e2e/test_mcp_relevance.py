"""Relevant enough to cite: min_relevance in search, the default floor of build_context, min_score
on hits found by words only — through a real MCP client, with the bundled embedder."""

from __future__ import annotations

import pytest
from mcp import Client

from pgrecall.domain.relevance import DEFAULT_CONTEXT_MIN_RELEVANCE
from pgrecall.mcp.runtime import Runtime
from tests.helpers.mcp_calls import call, call_error

pytestmark = pytest.mark.anyio


@pytest.fixture(autouse=True)
def _scale_known(runtime: Runtime) -> None:
    # A search never waits for the model's scale (it is measured in the background); these
    # tests are about searches that have it.
    assert runtime.app.search.model_scale() is not None


ON_TOPIC = [
    "The backup job copies the Postgres database to the cold storage bucket every night at 02:00.",
    "Database backups are kept for 30 days in cold storage; restores are tested every month.",
]
OFF_TOPIC = [
    "Knead the bread dough for ten minutes and let it rise in a warm place.",
    "Jupiter has at least ninety-five moons; Ganymede is the largest of them.",
    "The tenant must give three months' notice before leaving the apartment.",
    "Our cat sleeps on the radiator all winter and ignores the new basket.",
    "Bicycle chains last longer when they are cleaned and oiled every few weeks.",
    "The choir rehearses Bach's Mass in B minor on Thursday evenings.",
    "Tomatoes need full sun and regular watering once the fruit sets.",
    "The museum's new wing shows textiles from the eighteenth century.",
    "Marathon runners taper their training in the last three weeks before a race.",
    "The ferry to the island leaves every two hours during the summer season.",
]
QUESTION = "How long do we keep database backups in cold storage?"


async def _load(client: Client) -> tuple[list[str], list[str]]:
    on = [(await call(client, "add_entry", text=t))["id"] for t in ON_TOPIC]
    off = [(await call(client, "add_entry", text=t))["id"] for t in OFF_TOPIC]
    return on, off


async def test_build_context_cites_only_what_is_relevant_by_default(client: Client) -> None:
    on, off = await _load(client)
    everything = await call(client, "build_context", query=QUESTION, min_relevance=0)
    cited_all = {c["id"] for c in everything["citations"]}
    # Without a floor the budget has room, so unrelated entries are cited too (the old behaviour).
    assert set(on) <= cited_all and cited_all & set(off)
    assert everything["below_relevance"] == 0

    default = await call(client, "build_context", query=QUESTION)
    cited = {c["id"] for c in default["citations"]}
    assert set(on) <= cited
    assert len(cited & set(off)) < len(cited_all & set(off))
    assert default["below_relevance"] > 0


async def test_search_min_relevance_and_explain(client: Client) -> None:
    on, _ = await _load(client)
    plain = await call(client, "search", query=QUESTION, top_k=10, explain=True)
    assert len(plain["hits"]) == 10 and plain["below_relevance"] == 0
    best = plain["hits"][0]["breakdown"]
    assert best["relevance"] == 1.0 and plain["hits"][0]["id"] in on
    for hit in plain["hits"]:
        b = hit["breakdown"]
        parts = [r for r in (b["vector_relevance"], b["lexical_relevance"]) if r is not None]
        expected = max(parts) ** 0.5
        if b["absolute_relevance"] is not None:
            expected = min(expected, b["absolute_relevance"])
        # (parts are rounded to 4 places; their square root carries the rounding further)
        assert b["relevance"] == pytest.approx(expected, abs=2e-3) and all(0.0 <= r <= 1.0 for r in parts)
    floor = DEFAULT_CONTEXT_MIN_RELEVANCE
    kept = [h for h in plain["hits"] if h["breakdown"]["relevance"] >= floor]
    floored = await call(client, "search", query=QUESTION, top_k=10, min_relevance=floor, explain=True)
    assert [h["id"] for h in floored["hits"]] == [h["id"] for h in kept]
    assert [h["rank"] for h in floored["hits"]] == list(range(1, len(kept) + 1))
    # Counted over every candidate the search weighed (all 12 entries here), not only the top 10.
    assert floored["below_relevance"] == len(ON_TOPIC + OFF_TOPIC) - len(kept) > 0
    assert set(on) <= {h["id"] for h in floored["hits"]}


async def test_min_score_applies_to_hits_found_by_words_only(client: Client) -> None:
    _, off = await _load(client)
    cat = off[3]  # "Our cat sleeps on the radiator all winter …": shares the word "winter" only
    query = "winter cold storage database backups"
    words = await call(client, "search", query=query, top_k=10, mode="lexical")
    assert cat in {h["id"] for h in words["hits"]}
    plain = await call(client, "search", query=query, top_k=10, explain=True)
    cosines = {h["id"]: h["breakdown"]["cosine_similarity"] for h in plain["hits"]}
    floor = max(c for c in cosines.values() if c is not None) - 0.001  # only the best vector hit passes
    assert cosines[cat] is not None and cosines[cat] < floor
    strict = await call(client, "search", query=query, top_k=10, min_score=floor, explain=True)
    # Before, the cat entry came back as a words-only hit: the floor cut it from the vector branch only.
    assert [h["id"] for h in strict["hits"]] == [plain["hits"][0]["id"]]
    assert strict["hits"][0]["breakdown"]["cosine_similarity"] >= floor


@pytest.mark.parametrize(
    ("tool", "value"),
    [("search", -0.1), ("search", 1.5), ("build_context", 2), ("build_context", "high")],
)
async def test_min_relevance_out_of_range_is_one_line_naming_it(
    client: Client, tool: str, value: object
) -> None:
    message = await call_error(client, tool, query=QUESTION, min_relevance=value)
    assert "min_relevance" in message and "\n" not in message.strip()


async def test_a_question_nothing_answers_cites_nothing_by_default(client: Client) -> None:
    await _load(client)
    # Every entry is unrelated; each branch still has a best hit, which only the model's scale
    # shows to be unrelated.
    question = "Which compiler flags make the firmware image smaller?"
    plain = await call(client, "build_context", query=question, min_relevance=0)
    assert plain["citations"]
    default = await call(client, "build_context", query=question)
    assert default["citations"] == [] and default["below_relevance"] > 0
    explained = await call(client, "search", query=question, top_k=10, explain=True)
    for hit in explained["hits"]:
        b = hit["breakdown"]
        assert b["cosine_similarity"] is not None and b["absolute_relevance"] is not None
        assert b["relevance"] <= b["absolute_relevance"] < DEFAULT_CONTEXT_MIN_RELEVANCE


async def test_hits_found_by_words_only_carry_their_cosine(client: Client) -> None:
    _, off = await _load(client)
    found = await call(client, "search", query="radiator basket", mode="lexical", top_k=5, explain=True)
    assert found["hits"] and found["hits"][0]["id"] == off[3]
    # Lexical mode embeds no query: nothing to compare on the model's scale, no cap.
    assert found["hits"][0]["breakdown"]["absolute_relevance"] is None
    hybrid = await call(client, "search", query="radiator basket", top_k=12, explain=True)
    words_only = [h for h in hybrid["hits"] if h["breakdown"]["vector_rank"] is None]
    assert all(h["breakdown"]["cosine_similarity"] is not None for h in words_only)
