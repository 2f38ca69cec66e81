"""Lexical candidates: the rarest query terms whose postings fit the budget, the cap, the common-term fill."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row

from pgrecall.domain.text import content_hash
from pgrecall.store import search as store

# Three query words held by 3, 6 and 20 notes, no note holding two of them; 5 notes hold none.
HOLDERS = {"zephyr": 3, "quokka": 6, "lantern": 20}
QUERY = "zephyr quokka lantern"
FILLER = ["harbour", "ferry", "ticket", "storm", "tide", "gull", "cabin", "chart"]


def notes() -> list[tuple[str, str | None]]:
    """Each note's body and the query word it holds (None: it holds none)."""
    out: list[tuple[str, str | None]] = []
    for word, count in HOLDERS.items():
        out += [(f"{word} {FILLER[i % 8]} {FILLER[(i + 3) % 8]} note {word}{i}", word) for i in range(count)]
    out += [(f"{FILLER[i]} {FILLER[i + 1]} plain note number{i}", None) for i in range(5)]
    return out


@pytest.fixture
def url(db_url: str) -> str:
    with psycopg.connect(db_url) as conn:
        for body, _ in notes():
            conn.execute(
                "INSERT INTO entries (body, content_hash, language) VALUES (%s, %s, 'english')",
                (body, content_hash(body)),
            )
    return db_url


def lexical(top_k: int, **tuning: Any) -> store.SearchParams:
    return store.SearchParams(
        owner="default", query=QUERY, top_k=top_k, use_vector=False, tuning=replace(store.Tuning(), **tuning)
    )


def search(url: str, params: store.SearchParams) -> tuple[int, list[str]]:
    """How many entries the lexical branch scored, and the query word each hit holds."""
    holder = {body: word for body, word in notes()}
    with psycopg.connect(url, row_factory=dict_row) as conn, conn.transaction():
        conn.execute(store.SQL_SET_KNOBS, store.knobs(params.tuning, False))
        found = store.to_rows(conn.execute(store.build_statement(params), store.bind(params)).fetchall())
    return found.lexical_candidates, [str(holder[row.body]) for row in found.rows]


def test_candidates_are_the_holders_of_the_rarest_terms_that_fit_the_budget(url: str) -> None:
    # zephyr (3) and quokka (3 + 6 = 9) fit a budget of 10; lantern (9 + 20) does not.
    scored, hits = search(url, lexical(top_k=5, budget=10))
    assert scored == 9
    assert len(hits) == 5 and set(hits) <= {"zephyr", "quokka"}
    # A budget that holds every term's postings scores every holder.
    scored, hits = search(url, lexical(top_k=5, budget=100))
    assert scored == 29
    # The rarer word weighs more (idf): its holders come first.
    assert hits[:3] == ["zephyr"] * 3


def test_the_rarest_term_is_taken_even_over_the_budget_and_the_cap_bounds_it(url: str) -> None:
    scored, hits = search(url, lexical(top_k=3, budget=1))
    assert scored == 3 and hits == ["zephyr"] * 3
    # The cap: no more than `cap` holders of the rare terms are scored.
    scored, hits = search(url, lexical(top_k=2, budget=1, cap=2))
    assert scored == 2 and hits == ["zephyr"] * 2


def test_fewer_rare_candidates_than_top_k_are_filled_from_the_common_terms(url: str) -> None:
    # 9 rare candidates for top_k 12: the other terms' holders are added (rarest term first,
    # up to n_lex), so the branch still returns top_k hits.
    scored, hits = search(url, lexical(top_k=12, budget=10))
    assert scored == 29
    assert len(hits) == 12 and hits.count("lantern") == 3
    assert hits[:3] == ["zephyr"] * 3
    # n_lex bounds the fill.
    scored, hits = search(url, lexical(top_k=12, budget=10, n_lex=15))
    assert scored == 9 + 15
    assert len(hits) == 12
