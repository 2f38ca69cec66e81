"""Snippets anchor on the first matched lexeme, also across diacritics, else show the start."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from pgrecall.domain.entries import EntryFilters
from pgrecall.domain.ranking import check_fusion
from pgrecall.domain.text import code_words, make_snippet
from pgrecall.domain.validation import check_mode, check_query
from pgrecall.errors import InvalidInputError
from pgrecall.store.search import SQL_SEARCH, SearchParams, Tuning, bind, build_statement, has_filters

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
    assert check_fusion("rrf") == "rrf"
    with pytest.raises(InvalidInputError, match="fusion: must be one of convex, rrf"):
        check_fusion("borda")


def test_convex_weight_falls_with_the_query_length_and_needs_a_scale() -> None:
    tuning = Tuning()
    weights = [tuning.vector_weight(" ".join(["word"] * n)) for n in (1, 3, 10, 55, 10_000)]
    assert weights == sorted(weights, reverse=True) and all(0.1 <= w <= 0.9 for w in weights)
    assert weights[1] == 0.9  # 1.3 / (1 + 0.3 ln 4) is above the ceiling
    assert abs(weights[2] - 1.3 / (1 + 0.3 * math.log(11))) < 1e-12
    vector = [0.0] * 384
    params = SearchParams(owner="o", query="q", top_k=5, vector=vector, dim=384, fusion="convex")
    assert params.fusion_used() == "rrf"  # no scale yet
    assert replace(params, cos_scale=(0.73, 0.87)).fusion_used() == "convex"
    assert replace(params, cos_scale=(0.8, 0.8)).fusion_used() == "rrf"  # a degenerate scale
    assert replace(params, cos_scale=(0.73, 0.87), vector=None).fusion_used() == "rrf"
    bound = bind(replace(params, cos_scale=(0.73, 0.87)))
    assert bound["convex"] and bound["cos_lo"] == 0.73 and bound["w_vec"] == tuning.vector_weight("q")


@pytest.mark.parametrize(
    ("question", "code"),
    [
        ("What should I know about max_connections configuration parameter?", ["max_connections"]),
        ("Wann ruft Python `__init__` auf, und was tut os.path.join()?", ["__init__", "os.path.join()"]),
        ("Mail::POP3Client fournit une interface objet.", ["Mail::POP3Client"]),
        ("pg_dump, then pg_dump again", ["pg_dump"]),
        # Product names, versions, domains and a lone underscore are not code words.
        ("OpenPGP tools for X.Org 5.x on freedesktop.org", []),
        ("a _ b __ c", []),
        ("共有メモリ shared_buffers の設定", ["shared_buffers"]),
    ],
)
def test_code_words_are_identifiers_written_as_code(question: str, code: list[str]) -> None:
    assert code_words(question) == code


def test_a_question_naming_code_caps_the_cosine_weight() -> None:
    tuning = Tuning()
    plain = "What should I know about the maximum number of connections?"
    named = "What should I know about max_connections?"
    assert tuning.vector_weight(plain) > tuning.vector_weight_code
    assert tuning.vector_weight(named) == tuning.vector_weight_code
    # A long question whose prior is already below the cap keeps its prior.
    long = " ".join(["word"] * 2000) + " max_connections"
    assert tuning.vector_weight(long) == Tuning(vector_weight_code=1.0).vector_weight(long) < 0.5


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
