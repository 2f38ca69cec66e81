"""Citations and context through a real MCP client: pins, dedup, selection, budget, verification."""

from __future__ import annotations

import json

import pytest
from mcp import Client

from pgrecall.app import App
from pgrecall.config import Settings
from pgrecall.mcp.runtime import Runtime
from pgrecall.mcp.server import create_server
from tests.helpers.mcp_calls import call, call_error

pytestmark = pytest.mark.anyio

TOPICS = [
    "The backup job copies the production database to cold storage every night at two.",
    "Backups older than ninety days are deleted from cold storage automatically.",
    "Restoring a backup requires the on-call engineer and a second approver.",
    "The office coffee machine is descaled every Friday afternoon.",
    "Our database failover is tested once a quarter with a full restore drill.",
    "Team lunch happens on the first Monday of every month.",
]


async def _load(client: Client) -> list[dict[str, object]]:
    return [
        await call(client, "add_entry", text=t, title=f"Note {i}", language="en")
        for i, t in enumerate(TOPICS)
    ]


def _stable(result: dict[str, object]) -> str:
    # Everything but the per-call request id and the timings must be byte-identical.
    return json.dumps({k: v for k, v in result.items() if k not in {"request_id", "timings"}}, sort_keys=True)


async def test_pins_come_first_in_order_then_the_ranking_fills(client: Client) -> None:
    added = await _load(client)
    pins = [added[3]["content_hash"], added[5]["content_hash"], added[3]["content_hash"]]
    result = await call(client, "search", query="database backup restore", top_k=4, pinned_hashes=pins)
    ids = [h["id"] for h in result["hits"]]
    assert ids[:2] == [added[3]["id"], added[5]["id"]]
    assert [h["pinned"] for h in result["hits"]] == [True, True, False, False]
    assert len(ids) == 4 and len(set(ids)) == 4
    assert set(ids[2:]) <= {added[i]["id"] for i in (0, 1, 2, 4)}
    assert result["missing_pins"] == []
    capped = await call(client, "search", query="backup", top_k=1, pinned_hashes=pins)
    assert [h["id"] for h in capped["hits"]] == [added[3]["id"]]


async def test_missing_pins_are_listed_not_errors(client: Client) -> None:
    added = await _load(client)
    ghost = "sha256:" + "0" * 64
    result = await call(client, "search", query="backup", pinned_hashes=[ghost, added[0]["content_hash"]])
    assert result["missing_pins"] == [ghost] and result["hits"][0]["id"] == added[0]["id"]
    await call(client, "delete_entry", id=added[0]["id"])
    after = await call(client, "search", query="backup", pinned_hashes=[added[0]["content_hash"]])
    assert after["missing_pins"] == [added[0]["content_hash"]]


async def test_identical_output_over_runs_and_after_restart(client: Client, settings: Settings) -> None:
    added = await _load(client)
    request = {
        "query": "how are backups restored?",
        "top_k": 5,
        "pinned_hashes": [added[5]["content_hash"]],
        "explain": True,
    }
    first = _stable(await call(client, "search", **request))
    for _ in range(20):
        assert _stable(await call(client, "search", **request)) == first
    ctx_request = {"query": "how are backups restored?", "token_budget": 300}
    first_ctx = _stable(await call(client, "build_context", **ctx_request))
    with App(settings) as reopened:
        async with Client(create_server(Runtime(reopened))) as again:
            assert _stable(await call(again, "search", **request)) == first
            assert _stable(await call(again, "build_context", **ctx_request)) == first_ctx


async def test_exact_and_near_duplicates_collapse(client: Client) -> None:
    base = (
        "The quarterly planning meeting moves from Monday to Tuesday at ten in room four, "
        "and the agenda is shared the evening before by the team lead, who also books the projector, "
        "orders lunch for everyone attending in person and posts the dial-in link in the team channel."
    )
    first = await call(client, "add_entry", text=base, language="en")
    await call(client, "add_entry", text=base, language="en")  # exact duplicate
    await call(client, "add_entry", text=base.replace("room four", "room five"), language="en")  # near
    other = await call(
        client, "add_entry", text="The planning poker deck lives in the top drawer.", language="en"
    )
    result = await call(client, "search", query="quarterly planning meeting room", top_k=10)
    ids = [h["id"] for h in result["hits"]]
    assert ids[0] == first["id"] and other["id"] in ids and len(ids) == 2


async def test_selection_modes_and_fallback(client: Client) -> None:
    added = await _load(client)
    selection = "nightly copy of the production database into cold storage"
    only = await call(client, "search", selected_text=selection, top_k=3)
    assert only["used"] == "selection" and only["hits"][0]["id"] == added[0]["id"]
    # A usable selection is searched alone: the question does not pull in its own topic.
    both = await call(client, "search", query="coffee machine", selected_text=selection, top_k=3)
    assert both["used"] == "selection; query ignored"
    assert [h["id"] for h in both["hits"]] == [h["id"] for h in only["hits"]]
    for bad in ("", "   ", "x" * 5001, "nul\x00byte"):
        fallback = await call(client, "search", query="coffee machine", selected_text=bad)
        assert fallback["used"] == "query" and fallback["selection_ignored"]
        assert fallback["hits"][0]["id"] == added[3]["id"]
    message = await call_error(client, "search", selected_text="   ")
    assert "query: give a query or a non-empty selected_text (selected_text is empty" in message


async def test_a_selection_nothing_is_about_is_out_of_scope(client: Client) -> None:
    added = await _load(client)
    espresso = "Pull the espresso shot for 28 seconds at nine bar with freshly ground arabica beans."
    for tool in ("search", "build_context"):
        out = await call(client, tool, query="database backups", selected_text=espresso)
        entries = out["hits"] if tool == "search" else out["citations"]
        assert out["status"] == "out_of_scope" and entries == [], (tool, out)
        assert "min_relevance 0.7" in out["reason"] and "\n" not in out["reason"]
    # The floor is the caller's to lower: then whatever ranks comes back, and says it is not scoped.
    lowered = await call(client, "search", selected_text=espresso, min_relevance=0.0, top_k=2)
    assert lowered["status"] == "ok" and len(lowered["hits"]) == 2
    # Pins were asked for by hash: they stay, the status still says the selection found nothing.
    pinned = await call(client, "search", selected_text=espresso, pinned_hashes=[added[5]["content_hash"]])
    assert pinned["status"] == "out_of_scope" and [h["id"] for h in pinned["hits"]] == [added[5]["id"]]
    related = await call(client, "build_context", selected_text="copying the production database at night")
    assert related["status"] == "ok" and related["citations"][0]["id"] == added[0]["id"]


async def test_diversify_keeps_size_and_top_hit(client: Client) -> None:
    await _load(client)
    plain = await call(client, "search", query="database backups", top_k=4)
    diverse = await call(client, "search", query="database backups", top_k=4, diversify=True)
    assert len(diverse["hits"]) == len(plain["hits"]) and diverse["hits"][0]["id"] == plain["hits"][0]["id"]
    assert {h["id"] for h in diverse["hits"]} <= {
        h["id"] for h in (await call(client, "search", query="database backups", top_k=20))["hits"]
    }


@pytest.mark.parametrize("budget", [50, 80, 120, 200, 4000])
async def test_context_never_exceeds_budget_and_never_cuts(client: Client, budget: int) -> None:
    await _load(client)
    long_text = " ".join(["Backup retention policy detail number"] * 60)
    big = await call(client, "add_entry", text=long_text, title="Long backup policy", language="en")
    built = await call(client, "build_context", query="backup retention policy", token_budget=budget)
    assert built["total_tokens"] <= budget
    labels = [c["label"] for c in built["citations"]]
    assert labels == [f"S{i}" for i in range(1, len(labels) + 1)]
    for citation in built["citations"]:
        body = (await call(client, "get_entry", id=citation["id"]))["text"]
        assert f"[{citation['label']}] " in built["context"] and body in built["context"]
    if budget < 200:
        reasons = {d["id"]: d["reason"] for d in built["dropped"]}
        assert reasons[big["id"]] == "larger than token_budget"


async def test_context_sections_and_pins(client: Client) -> None:
    added = await _load(client)
    built = await call(
        client,
        "build_context",
        query="team routines",
        token_budget=600,
        sections=["backups", "lunch"],
        pinned_hashes=[added[3]["content_hash"]],
    )
    assert set(built["by_section"]) == {"backups", "lunch"}
    assert built["citations"][0]["id"] == added[3]["id"] and built["citations"][0]["pinned"] is True
    assert built["citations"][0]["section"] == "backups"
    all_labels = [label for labels in built["by_section"].values() for label in labels]
    assert sorted(all_labels) == sorted(c["label"] for c in built["citations"])
    assert len({c["id"] for c in built["citations"]}) == len(built["citations"])
    assert "## backups" in built["context"] and built["total_tokens"] <= 600


async def test_verify_catches_edits_deletes_and_unknowns(client: Client) -> None:
    added = await _load(client)
    built = await call(client, "build_context", query="backup", token_budget=4000)
    cited = [
        {"id": c["id"], "content_hash": c["content_hash"], "label": c["label"]} for c in built["citations"]
    ]
    assert (await call(client, "verify_citations", citations=cited))["all_valid"] is True
    edited, deleted = cited[0], cited[1]
    await call(client, "update_entry", id=edited["id"], text="The backup job now runs at three.")
    await call(client, "delete_entry", id=deleted["id"])
    ghost = {"content_hash": "sha256:" + "f" * 64, "label": "S99"}
    by_hash = {"content_hash": added[5]["content_hash"]}
    report = await call(client, "verify_citations", citations=[*cited, ghost, by_hash])
    statuses = {r["label"]: r for r in report["results"]}
    assert report["all_valid"] is False
    assert statuses[edited["label"]]["status"] == "changed"
    assert statuses[edited["label"]]["current_hash"].startswith("sha256:")
    assert statuses[edited["label"]]["current_hash"] != edited["content_hash"]
    assert statuses[deleted["label"]]["status"] == "deleted"
    assert statuses["S99"]["status"] == "missing"
    assert report["results"][-1]["status"] == "valid" and report["results"][-1]["id"] == added[5]["id"]
    for rest in cited[2:]:
        assert statuses[rest["label"]]["status"] == "valid"
    bad = await call_error(client, "verify_citations", citations=[{"content_hash": "md5:abc"}])
    assert "citations[0].content_hash: must look like sha256:" in bad
