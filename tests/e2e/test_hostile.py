"""Hostile input through a real (in-memory) MCP client, for every tool the server lists.

Property-based (hypothesis): each tool gets arguments mixed from plausible values, unicode edge
cases (combining marks, RTL and zero-width characters, emoji, NFC/NFD variants), NUL bytes, 1 MB
strings, deeply nested metadata, tsquery syntax, unknown regconfig names, out-of-range numbers and
wrong types. Whatever comes in, a call must:

* return (never hang, never crash the session);
* never be an internal error: an is_error result whose text is exactly "Error executing tool
  <name>" is how the SDK reports an unanticipated exception;
* on rejection, name the field: every error reads "<field>: <rule>" on one line (the server
  rewrites the SDK's argument validation into that form too), with no documentation URL;
* on rejection, and on every read, leave the database byte-for-byte unchanged.

Surrogate code points are not generated: JSON cannot carry them (the SDK's parser refuses a lone
"\\ud800" escape), so no real transport delivers one.
"""

from __future__ import annotations

import base64
import gc
import json
import os
import re
import sys
import unicodedata
import uuid
from collections.abc import Iterator
from datetime import UTC, timedelta, timezone
from typing import Any

import anyio
import anyio.to_thread
import psycopg
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from mcp import Client
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from psycopg import sql

from pgrecall.config import Settings
from pgrecall.domain.text import content_hash
from pgrecall.mcp.runtime import Runtime
from pgrecall.mcp.server import create_server
from tests.helpers.mcp_calls import call

pytestmark = pytest.mark.anyio

TOOLS = {
    "add_entry",
    "update_entry",
    "delete_entry",
    "restore_entry",
    "get_entry",
    "list_entries",
    "search",
    "build_context",
    "verify_citations",
    "stats",
    "recent_activity",
    "list_tags",
    "link_entries",
    "unlink_entries",
    "get_related",
    "ingest_document",
    "get_document",
    "list_documents",
    "delete_document",
}
# Moderate by default so the file runs in a couple of minutes; raise it to hunt harder.
EXAMPLES = int(os.environ.get("PGRECALL_HOSTILE_EXAMPLES", "60"))
CALL_TIMEOUT_S = 60  # "does not hang", not a performance threshold
# A rejection may cost this many times the profiler events of rejecting an unknown id (see checker).
REJECTION_FACTOR = 5
_KIND_RULE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}")

# -- value pools -------------------------------------------------------------------------------

MB = 1_000_000
NASTY_STRINGS = [
    "",
    " ",
    "\t\r\n \u00a0\u3000",
    "\x00",
    "a\x00b",
    "\x01\x02\x1b[31m\x7f",
    "\u0301",  # a lone combining mark
    "e\u0301\u0302\u0303\u0304\u0305\u0306\u0307\u0308",  # zalgo-ish stacking
    "Ame\u0301lie cafe\u0301",  # NFD
    "Amélie café",  # NFC
    "\u212b\u2126",  # Angstrom and Ohm signs (NFC maps them to Å, Ω)
    "\ufb01le \u00bd \u2460",  # compatibility characters NFC keeps
    "\u202eevil\u202c txt.exe",  # RTL override
    "\u200fשלום עולם\u200e hello",  # RTL text with marks
    "مرحبا بالعالم، هذه ملاحظة قصيرة",
    "\u200b",
    "\u200b\u200c\u200d\u2060\ufeff",  # zero-width only
    "a\u200bb\u200cc\u200dd",
    "\u2028\u2029\u0085",  # Unicode line breaks
    "👨‍👩‍👧‍👦 🏳️‍🌈 🇩🇪 👍🏽",
    "\U0010ffff\U000e0001\ufffe\uffff",  # noncharacters / tags
    "' & | ! ( ) : * < > \\",
    "a:* & !b | (c <-> d) <2> e",
    "'''",
    "\\",
    "\\\\'",
    "!!!((((",
    "'; DROP TABLE entries; --",
    "%s %(owner)s {0} {{}} $1 :name",
    "null",
    "NaN",
    "../../etc/passwd",
    "x" * MB,
    " " * MB + "x",
    "\u0301" * (MB // 5),
    "word " * (MB // 5),
    "Die Häuser am See sind im Winter still und kalt.",
    "Kubernetes pods restart when memory runs out.",
]
REGCONFIG_NAMES = [
    "pg_catalog.english",
    "english; drop",
    "english'; DROP TABLE entries; --",
    "xx",
    "English",
    "ENGLISH",
    " en ",
    "en-US",
    "en_US",
    "simple",
    "SIMPLE",
    "pg_catalog.simple",
    "german",
    "english_stem",
    "zh",
    "ja",
    "nb",
    "no",
    "norwegian",
    "",
    "   ",
    "\x00",
    "de\x00",
    "e\u0301n",
    "de" * 1000,
]
# Far over the list limits (64 tags): refusing them must cost no more than refusing 65.
HUGE_TAGS = [f"tag {i}" for i in range(40_000)]
HUGE_INTS = [0, -1, -(2**31), 2**31 - 1, 2**31, 2**63 - 1, 2**63, 2**64, 10**100, -(10**100)]
FLOATS_ODD = [float("nan"), float("inf"), float("-inf"), -0.0, 1e308, -1e308, 5e-324, 0.5, 20.0, 5.5]
DATES = [
    "2024-01-01T00:00:00Z",
    "2024-01-01T00:00:00",  # no offset
    "2024-01-01",
    "2024-01-01T00:00:00+14:00",
    "2024-01-01T00:00:00-12:00",
    "0001-01-01T00:00:00",
    "0001-01-01T00:00:00+14:00",
    "9999-12-31T23:59:59",
    "9999-12-31T23:59:59.999999-14:00",
    "10000-01-01T00:00:00",
    "0000-00-00",
    "not a date",
    "infinity",
    "2024-02-30T00:00:00",
    "1970-01-01T00:00:00.000000001Z",
    "",
]


def _nested(depth: int, leaf: Any = 1, *, lists: bool = False) -> Any:
    value = leaf
    for i in range(depth - 1):
        value = [value] if lists and i % 2 else {"k": value}
    return value


def _cursor(payload: Any) -> str:
    raw = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


CURSORS = [
    "bogus",
    "",
    "====",
    "\x00",
    "é" * 10,
    "x" * MB,
    _cursor(["2024-01-01T00:00:00+00:00", str(uuid.UUID(int=0))]),
    _cursor(["2024-01-01T00:00:00", str(uuid.UUID(int=0))]),  # naive timestamp
    _cursor(["0001-01-01T00:00:00+14:00", str(uuid.UUID(int=0))]),
    _cursor(["9999-12-31T23:59:59+00:00", "not-a-uuid"]),
    _cursor([1, 2]),
    _cursor([None, None]),
    _cursor({"a": 1}),
    _cursor(["a", "b", "c"]),
    _cursor("just a string"),
    _cursor(b"\xff\xfe\x00 not utf-8"),
    _cursor(b"[" * 100_000 + b"]" * 100_000),  # deep JSON inside a cursor
    _cursor(["2024-01-01T00:00:00+00:00", str(uuid.UUID(int=0)) + "\x00"]),
]


def _usable(text: str, limit: int = 5000) -> bool:
    flat = " ".join(unicodedata.normalize("NFC", text).split())
    return bool(flat) and "\x00" not in text and len(flat) <= limit


# Edge cases an entry point must accept (and store exactly), and the ones it must refuse.
VALID_NASTY = [s for s in NASTY_STRINGS if _usable(s)]
INVALID_NASTY = [s for s in NASTY_STRINGS if not _usable(s)]
WORDS = ["word", "memo", "Häuser", "the", "and", "pods", "a:*", "(c", "<->", "'", "\\", "!", "😀", "e\u0301"]
SHORT_NASTY = [s for s in VALID_NASTY if len(s) <= 100]

# Characters of every category but surrogates (JSON cannot carry them), NUL included.
ANY_TEXT = st.text(st.characters(exclude_categories=["Cs"]), max_size=300)
VALID_TEXT = st.one_of(
    st.sampled_from(VALID_NASTY),
    ANY_TEXT.filter(_usable),
    st.text(st.characters(exclude_categories=["Cs"]), max_size=80)
    .map(lambda s: unicodedata.normalize("NFD", s) + " entry")
    .filter(_usable),
    st.lists(st.sampled_from(WORDS + SHORT_NASTY), min_size=1, max_size=12).map(" ".join).filter(_usable),
)
SHORT_VALID = st.one_of(
    st.sampled_from(SHORT_NASTY),
    st.text(st.characters(exclude_categories=["Cs", "Cc"]), min_size=1, max_size=40),
).filter(lambda s: _usable(s, 100))
WRONG = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=3),
)
BAD_TEXT = st.one_of(st.sampled_from(INVALID_NASTY), ANY_TEXT, WRONG)
JSON_LEAF = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**80), max_value=2**80), st.floats(), SHORT_VALID
)
JSON_VALUE = st.recursive(
    JSON_LEAF,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(SHORT_VALID, inner, max_size=4),
    max_leaves=20,
)
METADATA_OK = st.one_of(
    st.dictionaries(SHORT_VALID, JSON_VALUE.filter(lambda v: "nan" not in repr(v)), max_size=5),
    st.sampled_from([{}, _nested(9), _nested(10), {"\u202e": "\u200b"}, {"n": 10**100}]),
)
METADATA_BAD = st.one_of(
    st.sampled_from(
        [
            _nested(11),
            _nested(12, lists=True),
            _nested(150),
            _nested(199),
            _nested(250, lists=True),
            {"blob": "x" * 70_000},
            {"wide": [0] * 1_000_000},
            {"k\x00": 1},
            {"v": "a\x00b"},
            {"x": float("inf")},
        ]
    ),
    st.dictionaries(ANY_TEXT, JSON_VALUE, max_size=5),
    st.lists(st.integers(), max_size=2),
    WRONG,
)
TAGS_OK = st.lists(SHORT_VALID, max_size=5)
TAGS_BAD = st.one_of(
    st.sampled_from(
        [["a"] * 200, [f"t{i}" for i in range(65)], HUGE_TAGS, ["x" * 101], ["ok", " "], ["a\x00"], "tag"]
    ),
    st.lists(st.one_of(ANY_TEXT, WRONG), min_size=1, max_size=4),
    WRONG,
)
LANGUAGE_OK = st.sampled_from(
    ["de", "en", "fr", "ru", "es", "simple", "SIMPLE", " en ", "german", "nb", "no", ""]
)
LANGUAGE_BAD = st.one_of(st.sampled_from(REGCONFIG_NAMES), ANY_TEXT, WRONG)
KIND_OK = st.one_of(
    st.sampled_from(["note", "fact", "decision", "a" * 64, "x:y.z-1"]),
    st.from_regex(_KIND_RULE, fullmatch=True),
)
KIND_BAD = st.one_of(
    st.sampled_from(["a" * 65, "two words", "note\n", "\nnote", "-x", "é", "", "note\x00"]), ANY_TEXT, WRONG
)
SOURCE_OK = st.one_of(
    st.sampled_from(["https://example.org/x?y=1#z", "/etc/passwd", "conv:42", "x" * 2000]), SHORT_VALID
)
SOURCE_BAD = st.one_of(st.sampled_from(["x" * 2001, "a\x00", "x" * MB]), WRONG)
DATE_OK = st.one_of(
    st.sampled_from(DATES[:10]),
    st.datetimes(timezones=st.none() | st.just(UTC) | st.just(timezone(timedelta(hours=-11)))).map(
        lambda d: d.isoformat()
    ),
)
DATE_BAD = st.one_of(
    st.sampled_from(DATES[10:]), ANY_TEXT, st.integers(min_value=-(2**64), max_value=2**64), WRONG
)
ID_OK = st.sampled_from(
    [f"<id{i}>" for i in range(4)] + ["{<id0>}", "urn:uuid:<id1>", "<id1:hex>", "<id2:upper>", " <id1> "]
)
ID_BAD = st.one_of(
    st.uuids().map(str),
    st.sampled_from(["", "42", "not-a-uuid", "'; DROP TABLE entries; --", "<id0>\x00", "x" * MB]),
    ANY_TEXT,
    WRONG,
)
HASH_OK = st.one_of(
    st.sampled_from([f"<hash{i}>" for i in range(4)] + [" <hash1> ", "<hash2>".upper()]),
    st.binary(min_size=32, max_size=32).map(lambda b: "sha256:" + b.hex()),
)
HASH_BAD = st.one_of(
    st.sampled_from(
        [
            "abc",
            "sha256:",
            "sha256:" + "0" * 63,
            "sha256:" + "g" * 64,
            "sha256:" + "0" * 64 + "\x00",
            "md5:" + "0" * 32,
            "x" * MB,
        ]
    ),
    ANY_TEXT,
    WRONG,
)


def _ints(lo: int, hi: int) -> tuple[st.SearchStrategy[Any], st.SearchStrategy[Any]]:
    """(in range, out of range or not an int) for an integer parameter."""
    bad = st.one_of(
        st.sampled_from([v for v in HUGE_INTS if not lo <= v <= hi]),
        st.integers(max_value=lo - 1),
        st.integers(min_value=hi + 1),
        st.floats(),
        st.sampled_from(["5", "five", [], {}]),
    )
    return st.integers(min_value=lo, max_value=hi), bad


# Each parameter: (plausible values, hostile values). Hostile ones include wrong types.
Param = tuple[st.SearchStrategy[Any], st.SearchStrategy[Any]]
TEXT: Param = (VALID_TEXT, BAD_TEXT)
TITLE: Param = (
    st.one_of(VALID_TEXT.filter(lambda s: _usable(s, 500)), st.just("")),
    st.one_of(st.sampled_from(["x" * 501, "a\x00", "x" * MB]), WRONG),
)
FILTERS: dict[str, Param] = {
    "language": (LANGUAGE_OK, LANGUAGE_BAD),
    "kind": (KIND_OK, KIND_BAD),
    "source": (SOURCE_OK, SOURCE_BAD),
    "source_prefix": (SOURCE_OK, SOURCE_BAD),
    "tags_all": (TAGS_OK, TAGS_BAD),
    "tags_any": (TAGS_OK, TAGS_BAD),
    "include_superseded": (st.booleans(), st.one_of(st.sampled_from(["yes", 2, [], {}]), st.floats())),
    "include_expired": (st.booleans(), st.one_of(st.sampled_from(["yes", 2, [], {}]), st.floats())),
}
EXPIRES: Param = (
    st.sampled_from(
        ["7d", "1h", "30m", "2w", "2030-01-01T00:00:00Z", "2020-01-01", "2027-06-01T12:00:00+02:00"]
    ),
    st.one_of(ANY_TEXT, WRONG, st.sampled_from(["5y", "999999w", "x" * 65, "\x00", "9999-12-31", "-1d"])),
)
FLAG: Param = (st.booleans(), st.one_of(st.sampled_from(["yes", "maybe", 2, [], {}]), st.floats()))
RELEVANCE: Param = (
    st.floats(min_value=0, max_value=1),
    st.one_of(st.floats().filter(lambda f: not 0 <= f <= 1), st.sampled_from(["0.5", [], {}])),
)
HALF_LIFE: Param = (
    st.floats(min_value=0.01, max_value=36500),
    st.one_of(
        st.floats().filter(lambda f: not 0 < f <= 36500), st.sampled_from(["7", "week", [], {}, 0, -3])
    ),
)
RELATION: Param = (
    st.sampled_from(["relates_to", "depends_on", "Part of", "CONTRADICTS", " mentions "]),
    st.one_of(st.sampled_from(["loves", "", "x" * 81, "depends_on\x00", "relates to too"]), WRONG),
)
NOTE_BAD = st.one_of(
    st.sampled_from(["x" * 1001, "a\x00b", "x" * 5000]), WRONG.filter(lambda v: v is not None)
)
MODE: Param = (
    st.sampled_from(["hybrid", "vector", "lexical"]),
    st.one_of(st.sampled_from(["fuzzy", "", "HYBRID"]), WRONG),
)
PINS: Param = (
    st.lists(HASH_OK, max_size=6),
    st.one_of(
        st.lists(st.one_of(HASH_OK, HASH_BAD), min_size=1, max_size=4).filter(
            lambda hs: any(not str(h).startswith(("<", "sha256:")) for h in hs)
        ),
        st.sampled_from([[f"sha256:{i:064x}" for i in range(n)] for n in (51, 100_000)]),
        WRONG,
    ),
)
SECTIONS: Param = (
    st.lists(SHORT_VALID, max_size=4),
    st.one_of(
        st.sampled_from(
            [
                [f"s{i}" for i in range(9)],
                [f"s{i}" for i in range(10_000)],
                ["x" * 201],
                ["a\x00"],
                ["", " "],
                "intro",
            ]
        ),
        WRONG,
    ),
)
CITATION = st.fixed_dictionaries({"content_hash": HASH_OK}, optional={"id": ID_OK, "label": SHORT_VALID})
CITATIONS: Param = (
    st.lists(CITATION, max_size=4),
    st.one_of(
        st.lists(
            st.one_of(
                st.fixed_dictionaries({"content_hash": HASH_BAD}, optional={"id": ID_OK}),
                st.fixed_dictionaries({"content_hash": HASH_OK, "id": ID_BAD}),
                st.fixed_dictionaries({}, optional={"id": ID_OK, "label": WRONG}),
                WRONG,
                ANY_TEXT,
            ),
            min_size=1,
            max_size=3,
        ),
        st.sampled_from([[{"content_hash": "<hash0>"}] * n for n in (101, 100_000)]),
        WRONG,
    ),
)


@st.composite
def tool_args(draw: st.DrawFn, params: dict[str, Param], required: tuple[str, ...] = ()) -> dict[str, Any]:
    """Mostly plausible arguments with zero, one or several hostile ones; sometimes a required
    one left out or an unknown one added. (All-hostile calls only test the first check.)"""
    present = [name for name in sorted(params) if name in required or draw(st.booleans())]
    if required and draw(st.integers(0, 15)) == 0:
        present = [name for name in present if name not in required]
    n_bad = draw(st.sampled_from([0, 0, 0, 1, 1, 1, 1, 2, 99]))
    bad = set(draw(st.permutations(present))[:n_bad]) if present else set()
    args = {name: draw(params[name][1] if name in bad else params[name][0]) for name in present}
    if draw(st.integers(0, 9)) == 0:
        args["unexpected"] = draw(WRONG)
    return args


# Strategies are built once, before any entry exists: real ids and hashes appear as placeholders
# that each example resolves against the seeded store (see `_resolve`).
SEED_SLOTS = 4
_PLACEHOLDER = re.compile(r"<(id|hash|ID|HASH)(\d)(?::(hex|upper))?>")


def _resolve(value: Any, seeded: dict[str, list[str]], depth: int = 0) -> Any:
    """The value with every <idN>, <idN:hex>, <idN:upper>, <hashN> placeholder replaced.

    Placeholders sit at most three levels down (citations: list → dict → str); deeper values
    are left alone, so that deeply nested metadata passes through untouched.
    """
    if depth > 3:
        return value
    if isinstance(value, str) and "<" in value:

        def real(match: re.Match[str]) -> str:
            found = seeded["ids" if match[1].lower() == "id" else "hashes"][int(match[2])]
            if match[3] == "hex":
                return found.replace("-", "")
            return found.upper() if (match[3] == "upper" or match[1].isupper()) else found

        return _PLACEHOLDER.sub(real, value)
    if isinstance(value, dict):
        return {k: _resolve(v, seeded, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [_resolve(v, seeded, depth + 1) for v in value]
    return value


def strategies() -> dict[str, st.SearchStrategy[dict[str, Any]]]:
    """Argument strategies per tool."""
    ident: Param = (ID_OK, ID_BAD)
    entry_fields: dict[str, Param] = {
        "title": TITLE,
        "tags": (TAGS_OK, TAGS_BAD),
        "source": (SOURCE_OK, SOURCE_BAD),
        "kind": (KIND_OK, KIND_BAD),
        "metadata": (METADATA_OK, METADATA_BAD),
        "language": (st.one_of(LANGUAGE_OK, st.none()), LANGUAGE_BAD),
    }
    ranges: dict[str, Param] = {"created_after": (DATE_OK, DATE_BAD), "created_before": (DATE_OK, DATE_BAD)}
    return {
        "add_entry": tool_args(
            {
                "text": TEXT,
                **entry_fields,
                "idempotency_key": (
                    st.one_of(SHORT_VALID, st.sampled_from(["k1", "k2", "x" * 200])),
                    st.one_of(st.sampled_from(["", " ", "x" * 201, "\x00"]), WRONG),
                ),
                "expires_at": EXPIRES,
                "supersedes": (ID_OK, ID_BAD),
            },
            ("text",),
        ),
        "update_entry": tool_args(
            # Small versions, so that some updates match the entry's and get through.
            {
                "id": ident,
                "text": TEXT,
                **entry_fields,
                "expected_version": (st.integers(1, 4), _ints(1, 2**31 - 1)[1]),
                "expires_at": (st.one_of(EXPIRES[0], st.just("")), EXPIRES[1]),
                "supersedes": (st.one_of(ID_OK, st.just("")), ID_BAD),
            },
            ("id",),
        ),
        "delete_entry": tool_args({"id": ident}, ("id",)),
        "restore_entry": tool_args({"id": ident}, ("id",)),
        "get_entry": tool_args({"id": ident}, ("id",)),
        "list_entries": tool_args(
            {
                **FILTERS,
                **ranges,
                "include_deleted": FLAG,
                "limit": _ints(1, 200),
                "cursor": (
                    st.sampled_from(CURSORS[6:9]),
                    st.one_of(st.sampled_from(CURSORS), ANY_TEXT, WRONG),
                ),
            }
        ),
        "search": tool_args(
            {
                "query": TEXT,
                **FILTERS,
                **ranges,
                "updated_after": (DATE_OK, DATE_BAD),
                "updated_before": (DATE_OK, DATE_BAD),
                "top_k": _ints(1, 20),
                "mode": MODE,
                "min_score": (
                    st.floats(min_value=-1, max_value=1),
                    st.one_of(
                        st.floats().filter(lambda f: not -1 <= f <= 1), st.sampled_from(["0.5", [], {}])
                    ),
                ),
                "min_relevance": RELEVANCE,
                "recency_half_life_days": HALF_LIFE,
                "explain": FLAG,
                "trace": FLAG,
                "pinned_hashes": PINS,
                "diversify": FLAG,
                "selected_text": TEXT,
            },
            ("query",),
        ),
        "build_context": tool_args(
            {
                "query": TEXT,
                **FILTERS,
                "selected_text": TEXT,
                "token_budget": _ints(50, 100_000),
                "top_k": _ints(1, 20),
                "mode": MODE,
                "pinned_hashes": PINS,
                "sections": SECTIONS,
                "diversify": FLAG,
                "min_relevance": RELEVANCE,
                "recency_half_life_days": HALF_LIFE,
                "trace": FLAG,
                "expand_related": FLAG,
            },
            ("query",),
        ),
        "verify_citations": tool_args({"citations": CITATIONS}, ("citations",)),
        "stats": tool_args({}),
        "recent_activity": tool_args(
            {
                "since": (
                    st.sampled_from(["7d", "24h", "30m", "2w", "2026-01-01T00:00:00Z", "2026-11-01"]),
                    st.one_of(ANY_TEXT, WRONG, st.sampled_from(["99999w", "", "x" * 65, "\x00"])),
                ),
                "limit": _ints(1, 100),
                "cursor": (st.none(), st.one_of(st.sampled_from(CURSORS), ANY_TEXT, WRONG)),
            },
            ("since",),
        ),
        "list_tags": tool_args(
            {
                "prefix": (
                    st.one_of(st.none(), st.sampled_from(["o", "LA", "ani"]), SHORT_VALID),
                    st.one_of(st.sampled_from(["x" * 101, "a\x00"]), WRONG),
                ),
                "limit": _ints(1, 500),
            }
        ),
        "link_entries": tool_args(
            {
                "from_id": ident,
                "to_id": ident,
                "relation": RELATION,
                "note": (st.one_of(st.none(), SHORT_VALID), NOTE_BAD),
            },
            ("from_id", "to_id", "relation"),
        ),
        "unlink_entries": tool_args(
            {"from_id": ident, "to_id": ident, "relation": (st.one_of(st.none(), RELATION[0]), RELATION[1])},
            ("from_id", "to_id"),
        ),
        "ingest_document": tool_args(
            {
                "source": (SOURCE_OK.filter(lambda v: v is not None), SOURCE_BAD),
                "text": TEXT,
                "path": (st.none(), st.one_of(st.sampled_from(["/etc/passwd", "../x", "\x00"]), WRONG)),
                "format": (
                    st.one_of(st.none(), st.sampled_from(["markdown", "text", "html", "rst"])),
                    st.one_of(st.sampled_from(["docx", "", "PDF "]), WRONG),
                ),
                "title": TITLE,
                "version": (
                    st.one_of(st.none(), st.sampled_from(["1", "2.0", "v3-beta"])),
                    st.one_of(st.sampled_from(["x" * 101, "a\x00", "\n"]), WRONG),
                ),
                "language": (st.one_of(LANGUAGE_OK, st.none()), LANGUAGE_BAD),
            },
            ("source", "text"),
        ),
        "get_document": tool_args(
            {"id": ident, "section": (st.one_of(st.none(), st.just("*"), SHORT_VALID), WRONG)}, ("id",)
        ),
        "list_documents": tool_args(
            {
                "source_prefix": (SOURCE_OK, SOURCE_BAD),
                "version": (st.one_of(st.none(), st.sampled_from(["1", "2.0"])), WRONG),
                "include_deleted": FLAG,
                "limit": _ints(1, 200),
                "offset": _ints(0, 1_000_000),
            }
        ),
        "delete_document": tool_args({"id": ident, "restore": FLAG}, ("id",)),
        "get_related": tool_args(
            {
                "id": ident,
                "relation": (st.one_of(st.none(), RELATION[0]), RELATION[1]),
                "direction": (
                    st.sampled_from(["out", "in", "both"]),
                    st.one_of(st.sampled_from(["up", "", "OUT"]), WRONG),
                ),
                "depth": _ints(1, 2),
                "limit": _ints(1, 100),
            },
            ("id",),
        ),
    }


# -- the invariants ------------------------------------------------------------------------------


def _snapshot(url: str) -> dict[str, str | None]:
    """A digest of every row of every pgrecall table (as superuser: row-level security does not hide)."""
    out: dict[str, str | None] = {}
    with psycopg.connect(url, autocommit=True) as conn:
        tables = [
            r[0]
            for r in conn.execute(
                "SELECT tablename FROM pg_tables "
                "WHERE schemaname = 'public' AND tablename <> 'alembic_version' ORDER BY 1"
            ).fetchall()
        ]
        for table in tables:
            row = conn.execute(
                sql.SQL(
                    "SELECT count(*)::text || ':' "
                    "|| coalesce(md5(string_agg(t::text, '|' ORDER BY t::text)), '') FROM {} t"
                ).format(sql.Identifier(table))
            ).fetchone()
            out[table] = row[0] if row else None
    return out


# "<field>: <rule>", the field optionally followed by an item index and a sub-field.
_ERROR_FIELD = re.compile(
    r"^Error executing tool (?P<tool>\w+): (?P<field>[A-Za-z_]\w*)(?:\[\d+\])?(?:\.\w+)?: \S"
)


def _field_of(message: str) -> str | None:
    """The field a rejection names; None unless it is one line without a documentation URL."""
    if "\n" in message or "errors.pydantic.dev" in message:
        return None
    match = _ERROR_FIELD.match(message)
    return match["field"] if match else None


def _walk(value: Any) -> Iterator[Any]:
    yield value
    if isinstance(value, dict):
        for v in value.values():
            yield from _walk(v)
    elif isinstance(value, list):
        for v in value:
            yield from _walk(v)


def assert_no_vectors(value: Any) -> None:
    """No list of many floats anywhere: embeddings never leave the server."""
    for node in _walk(value):
        if isinstance(node, list) and len(node) >= 16:
            assert not all(isinstance(x, float) for x in node), "a vector-like float list in a result"


class CallCost:
    """Counts Python profiler events (calls, C calls) of one MCP call, server side included.

    The in-memory client and server share the event loop's thread; service code runs in the
    worker threads of anyio.to_thread.run_sync (run_blocking), which is patched to profile
    them too. sys.setprofile is per thread: nothing else is counted.
    """

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.events = 0
        self._on = False
        self.worker_threads = True  # off only to show that they are counted
        original = anyio.to_thread.run_sync

        async def run_sync(func: Any, *args: Any, **kwargs: Any) -> Any:
            if not (self._on and self.worker_threads):
                return await original(func, *args, **kwargs)

            def profiled(*inner: Any) -> Any:
                sys.setprofile(self._count)
                try:
                    return func(*inner)
                finally:
                    sys.setprofile(None)

            return await original(profiled, *args, **kwargs)

        monkeypatch.setattr(anyio.to_thread, "run_sync", run_sync)

    def _count(self, frame: Any, event: str, arg: Any) -> None:
        self.events += 1

    async def call(self, client: Client, tool: str, args: dict[str, Any]) -> tuple[int, Any]:
        """(profiler events, result) of one tool call."""
        # The collector off while counting: a collection that a large input's allocations happen to
        # trigger runs the finalizers of unrelated garbage (connections, cursors, tasks) inside the
        # call, events that depend on the heap's history, not on the input.
        gc.disable()
        self.events, self._on = 0, True
        sys.setprofile(self._count)
        try:
            with anyio.fail_after(CALL_TIMEOUT_S):
                result = await client.call_tool(tool, args)
        finally:
            sys.setprofile(None)
            self._on = False
            gc.enable()
        return self.events, result


class Checker:
    """Calls a tool and checks the invariants of the module docstring."""

    def __init__(
        self, client: Client, url: str, params: dict[str, set[str]], meter: CallCost, budget: int
    ) -> None:
        self.client = client
        self.url = url
        self.params = params
        self.meter = meter
        self.budget = budget  # profiler events a rejection may cost
        self.calls = 0
        self.rejected = 0

    async def __call__(self, tool: str, args: dict[str, Any]) -> tuple[bool, str | dict[str, Any]]:
        before = _snapshot(self.url)
        cost, result = await self.meter.call(self.client, tool, args)
        self.calls += 1
        if result.is_error:
            self.rejected += 1
            text = result.content[0].text  # type: ignore[union-attr]
            assert text != f"Error executing tool {tool}", f"internal error for {tool}({_show(args)})"
            assert not text.startswith(f"Error executing tool {tool}: Error executing tool"), text
            field = _field_of(text)
            assert field, f"rejection does not name a field: {text[:300]!r} for {tool}({_show(args)})"
            assert field in self.params[tool], f"{text[:300]!r}: {field!r} is not a parameter of {tool}"
            assert _snapshot(self.url) == before, f"rejected {tool}({_show(args)}) changed the store: {text}"
            assert cost <= self.budget, (
                f"rejecting {tool}({_show(args)}) cost {cost} profiler events; the budget is {self.budget}"
            )
            return False, text
        data = result.structured_content
        assert data is not None, result.content
        assert_no_vectors(data)
        writers = {
            "add_entry",
            "update_entry",
            "delete_entry",
            "restore_entry",
            "link_entries",
            "unlink_entries",
            "ingest_document",
            "delete_document",
        }
        if tool not in writers:
            assert _snapshot(self.url) == before, f"read-only {tool}({_show(args)}) changed the store"
        await self._check_success(tool, args, data)
        return True, data

    async def _check_success(self, tool: str, args: dict[str, Any], data: dict[str, Any]) -> None:
        if tool == "add_entry" and data.get("document_id"):
            # A long note is stored as a document of chunks; the document keeps the text as given.
            whole = await call(self.client, "get_document", id=data["document_id"], section="*")
            assert whole["text"] == args["text"], "the text must be stored exactly as given"
            assert data["content_hash"] == content_hash(args["text"]) == whole["document"]["content_hash"]
        elif tool == "add_entry" and not data["idempotent_replay"]:
            stored = await call(self.client, "get_entry", id=data["id"])
            assert stored["text"] == args["text"], "the text must be stored exactly as given"
            assert data["content_hash"] == content_hash(args["text"]) == stored["content_hash"]
            self._check_entry(stored)
        elif tool in {"update_entry", "restore_entry"}:
            self._check_entry(data["entry"])
            if tool == "update_entry" and isinstance(args.get("text"), str):
                assert data["entry"]["text"] == args["text"]
        elif tool == "get_entry":
            self._check_entry(data)
        elif tool == "search":
            top_k = args.get("top_k", 5)
            assert len(data["hits"]) <= (top_k if isinstance(top_k, int) else 20)
        elif tool == "list_entries":
            assert len(data["entries"]) <= 200

    @staticmethod
    def _check_entry(entry: dict[str, Any]) -> None:
        # What validation promises, read back from the store.
        assert _KIND_RULE.fullmatch(entry["kind"]), f"stored kind {entry['kind']!r} breaks the kind rule"
        assert "\x00" not in entry["text"]
        assert len(entry["tags"]) <= 64 and all(0 < len(t) <= 100 for t in entry["tags"])
        assert entry["content_hash"] == content_hash(entry["text"])


def _show(args: dict[str, Any]) -> str:
    # Failure messages stay readable with 1 MB arguments.
    return ", ".join(f"{k}={v!r:.120}" for k, v in args.items())


# -- fixtures ------------------------------------------------------------------------------------


@pytest.fixture
async def seeded(client: Client) -> dict[str, list[str]]:
    """A few real entries (one soft-deleted) so that ids, hashes and filters can hit something."""
    texts = [
        ("Die Häuser am See sind im Winter still und kalt.", ["lake"], "de"),
        ("Kubernetes pods restart when memory runs out.", ["ops"], "en"),
        ("Les chevaux galopaient dans les prairies au lever du soleil.", ["animals"], None),
        ("Ame\u0301lie's ca\u0301fe\u0301 — 👩‍🍳 a:* & (b | !c)", ["odd"], None),
    ]
    added = [await call(client, "add_entry", text=t, tags=g, language=lang) for t, g, lang in texts]
    await call(client, "delete_entry", id=added[-1]["id"])
    return {"ids": [a["id"] for a in added], "hashes": [a["content_hash"] for a in added]}


@pytest.fixture
def meter(monkeypatch: pytest.MonkeyPatch) -> CallCost:
    return CallCost(monkeypatch)


@pytest.fixture
async def checker(client: Client, settings: Settings, meter: CallCost) -> Checker:
    tools = (await client.list_tools()).tools
    params = {t.name: set(t.input_schema.get("properties", {})) for t in tools}
    assert settings.database_url is not None
    # What a rejection may cost: a small multiple of one that needs a database round trip (an
    # unknown id). Twice, and the second counted: first-call work (imports, caches) is not the input's.
    for _ in range(2):
        reference, result = await meter.call(client, "get_entry", {"id": str(uuid.UUID(int=1))})
        assert result.is_error
    return Checker(
        client, settings.database_url.get_secret_value(), params, meter, REJECTION_FACTOR * reference
    )


# -- tests ---------------------------------------------------------------------------------------


STRATEGIES = strategies()
HYPOTHESIS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    # One database, server and session per tool, shared by its examples, on purpose.
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
    ],
)


async def test_every_listed_tool_has_a_strategy(client: Client) -> None:
    listed = {t.name for t in (await client.list_tools()).tools}
    assert listed == TOOLS == set(STRATEGIES)


def _property_test(tool: str) -> Any:
    # One test function per tool, arguments drawn by @given outside the event loop: a draw
    # inside the coroutine (st.data()) can raise hypothesis' StopTest, a BaseException that
    # tears down anyio's test runner and every later example with it.
    @HYPOTHESIS
    @given(args=STRATEGIES[tool])
    async def test(args: dict[str, Any], checker: Checker, seeded: dict[str, list[str]]) -> None:
        ok, outcome = await checker(tool, _resolve(args, seeded))
        # Shown by --hypothesis-show-statistics: how often each rule fired, how often a call passed.
        event("accepted" if ok else f"rejected: {_field_of(str(outcome))}")

    test.__name__ = f"test_hostile_{tool}"
    test.__doc__ = f"Hostile arguments to {tool}: no crash, fields named, nothing written on rejection."
    return test


for _tool in sorted(TOOLS):
    globals()[f"test_hostile_{_tool}"] = _property_test(_tool)


# Inputs found or suspected while writing this file, checked on every run (not left to chance).
NAIVE, AWARE = "2024-01-01T00:00:00", "2024-06-01T00:00:00+00:00"
REGRESSIONS: list[Any] = [
    # (tool, arguments, the field a rejection must name; None: success expected)
    ("search", {"query": "pods", "created_after": NAIVE, "created_before": AWARE}, None),
    ("search", {"query": "pods", "updated_after": AWARE, "updated_before": NAIVE}, "updated_after"),
    ("list_entries", {"created_after": NAIVE, "created_before": AWARE}, None),
    ("search", {"query": "pods", "created_after": "0001-01-01T00:00:00+14:00"}, None),
    ("list_entries", {"source": "a\x00b"}, "source"),
    ("search", {"query": "q", "source_prefix": "docs/\x00"}, "source_prefix"),
    ("list_entries", {"cursor": _cursor(b"[" * 100_000 + b"]" * 100_000)}, "cursor"),
    ("list_entries", {"cursor": "x" * MB}, "cursor"),
    ("update_entry", {"id": "<id1>", "kind": "fact", "expected_version": 2**31}, "expected_version"),
    ("update_entry", {"id": "<id1>", "kind": "fact", "expected_version": 2**63}, "expected_version"),
    ("add_entry", {"text": "kind with a trailing newline", "kind": "note\n"}, "kind"),
    # The SDK client refuses to serialize deeper than 255 levels (and the server's JSON parser
    # stops near 200 on a real transport); deeper ones go straight to the server further down.
    ("add_entry", {"text": "deep metadata", "metadata": _nested(150)}, "metadata"),
    ("add_entry", {"text": "deep metadata", "metadata": _nested(250, lists=True)}, "metadata"),
    ("add_entry", {"text": "x" * MB}, "text"),
    ("add_entry", {"text": "hello", "language": "pg_catalog.english"}, "language"),
    ("add_entry", {"text": "hello", "language": "english; drop"}, "language"),
    ("search", {"query": "' & | ! ( ) : * < > \\"}, None),
    ("search", {"query": "a:* & !b | (c <-> d)", "mode": "lexical"}, None),
    ("search", {"query": "pods", "top_k": 10**100}, "top_k"),
    ("search", {"query": "pods", "language": "english; drop"}, "language"),
    # trace and a selection searched alone (with its floor, filters echoed, and an empty answer's reason).
    ("search", {"query": "pods", "trace": "maybe"}, "trace"),
    ("search", {"query": "pods", "selected_text": "\u200b", "trace": True}, None),
    ("search", {"selected_text": "a:* & !b", "kind": "x", "trace": True, "min_relevance": 0}, None),
    ("build_context", {"query": "q", "selected_text": "x" * 5001, "trace": True}, None),
    ("build_context", {"selected_text": "pods", "sections": ["a", "b"], "trace": [1]}, "trace"),
    # A valid query plus a valid section name must not exceed the search text limit.
    ("build_context", {"query": "q " * 500, "sections": ["background"]}, None),
    ("build_context", {"query": "pods", "token_budget": -(2**63)}, "token_budget"),
    (
        "verify_citations",
        {"citations": [{"content_hash": "sha256:" + "0" * 64, "id": "x" * MB}]},
        "citations",
    ),
]


@pytest.mark.parametrize(("tool", "arguments", "field"), REGRESSIONS)
async def test_known_hostile_inputs(
    tool: str, arguments: dict[str, Any], field: str | None, checker: Checker, seeded: dict[str, list[str]]
) -> None:
    args = _resolve(arguments, seeded)
    ok, outcome = await checker(tool, args)
    if field is None:
        assert ok, outcome
    else:
        assert not ok, f"{tool} accepted {_show(args)}"
        assert isinstance(outcome, str) and re.search(rf"(?<![\w]){field}(?![\w])", outcome), outcome


# Values the SDK client cannot put on the wire (it sends NaN as null and refuses to serialize
# past 255 levels), but a hand-written JSON client can (the server's parser accepts NaN and
# Infinity). Called on the server object itself, past any client-side serialization.
RAW_ONLY: list[tuple[str, dict[str, Any], str]] = [
    ("search", {"query": "pods", "min_score": float("nan")}, "min_score"),
    ("search", {"query": "pods", "min_score": float("inf")}, "min_score"),
    ("add_entry", {"text": "deep", "metadata": _nested(5000)}, "metadata"),
    ("add_entry", {"text": "deep", "metadata": _nested(5000, lists=True)}, "metadata"),
    ("update_entry", {"id": "<id1>", "metadata": _nested(3000)}, "metadata"),
    ("add_entry", {"text": "nan", "metadata": {"x": float("nan")}}, "metadata"),
]


@pytest.mark.parametrize(("tool", "arguments", "field"), RAW_ONLY)
async def test_values_only_a_raw_client_can_send(
    tool: str,
    arguments: dict[str, Any],
    field: str,
    runtime: Runtime,
    settings: Settings,
    seeded: dict[str, list[str]],
) -> None:
    args = _resolve(arguments, seeded)
    assert settings.database_url is not None
    before = _snapshot(settings.database_url.get_secret_value())
    with pytest.raises(ToolError) as caught:
        await create_server(runtime).call_tool(tool, args)
    assert not isinstance(caught.value, UnexpectedToolError), caught.value.__cause__
    assert re.search(rf"(?<![\w]){field}(?![\w])", str(caught.value)), str(caught.value)
    assert _snapshot(settings.database_url.get_secret_value()) == before


# -- CPU cost of a rejection ---------------------------------------------------------------------
#
# A list over its limit must be refused for what it is (too long) before each item is looked at:
# 40 000 tags once cost 18 s of CPU in an O(n²) de-duplication that ran before the count check.
# Counted, not timed: Python-level profiler events (calls and C calls) during the whole MCP call,
# in the event loop's thread (in-memory client and server share it) and in the worker thread each
# run_blocking call uses. A rejection of a huge input may cost at most COST_FACTOR times the same
# rejection of an input just over the limit.

COST_FACTOR = 2
_SHA = "sha256:" + "0" * 64


def _hashes(n: int) -> list[str]:
    # Distinct: repeats would be merged, and under the limit a merged list is accepted.
    return [f"sha256:{i:064x}" for i in range(n)]


def _tags(n: int) -> list[str]:
    return [f"tag {i}" for i in range(n)]


def _wide(n: int) -> dict[str, Any]:
    return {"k": [0] * n}


# (tool, arguments shared by both calls, the field, its value just over the limit, a huge one)
COSTLY: list[tuple[str, dict[str, Any], str, Any, Any]] = [
    ("add_entry", {"text": "cost probe"}, "tags", _tags(65), _tags(40_000)),
    ("update_entry", {"id": "<id1>"}, "tags", _tags(65), _tags(40_000)),
    ("list_entries", {}, "tags_all", _tags(65), _tags(40_000)),
    ("list_entries", {}, "tags_any", _tags(65), _tags(40_000)),
    ("search", {"query": "pods"}, "tags_all", _tags(65), _tags(40_000)),
    ("build_context", {"query": "pods"}, "tags_any", _tags(65), _tags(40_000)),
    ("build_context", {"query": "pods"}, "sections", _tags(9), _tags(10_000)),
    ("search", {"query": "pods"}, "pinned_hashes", _hashes(51), _hashes(100_000)),
    ("build_context", {"query": "pods"}, "pinned_hashes", _hashes(51), _hashes(100_000)),
    (
        "verify_citations",
        {},
        "citations",
        [{"content_hash": _SHA}] * 101,
        [{"content_hash": _SHA}] * 100_000,
    ),
    # 22 000 zeros are 66 KB of JSON (just over 64 KiB); a million are 3 MB.
    ("add_entry", {"text": "cost probe"}, "metadata", _wide(22_000), _wide(1_000_000)),
    ("add_entry", {"text": "cost probe"}, "metadata", _nested(11), _nested(250, lists=True)),
]


async def rejection_cost(meter: CallCost, client: Client, tool: str, args: dict[str, Any]) -> tuple[int, str]:
    """Profiler events of one call that must be rejected, and its error text."""
    events, result = await meter.call(client, tool, args)
    assert result.is_error, f"{tool} accepted {_show(args)}"
    text = result.content[0].text
    assert isinstance(text, str)
    return events, text


async def test_the_profiler_sees_service_code_in_worker_threads(client: Client, meter: CallCost) -> None:
    # Metadata of 22 000 values (66 KB of JSON) passes the SDK and is walked by check_metadata in
    # run_blocking's worker thread: an event per value at least, seen only when that thread is counted.
    args = {"text": "probe", "metadata": {"k": [0] * 22_000}}
    await rejection_cost(meter, client, "add_entry", args)
    seen, _ = await rejection_cost(meter, client, "add_entry", args)
    meter.worker_threads = False
    unseen, _ = await rejection_cost(meter, client, "add_entry", args)
    assert seen > unseen + 20_000, (seen, unseen)


@pytest.mark.parametrize(
    ("tool", "base", "field", "small", "huge"),
    COSTLY,
    ids=[f"{tool}-{field}-{i}" for i, (tool, _, field, _, _) in enumerate(COSTLY)],
)
async def test_rejecting_a_huge_input_costs_no_more_than_a_small_one(
    tool: str,
    base: dict[str, Any],
    field: str,
    small: Any,
    huge: Any,
    client: Client,
    seeded: dict[str, list[str]],
    meter: CallCost,
) -> None:
    args = _resolve(base, seeded)
    # Once unmeasured: first-call work (imports, caches, prepared statements) is not the input's.
    await rejection_cost(meter, client, tool, {**args, field: small})
    small_cost, small_text = await rejection_cost(meter, client, tool, {**args, field: small})
    huge_cost, huge_text = await rejection_cost(meter, client, tool, {**args, field: huge})
    for text in (small_text, huge_text):
        assert _field_of(text) == field, text[:300]
    assert huge_cost <= COST_FACTOR * small_cost, (
        f"{tool}.{field}: {huge_cost} profiler events for the huge input, {small_cost} just over the limit"
    )
