"""search through a real MCP client: languages, modes, filters, explain, limits."""

from __future__ import annotations

import statistics

import pytest
from mcp import Client

from pgrecall.mcp.runtime import Runtime
from pgrecall.store.search import Tuning
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
    assert abs(b["vector_share"] + b["lexical_share"] - b["fused"]) < 1e-9
    assert abs(top["score"] - b["fused"]) < 1e-9
    assert abs(b["lexical_rrf"] - 1 / 61) < 1e-12
    assert abs(b["vector_rrf"] - 1 / (60 + b["vector_rank"])) < 1e-12
    # Convex from the first search (the bundled model's scale is a constant).
    assert result["fusion"] in {"convex", "rrf"}
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


async def test_convex_fusion_weighs_the_model_scale_and_rescaled_bm25(runtime: Runtime) -> None:
    from pgrecall.mcp.server import create_server

    scale = runtime.app.search.model_scale()
    assert scale is not None
    async with Client(create_server(runtime)) as client:
        await _load(client)
        result = await call(client, "search", query="Häuser am See", explain=True, top_k=20)
        # Three words: w = 1.3 / (1 + 0.3 ln 4), over the 0.9 ceiling, of the cosine; the rest BM25.
        w = Tuning().vector_weight("Häuser am See")
        assert w == 0.9
        assert result["fusion"] == "convex"
        assert result["fusion_weights"] == {"vector": round(w, 6), "lexical": round(1 - w, 6)}
        # The evidence that scaled BM25: the lexical list's mean and population sd, all of it shown
        # here (top_k holds every candidate).
        hits = result["hits"]
        assert len(hits) == result["total_candidates"]
        listed = [h["breakdown"]["lexical_score"] for h in hits if h["breakdown"]["lexical_rank"]]
        mean, sd = statistics.fmean(listed), statistics.pstdev(listed)
        shown = result["fusion_scale"]
        assert abs(shown["lexical_mean"] - mean) < 1e-5 and abs(shown["lexical_sd"] - sd) < 1e-5
        for hit in hits:
            b = hit["breakdown"]
            on_scale = (b["cosine_similarity"] - scale.unrelated) / (scale.related - scale.unrelated)
            assert abs(b["vector_share"] - w * on_scale) < 1e-9
            bm25 = b["lexical_score"] or 0.0
            if b["lexical_imputed"]:  # another language than the question's: its cosine instead
                assert b["lexical_rank"] is None and hit["language"] != "german"
                assert abs(b["lexical_share"] - (1 - w) * max(0.0, on_scale)) < 1e-6
                continue
            if sd > 0:
                rescaled = max(0.0, (bm25 - mean + 3 * sd) / (6 * sd))
            else:  # without spread: the list's hits 1, the others 0
                rescaled = 1.0 if b["lexical_rank"] else 0.0
            assert abs(b["lexical_share"] - (1 - w) * rescaled) < 1e-6
            assert abs(b["vector_share"] + b["lexical_share"] - b["fused"]) < 1e-9
        assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)
        assert hits[0]["breakdown"]["regconfig"] == "german"
        # The French, Spanish, Russian and English entries cannot hold a German question's words.
        assert {h["language"] for h in hits if h["breakdown"]["lexical_imputed"]} >= {"french", "english"}
        # A lexical-only search has no vector to weigh: rrf, whatever is configured.
        lexical = await call(client, "search", query="Häuser am See", mode="lexical", explain=True)
        assert lexical["fusion"] == "rrf" and lexical["fusion_weights"] is None
        assert lexical["fusion_scale"] is None
        assert lexical["fusion_evidence"] is None
        assert result["fusion_evidence"] == {"words": 3, "code_words": []}


async def test_a_question_naming_code_shows_the_capped_weight_and_why(runtime: Runtime) -> None:
    from pgrecall.mcp.server import create_server

    async with Client(create_server(runtime)) as client:
        await call(client, "add_entry", text="max_connections sets how many clients may connect at once.")
        await call(client, "add_entry", text="Each connection to the server costs some memory.")
        question = "What should I know about max_connections?"
        named = await call(client, "search", query=question, explain=True)
        assert named["fusion"] == "convex"
        assert named["fusion_evidence"] == {"words": 6, "code_words": ["max_connections"]}
        cap = Tuning().vector_weight_code
        assert named["fusion_weights"] == {"vector": cap, "lexical": round(1 - cap, 6)}
        assert Tuning(vector_weight_code=1.0).vector_weight(question) > cap  # the prior alone
        plain = await call(client, "search", query="How many clients may connect?", explain=True)
        assert plain["fusion_evidence"] == {"words": 5, "code_words": []}
        assert plain["fusion_weights"]["vector"] == round(Tuning().vector_weight("a b c d e"), 6)


async def test_rrf_stays_available_by_configuration(runtime: Runtime) -> None:
    from pgrecall.mcp.server import create_server

    assert runtime.app.search.model_scale() is not None
    search = runtime.app.search
    search.settings = search.settings.model_copy(update={"fusion": "rrf"})
    async with Client(create_server(runtime)) as client:
        await _load(client)
        result = await call(client, "search", query="Häuser am See", explain=True, top_k=5)
        assert result["fusion"] == "rrf" and result["fusion_weights"] is None
        for hit in result["hits"]:
            b = hit["breakdown"]
            assert b["vector_share"] == b["vector_rrf"] and b["lexical_share"] == b["lexical_rrf"]
            assert abs(b["vector_rrf"] + b["lexical_rrf"] - b["fused"]) < 1e-9


GERMAN_NOTES = [
    "Der Kindergarten schließt im August für drei Wochen.",
    "Der Kindergarten sucht neue Erzieher.",
    "Im Kindergarten gibt es heute Suppe.",
    "Der Kindergarten feiert sein Sommerfest.",
    "Die Bibliothek schließt am Freitag früher.",
    "Der Laden schließt um acht Uhr.",
]
ENGLISH_NOTES = [
    "Kindergarten pickup: the app reminds parents.",
    "The library opens on Sunday.",
    "Swimming pool heating repaired.",
    "Market square on Saturday.",
    "The museum is free on Mondays.",
    "Trains run every ten minutes.",
]


async def test_a_query_counts_in_the_languages_that_hold_its_words(runtime: Runtime) -> None:
    from dataclasses import replace

    from pgrecall.mcp.server import create_server

    async with Client(create_server(runtime)) as client:
        for text in GERMAN_NOTES:
            await call(client, "add_entry", text=text, language="de")
        for text in ENGLISH_NOTES:
            await call(client, "add_entry", text=text, language="en")
        question = "Wann schließt der Kindergarten?"
        found = await call(client, "search", query=question, mode="lexical", explain=True)
        top = found["hits"][0]
        assert (
            top["snippet"].startswith("Der Kindergarten schließt")
            and top["breakdown"]["regconfig"] == "german"
        )
        # English holds one of the question's two words ("kindergarten"), German both: English
        # BM25 counts (1/2)² and the stray English match no longer outranks the German answer.
        english = [h for h in found["hits"] if h["breakdown"]["regconfig"] == "english"]
        assert all(h["rank"] > 1 for h in english)
        search = runtime.app.search
        search.tuning = replace(search.tuning, language_cover_ratio=0.0, language_cover_power=0.0)
        unweighted = await call(client, "search", query=question, mode="lexical", explain=True)
        assert unweighted["hits"][0]["breakdown"]["regconfig"] == "english"
        stray = unweighted["hits"][0]["breakdown"]["lexical_score"]
        weighted = next((h for h in english if h["snippet"].startswith("Kindergarten pickup")), None)
        if weighted is not None:
            assert abs(weighted["breakdown"]["lexical_score"] - stray / 4) < 1e-9
