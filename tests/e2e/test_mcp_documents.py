"""The documents tools through a real (in-memory) MCP client session, under row-level security."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from mcp import Client

from pgrecall.mcp.runtime import Runtime
from pgrecall.mcp.server import create_server
from tests.helpers.mcp_calls import call, call_error

pytestmark = pytest.mark.anyio

GUIDE = """# Espresso guide

## Grinding

Grind the beans just before brewing. A burr grinder gives an even size; blade grinders make dust
and boulders. For espresso the grounds should feel like fine table salt between your fingers.

## Brewing

Pull the shot for twenty-five to thirty seconds. The crema should be hazelnut brown; a pale crema
means the grind was too coarse. Tamp with about fifteen kilograms of force, level and firm.

## Cleaning

Backflush the group head with a blind basket every week. Descale the boiler every three months
with citric acid; hard water calls for more frequent descaling.
"""


async def test_ingest_search_outline_list_delete_restore(client: Client) -> None:
    done = await call(client, "ingest_document", source="guides/espresso.md", text=GUIDE, version="1")
    assert done["status"] == "created" and done["written"] == done["document"]["chunk_count"] >= 3
    doc_id = done["document"]["id"]
    assert done["document"]["title"] == "Espresso guide"

    again = await call(client, "ingest_document", source="guides/espresso.md", text=GUIDE, version="1")
    assert (again["status"], again["written"]) == ("unchanged", 0)

    found = await call(client, "search", query="how often should I descale the boiler", top_k=3)
    first = found["hits"][0]
    assert first["document"]["id"] == doc_id
    assert first["document"]["section_path"][-1] == "Cleaning"
    assert first["document"]["version"] == "1"

    outline = await call(client, "get_document", id=doc_id, section="Brewing")
    paths = [s["path"][-1] for s in outline["sections"]]
    assert paths == ["Grinding", "Brewing", "Cleaning"]
    brewing = next(s for s in outline["sections"] if s["path"][-1] == "Brewing")
    assert "crema" in brewing["chunks"][0]["text"]
    assert all(c["text"] is None for s in outline["sections"] if s is not brewing for c in s["chunks"])
    message = await call_error(client, "get_document", id=doc_id, section="Descaling")
    assert message.endswith(
        "section: no section 'Descaling' in this document; its sections: Grinding, Brewing, Cleaning"
    )

    read = await client.read_resource(f"pgrecall://document/{doc_id}")
    assert json.loads(read.contents[0].text)["document"]["id"] == doc_id  # type: ignore[union-attr]

    listed = await call(client, "list_documents", source_prefix="guides/")
    assert [d["id"] for d in listed["documents"]] == [doc_id]

    deleted = await call(client, "delete_document", id=doc_id)
    assert deleted["deleted_at"] is not None
    gone = await call(client, "search", query="how often should I descale the boiler", top_k=3)
    assert all((h.get("document") or {}).get("id") != doc_id for h in gone["hits"])
    restored = await call(client, "delete_document", id=doc_id, restore=True)
    assert restored["deleted_at"] is None and restored["chunk_count"] == done["document"]["chunk_count"]


async def test_bad_document_input_gets_one_line(client: Client) -> None:
    assert "exactly one of text and path" in await call_error(client, "ingest_document", source="x.md")
    message = await call_error(client, "ingest_document", source="x.md", path="/etc/passwd")
    assert "path: not over HTTP" in message
    message = await call_error(client, "ingest_document", source="x.pdf", text="not a pdf", format="pdf")
    assert "PDF" in message and "\n" not in message
    assert "no document" in await call_error(
        client, "get_document", id="00000000-0000-7000-8000-000000000000"
    )


@pytest.fixture
async def local_client(runtime: Runtime, tmp_path: Path) -> AsyncIterator[Client]:
    """A session as stdio would have it: server-side paths readable under one root."""
    root = tmp_path / "docs"
    root.mkdir()
    runtime.settings = runtime.settings.model_copy(update={"ingest_roots": str(root)})
    async with Client(create_server(runtime, read_paths=True)) as session:
        yield session


async def test_server_paths_only_under_the_allowed_roots(local_client: Client, runtime: Runtime) -> None:
    root = runtime.settings.ingest_root_paths[0]
    (root / "guide.md").write_text(GUIDE)
    done = await call(local_client, "ingest_document", source="espresso", path=str(root / "guide.md"))
    assert done["status"] == "created"
    outside = root.parent / "secret.md"
    outside.write_text("# Secret\n\nkeep out\n")
    message = await call_error(local_client, "ingest_document", source="s", path=str(outside))
    assert "outside the allowed roots" in message
    (root / "link.md").symlink_to(outside)  # a symlink out of the root is outside too
    message = await call_error(local_client, "ingest_document", source="s", path=str(root / "link.md"))
    assert "outside the allowed roots" in message


async def test_a_fifo_or_an_oversized_file_under_a_root_is_refused_unread(
    local_client: Client, runtime: Runtime
) -> None:
    root = runtime.settings.ingest_root_paths[0]
    os.mkfifo(root / "pipe.md")  # no writer: opening it to read would block for ever
    message = await call_error(local_client, "ingest_document", source="p", path=str(root / "pipe.md"))
    assert message.endswith("pipe.md: not a regular file")
    (root / "sub").mkdir()
    message = await call_error(local_client, "ingest_document", source="d", path=str(root / "sub"))
    assert message.endswith("sub: not a regular file")
    limit = runtime.settings.max_document_bytes
    with (root / "big.md").open("wb") as big:
        big.truncate(limit + 1)  # sparse: nothing is written, and nothing must be read
    message = await call_error(local_client, "ingest_document", source="b", path=str(root / "big.md"))
    assert message.endswith(f"big.md: {limit + 1} bytes exceeds the {limit}-byte document limit")


async def test_document_and_version_filters_and_group_by(client: Client) -> None:
    v1 = await call(client, "ingest_document", source="guide.md", text=GUIDE, version="1")
    newer = GUIDE.replace("three months", "six months")
    v2 = await call(client, "ingest_document", source="guide.md", text=newer, version="2")
    await call(client, "add_entry", text="Descaling the office kettle is Tom's job this month.")
    question = "how often should I descale the boiler"

    only_v2 = await call(client, "search", query=question, version="2", top_k=5)
    assert only_v2["hits"] and {h["document"]["version"] for h in only_v2["hits"]} == {"2"}
    one_doc = await call(client, "search", query=question, document=v1["document"]["id"], top_k=5)
    assert {h["document"]["id"] for h in one_doc["hits"]} == {v1["document"]["id"]}
    listed = await call(client, "list_entries", document=v2["document"]["id"])
    assert len(listed["entries"]) == v2["document"]["chunk_count"]

    grouped = await call(client, "search", query=question, group_by="document", top_k=5)
    keys = [(h["document"] or {}).get("id") or h["id"] for h in grouped["hits"]]
    assert len(keys) == len(set(keys))  # one hit per document (a note is its own)
    assert all(h["more_chunks"] is not None for h in grouped["hits"])

    message = await call_error(client, "search", query=question, document="not-an-id")
    assert message.startswith("document:") or "document:" in message
    built = await call(client, "build_context", query=question, version="1")
    assert built["status"] == "ok"
    both = await call(client, "build_context", query=question, source="guide.md")
    assert both["status"] == "warning" and "2 versions" in both["warnings"][0]


async def test_a_long_note_is_chunked_and_its_text_kept_exactly(client: Client) -> None:
    paragraphs = [
        f"Paragraph {i}: the {word} is logged in the maintenance book with its serial number."
        for i, word in enumerate(["pump", "valve", "boiler", "kettle", "grinder"] * 12)
    ]
    text = "\n\n".join(paragraphs)
    added = await call(client, "add_entry", text=text, title="Maintenance log")
    assert added["document_id"] and added["chunks"] >= 2
    whole = await call(client, "get_document", id=added["document_id"], section="*")
    assert whole["text"] == text and added["content_hash"] == whole["document"]["content_hash"]
    again = await call(client, "add_entry", text=text, title="Maintenance log")
    assert again["idempotent_replay"] and again["document_id"] == added["document_id"]
    # A text that normalizing would change (CR line ends) stays one entry, exactly as given.
    crlf = await call(client, "add_entry", text=text.replace("\n", "\r\n"))
    assert crlf.get("document_id") is None
    assert (await call(client, "get_entry", id=crlf["id"]))["text"] == text.replace("\n", "\r\n")


async def test_a_chunks_text_is_changed_through_its_document_only(client: Client) -> None:
    done = await call(client, "ingest_document", source="guides/espresso.md", text=GUIDE)
    found = await call(client, "search", query="how often should I descale the boiler", top_k=1)
    chunk = found["hits"][0]
    assert chunk["document"]["id"] == done["document"]["id"]
    message = await call_error(client, "update_entry", id=chunk["id"], text="Descale whenever.")
    assert "is a chunk of document" in message and "\n" not in message
    assert "is a chunk of document" in await call_error(client, "update_entry", id=chunk["id"], title="New")
    tagged = await call(client, "update_entry", id=chunk["id"], tags=["maintenance"])
    assert tagged["entry"]["tags"] == ["maintenance"]
    kept = await call(client, "get_entry", id=chunk["id"])
    assert "Descale the boiler" in kept["text"]


async def test_group_by_document_gives_top_k_documents_however_long_one_is(client: Client) -> None:
    # 24 sections that all answer the question: ungrouped, the manual's chunks fill every slot.
    sections = "\n\n".join(
        f"## Boiler care, part {i}\n\n"
        + f"Descale the boiler of machine {i} every three months with citric acid. " * 14
        for i in range(24)
    )
    manual = await call(client, "ingest_document", source="manual.md", text=f"# Boiler manual\n\n{sections}")
    assert manual["document"]["chunk_count"] >= 20
    for who in ("Ana", "Ben", "Chen"):
        await call(client, "add_entry", text=f"{who} descales the office kettle on Fridays.")
    question = "how often should I descale the boiler"

    flat = await call(client, "search", query=question, top_k=4)
    assert {h["document"]["id"] for h in flat["hits"] if h["document"]} == {manual["document"]["id"]}
    grouped = await call(client, "search", query=question, group_by="document", top_k=4)
    hits = grouped["hits"]
    assert len(hits) == 4
    assert hits[0]["document"]["id"] == manual["document"]["id"]
    assert len(hits[0]["more_chunks"]) == 2  # its best chunk and the next two
    assert sum(h["document"] is None for h in hits) == 3
    assert hits[0]["id"] == flat["hits"][0]["id"]  # grouping does not change what ranks first
