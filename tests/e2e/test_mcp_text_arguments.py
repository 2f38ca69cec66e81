"""Text arguments are stored as sent, even when they read as JSON ("null", "[1, 2]", "{}").

The SDK pre-parses string arguments as JSON when a parameter is not typed exactly `str` (for
clients that send lists as JSON strings): an optional text such as update_entry's `text` sent
as "null" became None, so the entry silently kept its old text. Found by the hostile fuzzing.
"""

from __future__ import annotations

import pytest
from mcp import Client

from tests.helpers.mcp_calls import call

pytestmark = pytest.mark.anyio

JSON_LOOKING = ["null", "[1, 2]", '{"a": 1}', "true", "[]", '["tag"]']


@pytest.mark.parametrize("text", JSON_LOOKING)
async def test_update_entry_stores_a_text_that_reads_as_json(client: Client, text: str) -> None:
    added = await call(client, "add_entry", text="An ordinary first text about the lake house.")
    updated = await call(client, "update_entry", id=added["id"], text=text, title=text, source=text)
    stored = await call(client, "get_entry", id=added["id"])
    assert updated["entry"]["text"] == stored["text"] == text
    assert stored["title"] == stored["source"] == text


@pytest.mark.parametrize("text", JSON_LOOKING)
async def test_add_entry_stores_a_title_that_reads_as_json(client: Client, text: str) -> None:
    added = await call(client, "add_entry", text=f"Notes on JSON values: {text}", title=text, source=text)
    stored = await call(client, "get_entry", id=added["id"])
    assert stored["title"] == stored["source"] == text


async def test_a_list_sent_as_a_json_string_is_still_a_list(client: Client) -> None:
    # What the pre-parse is for: clients that send array arguments as JSON text.
    text = "Tagged by a client that stringifies arrays."
    added = await call(client, "add_entry", text=text, tags='["a", "b"]')
    stored = await call(client, "get_entry", id=added["id"])
    assert sorted(stored["tags"]) == ["a", "b"]
