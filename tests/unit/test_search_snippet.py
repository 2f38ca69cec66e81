"""Snippets anchor on the first matched lexeme, also across diacritics, else show the start."""

from __future__ import annotations

import pytest

from pgrecall.domain.entries import EntryFilters
from pgrecall.domain.text import make_snippet
from pgrecall.domain.validation import check_mode, check_query
from pgrecall.errors import InvalidInputError
from pgrecall.store.search import SQL_SEARCH, SearchParams, build_statement, has_filters

FILLER = "Lorem ipsum dolor sit amet, consectetur adipiscing elit. " * 12


def test_snippet_around_the_first_match() -> None:
    text = FILLER + "The houses by the lake were sold. " + FILLER
    out = make_snippet(text, ["hous", "lake"], limit=120)
    assert out.startswith("… ") and "houses by the lake" in out and len(out) <= 125


def test_snippet_finds_stems_without_their_diacritics() -> None:
    text = FILLER + "Die Häuser stehen am See. " + FILLER
    assert "Häuser stehen" in make_snippet(text, ["haus"], limit=120)


def test_snippet_falls_back_to_the_start() -> None:
    assert make_snippet(FILLER, ["zzz"], limit=60).startswith("Lorem ipsum")
    assert make_snippet(FILLER, [], limit=60).startswith("Lorem ipsum")
    assert make_snippet("short text", ["text"]) == "short text"


def test_query_and_mode_rules() -> None:
    assert check_query("  two\nwords ") == "two words"
    with pytest.raises(InvalidInputError):
        check_query("x" * 1001)
    assert check_mode("lexical") == "lexical"
    with pytest.raises(InvalidInputError):
        check_mode("semantic")


def test_statement_is_constant_but_for_the_fragments() -> None:
    plain = SearchParams(owner="o", query="q", top_k=5, vector=[0.0] * 512, dim=512)
    filtered = SearchParams(owner="o", query="q", top_k=5, filters=EntryFilters(kind="note", tags_any=["a"]))
    assert not has_filters(plain.filters) and has_filters(filtered.filters)
    text = build_statement(plain).as_string()
    assert "vector(512)" in text and "lower(e.kind) =" not in text
    assert "lower(e.kind) = lower(%(f_kind)s)" in build_statement(filtered).as_string()
    assert (
        "%(query)s" in SQL_SEARCH and "to_tsquery(" not in SQL_SEARCH
    )  # user text is never parsed as syntax
