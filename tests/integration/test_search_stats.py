"""Lexical statistics (migration 0002): exact after every kind of write, and a clean round trip."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from pgrecall.app import App
from pgrecall.config import Settings
from pgrecall.db import migrate as schema

# Differences between the maintained statistics (base + deltas) and a recount of live rows.
SQL_DF_MISMATCH = """
WITH have AS (
    SELECT owner, language, lexeme, sum(df)::bigint AS df FROM (
        SELECT owner, language, lexeme, df FROM lexical_df
        UNION ALL SELECT owner, language, lexeme, delta FROM lexical_df_delta) s
    GROUP BY 1, 2, 3 HAVING sum(df) <> 0
), want AS (
    SELECT e.owner, e.language, l.lexeme, count(*)::bigint AS df
    FROM entries e, unnest(tsvector_to_array(e.tsv)) AS l(lexeme)
    WHERE e.deleted_at IS NULL GROUP BY 1, 2, 3
)
SELECT count(*) AS n FROM ((TABLE have EXCEPT TABLE want) UNION ALL (TABLE want EXCEPT TABLE have)) d
"""
SQL_DOCS_MISMATCH = """
WITH have AS (
    SELECT owner, language, sum(n_docs)::bigint AS n, sum(total_len)::bigint AS len FROM (
        SELECT owner, language, n_docs, total_len FROM lexical_docs
        UNION ALL SELECT owner, language, n_docs, total_len FROM lexical_docs_delta) s
    GROUP BY 1, 2 HAVING sum(n_docs) <> 0
), want AS (
    SELECT owner, language, count(*)::bigint AS n, sum(length(tsv))::bigint AS len
    FROM entries WHERE deleted_at IS NULL GROUP BY 1, 2
)
SELECT count(*) AS n FROM ((TABLE have EXCEPT TABLE want) UNION ALL (TABLE want EXCEPT TABLE have)) d
"""
SQL_INSERT = """
INSERT INTO entries (owner, body, content_hash, language, deleted_at)
SELECT %s, b, 'sha256:' || repeat('0', 64), 'english', CASE WHEN d THEN now() END
FROM unnest(%s::text[], %s::bool[]) AS t(b, d)
"""


def mismatches(url: str) -> tuple[int, int]:
    """(df rows, doc rows) that differ from a recount; (0, 0) when the statistics are exact."""
    with psycopg.connect(url) as conn:
        df = conn.execute(SQL_DF_MISMATCH).fetchone()
        docs = conn.execute(SQL_DOCS_MISMATCH).fetchone()
    assert df is not None and docs is not None
    return int(df[0]), int(docs[0])


def df_of(url: str, lexeme: str, owner: str = "default") -> int:
    """Live documents of `owner` holding `lexeme` (English), from the statistics."""
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT coalesce(sum(df), 0) FROM ("
            "SELECT df FROM lexical_df WHERE owner = %(o)s AND lexeme = %(l)s UNION ALL "
            "SELECT delta FROM lexical_df_delta WHERE owner = %(o)s AND lexeme = %(l)s) s",
            {"o": owner, "l": lexeme},
        ).fetchone()
    assert row is not None
    return int(row[0])


def test_stats_follow_every_write(settings: Settings, db_url: str) -> None:
    with App(settings, embedder=None) as app:
        e = app.entries
        a = e.add("default", text="Falcons hunt pigeons over the harbour.", language="en").entry
        b = e.add("default", text="Pigeons nest under the bridge.", title="Pigeons", language="en").entry
        e.add("other", text="Pigeons everywhere in this city.", language="en")
        assert df_of(db_url, "pigeon") == 2 and df_of(db_url, "pigeon", "other") == 1
        assert mismatches(db_url) == (0, 0)
        e.update("default", a.id, text="Falcons hunt sparrows over the harbour.")
        assert df_of(db_url, "pigeon") == 1 and df_of(db_url, "sparrow") == 1
        e.update("default", b.id, tags=["birds"], metadata={"x": 1})  # tags are in tsv (weight C)
        assert df_of(db_url, "bird") == 1
        e.update("default", b.id, language="de")  # re-stemmed in another language
        assert mismatches(db_url) == (0, 0)
        e.delete("default", b.id)
        assert df_of(db_url, "falcon") == 1 and mismatches(db_url) == (0, 0)
        e.restore("default", b.id)
        assert mismatches(db_url) == (0, 0)
        assert app.pool is not None
        with app.pool.connection() as conn:
            conn.execute("DELETE FROM entries WHERE id = %s", (a.id,))
        assert df_of(db_url, "falcon") == 0 and mismatches(db_url) == (0, 0)
        with app.pool.connection() as conn:
            conn.execute(
                SQL_INSERT,
                ("default", [f"bulk pigeon {i}" for i in range(300)], [i % 10 == 0 for i in range(300)]),
            )
            merged = conn.execute("SELECT count(*) AS n FROM lexical_df_delta").fetchone()
        assert merged is not None and merged["n"] == 0  # a statement of 256+ live rows merges its deltas
        assert df_of(db_url, "bulk") == 270 and mismatches(db_url) == (0, 0)
        with app.pool.connection() as conn:
            conn.execute("SELECT pgrecall_lexical_compact()")
        assert mismatches(db_url) == (0, 0)
        with app.pool.connection() as conn:
            conn.execute("TRUNCATE entries, entry_links")  # links reference entries (migration 0010)
            left = conn.execute(
                "SELECT (SELECT count(*) FROM lexical_df) + (SELECT count(*) FROM lexical_docs) AS n"
            )
            assert left.fetchone() == {"n": 0}


def test_concurrent_writers_do_not_block_each_other(db_url: str) -> None:
    # Two open transactions write the same common lexemes; neither waits on the other.
    with psycopg.connect(db_url) as one, psycopg.connect(db_url) as two:
        for conn in (one, two):
            conn.execute("SET lock_timeout = '2s'")
        for i in range(70):  # past the merge tick, both sides
            one.execute(SQL_INSERT, ("default", [f"common words here {i}"], [False]))
            two.execute(SQL_INSERT, ("default", [f"common words there {i}"], [False]))
        one.commit()
        two.commit()
    assert df_of(db_url, "common") == 140 and mismatches(db_url) == (0, 0)


def test_repeatable_read_writer_never_merges(db_url: str) -> None:
    with psycopg.connect(db_url) as conn:
        conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        conn.execute(SQL_INSERT, ("default", [f"snapshot row {i}" for i in range(300)], [False] * 300))
        pending = conn.execute("SELECT count(*) FROM lexical_df_delta").fetchone()
        conn.commit()
    assert pending is not None and pending[0] > 0
    assert mismatches(db_url) == (0, 0)


@pytest.mark.parametrize("rows", [["alpha beta", "beta gamma", "gamma delta"]])
def test_migration_round_trip_with_rows(empty_db_url: str, rows: list[str]) -> None:
    url = empty_db_url
    schema.upgrade(url, "0001_entries")
    with psycopg.connect(url) as conn:
        conn.execute(SQL_INSERT, ("default", rows, [False, False, True]))
        conn.execute(SQL_INSERT, ("team", rows[:1], [False]))
    schema.upgrade(url, "head")
    assert df_of(url, "beta") == 2 and df_of(url, "gamma") == 1 and df_of(url, "alpha", "team") == 1
    assert mismatches(url) == (0, 0)
    schema.downgrade(url, "0001_entries")
    with psycopg.connect(url) as conn:
        tables = conn.execute("SELECT count(*) FROM pg_class WHERE relname LIKE 'lexical%%'").fetchone()
        triggers = conn.execute(
            "SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'entries_lexical%%'"
        ).fetchone()
        storage = conn.execute(
            "SELECT attstorage FROM pg_attribute WHERE attrelid = 'entries'::regclass AND attname = 'tsv'"
        ).fetchone()
        conn.execute(SQL_INSERT, ("default", ["written while downgraded beta"], [False]))
    assert tables == (0,) and triggers == (0,) and storage == ("x",)
    schema.upgrade(url, "head")
    assert df_of(url, "beta") == 3 and mismatches(url) == (0, 0)
    schema.downgrade(url, "base")
    schema.upgrade(url, "head")
    assert mismatches(url) == (0, 0)
    with psycopg.connect(url) as conn:
        count: Any = conn.execute("SELECT count(*) FROM lexical_docs").fetchone()
    assert count == (0,)
