"""The search statement is one template filled by one mechanism (psycopg's sql.SQL.format)."""

from __future__ import annotations

import string

from pgrecall.domain.entries import EntryFilters
from pgrecall.store.search import SearchParams, build_statement
from pgrecall.store.search_sql import FRAGMENTS, MAX_QUERY_TERMS, SQL_SEARCH


def test_every_placeholder_is_filled_by_build_statement() -> None:
    names = {field for _, field, _, _ in string.Formatter().parse(SQL_SEARCH) if field is not None}
    assert names == {"dim", "n_vec", "filters", *FRAGMENTS}
    assert "<" + "slots" not in SQL_SEARCH  # no second substitution pass


def test_the_composed_statement_has_every_term_slot_and_the_filters() -> None:
    params = SearchParams(
        owner="o",
        query="q",
        top_k=5,
        vector=[0.0] * 768,
        dim=768,
        fusion="convex",
        filters=EntryFilters(tags_all=("a",), version="v1"),
    )
    text = build_statement(params).as_string(None)
    for i in (1, 8, 9, 16, 17, MAX_QUERY_TERMS):
        assert f"c.tsv @@ t.tq{i} THEN t.w{i}" in text and f"l.tqs[{i}] AS tq{i}" in text
    assert f"c.tsv @@ t.tq{MAX_QUERY_TERMS + 1} " not in text
    assert "ts_rank('{1,1,1,1}'" in text  # doubled braces in the template, single in SQL
    assert "vector(768)" in text and "{dim}" not in text and "{filters}" not in text
    assert "FROM probe_stems" in text and "FROM qterms" in text
