"""Markdown: block boundaries from markdown-it-py's token line maps over the normalized source."""

from __future__ import annotations

import base64
import datetime as dt
import json
import math
import re
from functools import cache
from typing import Any

import yaml
from markdown_it import MarkdownIt
from markdown_it.token import Token
from mdit_py_plugins.front_matter import front_matter_plugin

from pgrecall.chunking.blocks import HEADING, LINES, PROSE, Block
from pgrecall.chunking.model import Heading
from pgrecall.chunking.segment import trim
from pgrecall.domain.validation import MAX_METADATA_BYTES, metadata_shape_error
from pgrecall.errors import InvalidInputError

# libyaml's safe loader where PyYAML was built with it (its wheels are): the same documents, ~6x faster.
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

_KINDS = {
    "paragraph_open": PROSE,
    "fence": LINES,
    "code_block": LINES,
    "table_open": LINES,
    "blockquote_open": LINES,
    "html_block": LINES,
}
_LISTS = ("bullet_list_open", "ordered_list_open")


@cache
def _parser() -> MarkdownIt:
    return MarkdownIt("commonmark").enable("table").use(front_matter_plugin)


def _line_starts(text: str) -> list[int]:
    starts = [0]
    starts.extend(i + 1 for i, ch in enumerate(text) if ch == "\n")
    return starts


def _inline_text(token: Token) -> str:
    parts = []
    for child in token.children or ():
        if child.type in ("text", "code_inline", "html_inline"):
            parts.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            parts.append(" ")
    return " ".join("".join(parts).split())


def tokenize(text: str) -> list[Token]:
    """markdown-it's tokens of the text (CommonMark, tables, front matter): parse once, read twice."""
    return _parser().parse(text)


def front_matter(tokens: list[Token]) -> dict[str, Any]:
    """The YAML front matter of the tokenized text as a mapping ({} when there is none or it is not
    a mapping).

    InvalidInputError (metadata) when it is longer than the metadata it becomes may be: PyYAML
    takes seconds a megabyte, and no longer one could be stored.
    """
    for token in tokens:
        if token.type == "front_matter":
            size = len(token.content.encode("utf-8", "surrogatepass"))
            if size > MAX_METADATA_BYTES:
                raise InvalidInputError(
                    "metadata", f"the front matter is {size} bytes; the limit is {MAX_METADATA_BYTES}"
                )
            try:
                loaded = yaml.load(token.content, Loader=_YAML_LOADER)  # noqa: S506 (a safe loader)
            except yaml.YAMLError:
                return {}
            if not isinstance(loaded, dict):
                return {}
            # A shape the metadata check refuses (too deep, too many values: a YAML alias bomb) is
            # left as it is, for that check to name; walking it here could take forever.
            return loaded if metadata_shape_error(loaded) else _plain(loaded)
    return {}


def _plain(value: Any) -> Any:
    """YAML's values as JSON's: dates and times in ISO 8601, sets as lists, keys as text.

    Front matter routinely holds `date: 2026-11-20`, which YAML reads as a date that JSON (the
    metadata column) cannot hold; ".nan" and binary scalars have no JSON form either.
    """
    if isinstance(value, dict):
        return {_key(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, set | frozenset):
        return sorted((_plain(v) for v in value), key=json.dumps)
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if value is None or isinstance(value, str | int | float):  # bool is an int
        return value
    if isinstance(value, dt.date | dt.time):  # datetime is a date
        return value.isoformat()
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    return str(value)


def _key(key: Any) -> str:
    if isinstance(key, str):
        return key
    plain = _plain(key)
    return plain if isinstance(plain, str) else json.dumps(plain)


def tags(meta: dict[str, Any]) -> tuple[str, ...] | None:
    """The front matter's `tags` (a list, or one string of comma- or space-separated tags).

    None without front matter (the document says nothing of its tags); none when the front
    matter has no `tags`. A leading "#" (Obsidian's inline form) is dropped.
    """
    if not meta:
        return None
    value = meta.get("tags")
    if value is None:
        return ()
    items = re.split(r"[,\s]+", value) if isinstance(value, str) else value
    if not isinstance(items, list):
        items = [items]
    out = (item if isinstance(item, str) else json.dumps(item) for item in items)
    return tuple(t for t in (item.strip().lstrip("#").strip() for item in out) if t)


def blocks(text: str, tokens: list[Token] | None = None) -> list[Block]:
    """Headings, paragraphs, code blocks, tables, quotes and list items, in source order.

    Only top-level tokens make blocks; a list contributes one block per top-level item, so a
    list is cut between items, never inside one. Front matter and rules make none. `tokens`: the
    text's, when tokenize() has them already.
    """
    if tokens is None:
        tokens = tokenize(text)
    starts = _line_starts(text)

    def span(line_map: list[int]) -> tuple[int, int]:
        end = starts[line_map[1]] if line_map[1] < len(starts) else len(text)
        return trim(text, starts[line_map[0]], end)

    out: list[Block] = []
    for i, token in enumerate(tokens):
        if token.level != 0 or token.map is None or token.nesting == -1:
            continue
        if token.type == "heading_open":
            start, end = span(token.map)
            title = _inline_text(tokens[i + 1])
            out.append(Block(start, end, HEADING, Heading(int(token.tag[1:]), title, start, end)))
        elif token.type in _LISTS:
            depth = token.level + 1
            j = i + 1
            while j < len(tokens) and not (tokens[j].level == token.level and tokens[j].nesting == -1):
                item = tokens[j]
                if item.type == "list_item_open" and item.level == depth and item.map is not None:
                    out.append(Block(*span(item.map), LINES))
                j += 1
        elif token.type in _KINDS:
            out.append(Block(*span(token.map), _KINDS[token.type]))
    return [b for b in out if b.end > b.start]


def title(parsed: list[Block], meta: dict[str, Any]) -> str | None:
    """The first H1, else the front matter's title."""
    for block in parsed:
        if block.heading is not None and block.heading.level == 1 and block.heading.title:
            return block.heading.title
    value = meta.get("title")
    return str(value).strip() or None if value is not None else None
