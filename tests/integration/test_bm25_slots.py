"""The lexical branch's score is BM25 in every slot group: queries of up to 8, 16 and 32 terms."""

from __future__ import annotations

import math

import psycopg
import pytest
from psycopg.rows import dict_row

from pgrecall.domain.text import content_hash
from pgrecall.store import search as store

WORDS = [
    *("harbour", "crane", "ferry", "ticket", "lighthouse", "anchor", "rope", "sail", "storm", "tide"),
    *("pier", "dock", "cargo", "vessel", "captain", "gull", "beacon", "buoy", "compass", "hull"),
    *("keel", "mast", "rudder", "deck", "cabin", "galley", "chart", "signal"),
]
# The notes differ in length (6 to 46 words) and the longer ones hold words twice (tf 2), so that
# every part of BM25 counts: idf, tf saturation and length normalisation.
NOTES = [" ".join(WORDS[(i * 7 + j * 3) % len(WORDS)] for j in range(6 + 5 * i)) for i in range(9)]


@pytest.fixture
def url(db_url: str) -> str:
    with psycopg.connect(db_url) as conn:
        for body in NOTES:
            conn.execute(
                "INSERT INTO entries (body, content_hash, language) VALUES (%s, %s, 'english')",
                (body, content_hash(body)),
            )
    return db_url


def reference_bm25(url: str, query: str, tuning: store.Tuning) -> dict[str, float]:
    """BM25 of every note that shares a term with the query, from its tsvector and the statistics."""
    with psycopg.connect(url, row_factory=dict_row) as conn:
        terms = {
            r["lexeme"]: len(r["positions"])
            for r in conn.execute(
                "SELECT lexeme, positions FROM unnest(to_tsvector('english', %s))", (query,)
            ).fetchall()
        }
        stats = conn.execute(
            "SELECT sum(n_docs)::float8 AS n, sum(total_len)::float8 AS total FROM "
            "(SELECT n_docs, total_len FROM lexical_docs UNION ALL "
            " SELECT n_docs, total_len FROM lexical_docs_delta) s"
        ).fetchone()
        assert stats is not None
        docs = conn.execute("SELECT body, tsv FROM entries").fetchall()
        tfs = {
            d["body"]: {
                r["lexeme"]: len(r["positions"])
                for r in conn.execute("SELECT lexeme, positions FROM unnest(%s::tsvector)", (d["tsv"],))
            }
            for d in docs
        }
    n, avgdl = stats["n"], stats["total"] / stats["n"]
    df = {t: sum(t in tf for tf in tfs.values()) for t in terms}
    idf = {t: math.log(1.0 + (n - df[t] + 0.5) / (df[t] + 0.5)) for t in terms}
    scores: dict[str, float] = {}
    for body, tf in tfs.items():
        norm = tuning.k1 * (1.0 - tuning.b + tuning.b * len(tf) / avgdl)
        score = sum(
            qtf * idf[t] * tf[t] * (tuning.k1 + 1.0) / (tf[t] + norm) for t, qtf in terms.items() if t in tf
        )
        if score > 0:
            scores[body] = score
    return scores


@pytest.mark.parametrize("n_terms", [5, 12, 24])
def test_lexical_scores_are_bm25_in_every_slot_group(url: str, n_terms: int) -> None:
    query = " ".join(WORDS[:n_terms] + WORDS[:2])  # two terms twice: qtf 2
    params = store.SearchParams(owner="default", query=query, top_k=20, use_vector=False)
    with psycopg.connect(url, row_factory=dict_row) as conn, conn.transaction():
        conn.execute(store.SQL_SET_KNOBS, store.knobs(params.tuning, False))
        found = store.to_rows(conn.execute(store.build_statement(params), store.bind(params)).fetchall())
    assert found.query_terms == n_terms
    got = {row.body: row.lex_score for row in found.rows}
    want = reference_bm25(url, query, params.tuning)
    assert set(got) == set(want)
    for body, score in want.items():
        assert got[body] == pytest.approx(score, rel=1e-9)
