"""Reading an import file: JSON lines one by one, and a cheap look at its first lines for the wrong format.

The look happens before anything is written, so a file given with the wrong --format (the
memory server's file as jsonl, an export as memory-json, a JSON array, pretty-printed JSON,
CSV…) ends with one hint instead of one error per line.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Literal

from pgrecall.domain.validation import MAX_METADATA_BYTES, MAX_TITLE_CHARS

FileFormat = Literal["jsonl", "memory-json"]
# Enough to get past a broken first line of a real file; the look stays cheap on any file.
SNIFF_LINES = 5
# A line longer than this is not read whole by the look (a one-line JSON array of a whole export).
SNIFF_LINE_BYTES = 1 << 20
MEMORY_TYPES = ("entity", "relation")
_SKIP_BLOCK = 1 << 20
# How an export begins a document line, whose whole text may be far longer than any entry's.
DOCUMENT_LINE_STARTS = (b'{"type":"document"', b'{"type": "document"')
# A \uD800-\uDFFF escape: JSON allows it alone, Python parses it into a lone surrogate, and UTF-8
# (the content hash, PostgreSQL) cannot hold one. Only lines holding such an escape get the full check.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


@dataclass(frozen=True)
class LineError:
    """A line that was not imported, and why (the message names the field)."""

    line: int
    message: str


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def max_line_bytes(max_text_chars: int) -> int:
    """The longest line an entry within the limits can need; longer lines are skipped unread.

    Its text and title at 12 bytes a character (an astral character written as an escaped
    surrogate pair, the worst JSON spelling), its metadata at its worst escaping (×6), and 1 MiB
    for the rest (tags, source, ids, dates, field names): 2.6 MB for 100 000 characters.
    """
    return 12 * (max_text_chars + MAX_TITLE_CHARS) + 6 * MAX_METADATA_BYTES + (1 << 20)


def _lines(fh: BinaryIO, limit: int | None, document_limit: int | None = None) -> Iterator[bytes | int]:
    # Each line as bytes, or for a line over `limit` bytes (`document_limit` for a line that starts
    # as a document line) that limit: such a line is skipped in blocks, so memory stays bounded by
    # the limit however long the line is.
    if limit is None:
        yield from fh
        return
    while raw := fh.readline(limit + 1):
        if len(raw) <= limit or raw.endswith(b"\n"):
            yield raw
            continue
        exceeded = limit
        if document_limit is not None and document_limit > limit and raw.startswith(DOCUMENT_LINE_STARTS):
            raw += fh.readline(document_limit - len(raw) + 1)
            if len(raw) <= document_limit or raw.endswith(b"\n"):
                yield raw
                continue
            exceeded = document_limit
        while (block := fh.readline(_SKIP_BLOCK)) and not block.endswith(b"\n"):
            pass
        yield exceeded


def read_jsonl(
    path: Path,
    on_line: Callable[[], object] | None = None,
    *,
    line_limit: int | None = None,
    document_line_limit: int | None = None,
) -> Iterator[tuple[int, Any]]:
    """(line number, parsed object) per non-blank line; a LineError in place of an unparsable one.

    A line over `line_limit` bytes is a LineError without being read whole (see max_line_bytes),
    except a document line of an export, read up to `document_line_limit`; None (the evaluation's
    own data sets, not user files) reads lines of any length.
    `on_line` is called once per line read, blank ones included, so that it counts what
    `count_lines` counted.
    """
    with path.open("rb") as fh:
        for number, raw in enumerate(_lines(fh, line_limit, document_line_limit), start=1):
            if on_line is not None:
                on_line()
            if isinstance(raw, int):
                yield number, LineError(number, f"longer than {raw} bytes; skipped unread")
                continue
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                yield number, LineError(number, f"not UTF-8 ({exc.reason} at byte {exc.start})")
                continue
            if number == 1:
                text = text.removeprefix("\ufeff")
            if not text.strip():
                continue
            yield number, parse_line(number, text)


def parse_line(number: int, text: str) -> Any:
    """One line's JSON value, or a LineError saying why it is none (never raises on hostile input)."""
    try:
        value = json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        return LineError(number, f"not valid JSON: {exc.msg} at column {exc.colno}")
    except ValueError as exc:
        return LineError(number, f"not valid JSON: {exc}")
    except RecursionError:
        # The parser's own depth guard (about a thousand levels): raised before memory grows.
        return LineError(number, "nested too deeply to be an entry")
    if _SURROGATE_ESCAPE.search(text):
        try:
            json.dumps(value, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError as exc:
            escape = f"\\u{ord(exc.object[exc.start]):04x}"
            return LineError(number, f"holds a lone surrogate escape ({escape}), which is not a character")
    return value


def count_lines(path: Path) -> int:
    """How many lines `read_jsonl` will read (a progress total); reads in blocks, parses nothing."""
    count, last = 0, b"\n"
    with path.open("rb") as fh:
        while block := fh.read(1 << 20):
            count += block.count(b"\n")
            last = block[-1:]
    return count + (last != b"\n")


def _first_lines(path: Path) -> tuple[list[str], bool]:
    # Up to SNIFF_LINES non-blank lines, and whether the look stopped at a line too long to read
    # whole (that line is kept, cut: its start still shows an array).
    lines: list[str] = []
    with path.open("rb") as fh:
        for _ in range(SNIFF_LINES * 4):  # blank lines count too, so the look stays bounded
            raw = fh.readline(SNIFF_LINE_BYTES)
            if not raw:
                break
            text = raw.decode("utf-8", "replace").removeprefix("\ufeff").strip()
            if text:
                lines.append(text)
            if len(raw) == SNIFF_LINE_BYTES and not raw.endswith(b"\n"):
                return lines, True
            if len(lines) >= SNIFF_LINES:
                break
    return lines, False


def _object(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text, parse_constant=_reject_constant)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _memory_line(obj: dict[str, Any]) -> bool:
    return obj.get("type") in MEMORY_TYPES and "text" not in obj


def wrong_format_hint(path: Path, expected: FileFormat) -> str | None:
    """A one-line hint when the first lines of `path` show it is not `expected`, else None.

    Only sure signs count: the first JSON object of the file decides which format it is; a
    file with no JSON object on its first lines is not JSON lines at all. A bad line among
    good ones is left to the import, which reports it by number.
    """
    lines, cut = _first_lines(path)
    if not lines:
        return None
    if lines[0].startswith("["):
        return "this is a JSON array, not JSON lines (one object per line): convert it with jq -c '.[]'"
    first = next((obj for obj in map(_object, lines) if obj is not None), None)
    if first is None and cut:
        return None  # a very long line: the import itself will say what is wrong with it
    if first is None:
        if lines[0] == "{" or (lines[0].startswith("{") and not lines[0].endswith("}")):
            return "this looks like pretty-printed JSON; import reads JSON lines (one object per line)"
        return "this does not look like JSON lines: no JSON object on its first lines"
    if expected == "jsonl" and _memory_line(first):
        return "this looks like the reference memory server's memory.json: use --format memory-json"
    if expected == "memory-json" and "type" not in first and "text" in first:
        return "this looks like pgrecall JSON lines (an export), not memory.json: use --format jsonl"
    return None
