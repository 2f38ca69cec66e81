"""The HNSW candidate list of a search follows the owner's live-entry count: three tiers."""

from __future__ import annotations

from dataclasses import replace

import psycopg

from pgrecall.domain.text import content_hash
from pgrecall.store import search as store


def _ef_search(url: str, tuning: store.Tuning) -> str:
    with psycopg.connect(url) as conn, conn.transaction():
        conn.execute(store.SQL_SET_KNOBS, store.knobs(tuning, False))
        row = conn.execute("SHOW hnsw.ef_search").fetchone()
    assert row is not None
    return str(row[0])


def test_the_walk_list_follows_the_owner_size(db_url: str) -> None:
    with psycopg.connect(db_url, autocommit=True) as conn:
        for i in range(3):
            body = f"note number {i}"
            conn.execute(
                "INSERT INTO entries (body, content_hash, language) VALUES (%s, %s, 'english')",
                (body, content_hash(body)),
            )
        conn.execute("SELECT pgrecall_lexical_compact()")  # the live count is read from the merged statistics
    three = store.Tuning(ef_search_small=100, ef_search=200, ef_search_huge=300)
    assert _ef_search(db_url, replace(three, large_store=2, huge_store=3)) == "300"
    assert _ef_search(db_url, replace(three, large_store=2, huge_store=4)) == "200"
    assert _ef_search(db_url, replace(three, large_store=4, huge_store=5)) == "100"
    # Never below the rows the vector branch hands to fusion.
    assert _ef_search(db_url, replace(three, large_store=2, huge_store=3, n_vec=400)) == "400"
