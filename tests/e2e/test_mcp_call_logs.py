"""What an operator gets from a retrieval, through a real MCP client: one log line with what ran
(filters, thresholds, hit ids, pins, stages) and never the text; rejections and internal errors
counted per tool in /metrics as outcomes of their own."""

from __future__ import annotations

import json
import logging

import pytest
from mcp import Client

from pgrecall.mcp.runtime import Runtime
from tests.helpers.mcp_calls import call, call_error

pytestmark = pytest.mark.anyio

# Words that appear in nothing but the entries, questions and selections sent below.
SECRETS = ["quibblefrost", "zephyrine", "ostrogoth", "plinkety", "marmalade"]
ENTRY = "Quibblefrost keeps the zephyrine ledger in the marmalade vault under the stairs."
QUESTION = "where does Ostrogoth hide the plinkety zephyrine ledger?"


def _calls(caplog: pytest.LogCaptureFixture, tool: str) -> list[dict[str, object]]:
    return [
        r.fields  # type: ignore[attr-defined]
        for r in caplog.records
        if r.name == "pgrecall.calls" and r.fields["tool"] == tool  # type: ignore[attr-defined]
    ]


async def test_a_retrieval_log_line_says_what_ran_and_never_the_text(
    client: Client, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)  # every logger, every level: none may carry the text
    added = await call(client, "add_entry", text=ENTRY, tags=["ledger"], kind="fact", language="en")
    other = await call(client, "add_entry", text="Ostrogoth hides the plinkety ledger behind the clock.")
    ghost = "sha256:" + "1" * 64
    found = await call(
        client,
        "search",
        query=QUESTION,
        kind="fact",
        tags_any=["ledger"],
        min_relevance=0.0,
        pinned_hashes=[other["content_hash"], ghost],
        trace=True,
    )
    await call(client, "search", query=QUESTION, selected_text=ENTRY, diversify=True)
    await call(client, "build_context", query=QUESTION, sections=["zephyrine"], trace=True)
    await call_error(client, "search", query=QUESTION, top_k=99)

    line = _calls(caplog, "search")[0]
    assert line["request_id"] and line["mode"] == "hybrid" and line["used"] == "query"
    assert line["filters"] == {"kind": "fact", "tags_any": ["ledger"]}
    assert line["min_relevance"] == 0.0 and line["top_k"] == 5 and line["fusion"] == found["fusion"]
    assert line["hit_ids"] == [h["id"] for h in found["hits"]] and added["id"] in line["hit_ids"]
    assert line["pinned"] == 1 and line["missing_pins"] == 1
    assert line["degraded"] is False and line["degraded_reason"] is None
    assert {"vector", "lexical", "fusion", "dedup", "top_k"} <= set(line["stages"])  # type: ignore[arg-type]
    assert set(line["stage_ms"]) >= {"sql_ms", "search_ms"}  # type: ignore[arg-type]
    selection = _calls(caplog, "search")[1]
    assert selection["used"] == "selection; query ignored" and selection["min_relevance"] == 0.7
    context = _calls(caplog, "build_context")[0]
    assert context["hit_ids"] and "pack:1" in context["stages"]  # type: ignore[operator]
    rejected = _calls(caplog, "search")[-1]
    assert rejected["status"] == "rejected" and rejected["rejected_fields"] == ["top_k"]

    for record in caplog.records:
        text = (record.getMessage() + json.dumps(getattr(record, "fields", None), default=str)).lower()
        for secret in SECRETS:
            assert secret not in text, f"{secret!r} in a {record.name} log record: {text[:300]}"


async def test_rejections_and_internal_errors_are_counted_per_tool(
    client: Client, runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    await call(client, "add_entry", text="The backup job runs every night at two.")
    await call(client, "search", query="backup")
    await call_error(client, "search", query="backup", top_k=99)  # refused before the tool runs
    await call_error(client, "search", query="backup", language="xx")  # refused by the service
    await call_error(client, "build_context", query="backup", token_budget=1)

    def broken(*_: object, **__: object) -> None:
        raise RuntimeError("a bug")  # fault injection: what an unanticipated exception does

    monkeypatch.setattr(runtime.app.retrieval, "retrieve", broken)
    await call_error(client, "search", query="backup")

    metrics = runtime.metrics.exposition().decode()
    assert 'pgrecall_tool_calls_total{status="ok",tool="search"} 1.0' in metrics
    assert 'pgrecall_tool_calls_total{status="rejected",tool="search"} 2.0' in metrics
    assert 'pgrecall_tool_calls_total{status="rejected",tool="build_context"} 1.0' in metrics
    assert 'pgrecall_tool_calls_total{status="error",tool="search"} 1.0' in metrics
    assert 'pgrecall_tool_errors_total{kind="invalid_input",tool="search"} 2.0' in metrics
    assert 'pgrecall_tool_errors_total{kind="internal",tool="search"} 1.0' in metrics
