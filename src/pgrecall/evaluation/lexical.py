"""Lexical ranking quality: nDCG@10 of pgrecall's lexical branch against bm25s on the same texts.

Needs the bench extra (bm25s, PyStemmer, ir-measures). bm25s is run the usual way for
English collections: English stop words and the Snowball English stemmer, Lucene BM25
(k1 = 1.5, b = 0.75), over title + text.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import psycopg
from psycopg.rows import dict_row

from pgrecall.evaluation import corpus, runner
from pgrecall.store import search as store

COLLECTIONS = ("cranfield", "cisi")
TOP = 10
# bm25s run the usual way for English collections (the same reference `pgrecall eval` uses).
ENGLISH_BM25 = runner.Bm25Settings("english", "english", "en")


def read_queries(name: str) -> dict[str, str]:
    """A collection's queries, clipped to the input limit (both systems get the same text)."""
    return {q: runner.clip_query(t) for q, t in corpus.read_queries(name).items()}


def ndcg10(run: dict[str, list[str]], qrels: dict[str, dict[str, int]]) -> float:
    """Mean nDCG@10 over every query with judgements (a query without results counts 0)."""
    return runner.score(run, qrels)[0]["nDCG@10"]


def bm25s_run(keys: Sequence[str], texts: Sequence[str], queries: dict[str, str]) -> dict[str, list[str]]:
    """Top 10 keys per query from bm25s (English stop words and stemmer)."""
    return runner.bm25_run(keys, texts, queries, ENGLISH_BM25, depth=TOP)[0]


def store_run(search: Callable[[str], list[str]], queries: dict[str, str]) -> dict[str, list[str]]:
    """Top 10 keys per query from a search function (query text → ranked keys)."""
    return {qid: search(text) for qid, text in queries.items()}


def sql_lexical_search(
    conn: psycopg.Connection[Any], owner: str, tuning: store.Tuning
) -> Callable[[str], list[str]]:
    """A search function over the store's SQL, lexical branch only; keys are the entries' source."""

    def run(text: str) -> list[str]:
        params = store.SearchParams(owner=owner, query=text, top_k=TOP, use_vector=False, tuning=tuning)
        with conn.transaction():
            conn.execute(store.SQL_SET_KNOBS, store.knobs(tuning, False))
            rows = conn.execute(store.build_statement(params), store.bind(params)).fetchall()
        ids = [r["id"] for r in rows if r["id"] is not None]
        if not ids:
            return []
        src = {
            r["id"]: r["source"]
            for r in conn.execute(
                "SELECT id, source FROM entries WHERE owner = %s AND id = ANY(%s)", (owner, ids)
            ).fetchall()
        }
        return [src[i] for i in ids]

    return run


def judged_in_store(name: str) -> tuple[dict[str, str], dict[str, dict[str, int]]]:
    """A collection's queries and their judgements, keyed as a benchmark store's sources (name:doc)."""
    queries = read_queries(name)
    qrels = {
        q: {f"{name}:{d}": r for d, r in docs.items()}
        for q, docs in corpus.read_qrels(name).items()
        if q in queries
    }
    return queries, qrels


def ndcg_in_store(conn: psycopg.Connection[Any], tuning: store.Tuning) -> dict[str, float]:
    """nDCG@10 of the SQL lexical branch on each collection's queries inside a loaded benchmark store."""
    search = sql_lexical_search(conn, "default", tuning)
    return {name: ndcg10(store_run(search, queries), qrels) for name, (queries, qrels) in _judged().items()}


def bm25s_ndcg(docs: Sequence[corpus.Doc]) -> dict[str, float]:
    """nDCG@10 of bm25s on each collection's queries over the same documents as a benchmark store."""
    keys = [d.key for d in docs]
    texts = [f"{d.title}\n{d.body}" for d in docs]
    judged = _judged().items()
    return {name: ndcg10(bm25s_run(keys, texts, queries), qrels) for name, (queries, qrels) in judged}


def _judged() -> dict[str, tuple[dict[str, str], dict[str, dict[str, int]]]]:
    return {name: judged_in_store(name) for name in COLLECTIONS}


def quality_at_scale(url: str, docs: Sequence[corpus.Doc]) -> dict[str, Any]:
    """nDCG@10 of the Cranfield and CISI queries inside a loaded benchmark store (sources = doc keys)."""
    with psycopg.connect(url, row_factory=dict_row) as conn:
        ours = ndcg_in_store(conn, store.Tuning())
    theirs = bm25s_ndcg(docs)
    return {
        name: {
            "pgrecall": round(ours[name], 4),
            "bm25s": round(theirs[name], 4),
            # A small store may hold none of a collection's judged documents.
            "ratio": round(ours[name] / theirs[name], 3) if theirs[name] else None,
        }
        for name in COLLECTIONS
    }
