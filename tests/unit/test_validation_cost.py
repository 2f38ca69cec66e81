"""Limits are checked before per-item work: a huge input costs no more to refuse than a small one.

Counted, not timed: Python profiler events (calls and C calls) while one check runs. These are
the paths that do not go through the MCP schemas' max_length (CLI, import, services).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import pytest

from pgrecall.domain.validation import (
    MAX_METADATA_BYTES,
    check_metadata,
    check_pins,
    check_sections,
    check_tags,
)
from pgrecall.errors import InvalidInputError

COST_FACTOR = 2


def _refusal_cost(check: Callable[[Any], object], value: Any) -> int:
    events = 0

    def profile(frame: Any, event: str, arg: Any) -> None:
        nonlocal events
        events += 1

    sys.setprofile(profile)
    try:
        with pytest.raises(InvalidInputError):
            check(value)
    finally:
        sys.setprofile(None)
    return events


def _hashes(n: int) -> list[str]:
    return [f"sha256:{i:064x}" for i in range(n)]


CASES: list[tuple[str, Callable[[Any], object], Any, Any]] = [
    ("tags", check_tags, [f"t{i}" for i in range(65)], [f"t{i}" for i in range(40_000)]),
    ("tags-repeated", check_tags, ["t"] * 65, ["t"] * 40_000),
    ("sections", check_sections, [f"s{i}" for i in range(9)], [f"s{i}" for i in range(10_000)]),
    ("pins", check_pins, _hashes(51), _hashes(100_000)),
    # Just over 64 KiB of JSON, and 3 MB of it.
    ("metadata-wide", check_metadata, {"k": [0] * 22_000}, {"k": [0] * 1_000_000}),
    (
        "metadata-many-keys",
        check_metadata,
        {f"k{i}": 0 for i in range(8_000)},
        {f"k{i}": 0 for i in range(300_000)},
    ),
]


@pytest.mark.parametrize(("name", "check", "small", "huge"), CASES, ids=[c[0] for c in CASES])
def test_refusing_a_huge_input_costs_no_more_than_a_small_one(
    name: str, check: Callable[[Any], object], small: Any, huge: Any
) -> None:
    small_cost = _refusal_cost(check, small)
    huge_cost = _refusal_cost(check, huge)
    assert huge_cost <= COST_FACTOR * small_cost + 50, (name, small_cost, huge_cost)


def test_a_few_repeats_under_the_limit_are_still_merged() -> None:
    assert check_tags([" a ", "a", "b", "a"]) == ["a", "b"]
    assert check_sections(["x", " x ", "y"]) == ["x", "y"]
    assert check_pins([_hashes(2)[1], _hashes(2)[0], _hashes(2)[1].upper()]) == _hashes(2)[::-1]


def test_counts_are_as_sent() -> None:
    # Repeats do not buy room: the limit applies to the list as sent.
    with pytest.raises(InvalidInputError, match="tags: 65 tags; the limit is 64"):
        check_tags(["same"] * 65)
    with pytest.raises(InvalidInputError, match="sections: 9 section names; the limit is 8"):
        check_sections(["same"] * 9)
    with pytest.raises(InvalidInputError, match="pinned_hashes: 51 pinned hashes; the limit is 50"):
        check_pins(_hashes(1) * 51)


def test_metadata_with_more_values_than_bytes_allow_is_refused_unread() -> None:
    # Every value takes at least two bytes of JSON, so this many can never fit.
    with pytest.raises(InvalidInputError, match="metadata: has more than"):
        check_metadata({"k": [[]] * (MAX_METADATA_BYTES // 2 + 1)})
    # Just under: still measured as JSON, and accepted when it fits.
    assert check_metadata({"k": [0] * 100}) == {"k": [0] * 100}
