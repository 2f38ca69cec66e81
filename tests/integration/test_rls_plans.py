"""Row-level security must not cost the text and tag indexes their use (LEAKPROOF operators).

The tag filters get that from migration 0006's text[]-only operators `|@>` / `|&&`, not from
marking the polymorphic core functions arraycontains/arrayoverlap LEAKPROOF.
"""

from __future__ import annotations

import os
from typing import Any

import psycopg
import pytest

from pgrecall.db import migrate as schema
from pgrecall.db.database import APP_ROLE
from pgrecall.domain.entries import EntryFilters
from pgrecall.store.entries import list_statement
from pgrecall.store.filters import FILTER_SQL


def _list(filters: EntryFilters) -> tuple[str, dict[str, Any]]:
    """The list statement and parameters EntryStore.list runs for a first page of 20."""
    statement, params = list_statement("alice", filters, limit=21)
    return statement.as_string(), params


# (index expected, statement, parameters): the tag statements are the store's own SQL, which
# matches the folded copy of the tags (migration 0008).
QUERIES: dict[str, tuple[str, str, dict[str, Any]]] = {
    "text search": (
        "entries_tsv_gin",
        "SELECT id FROM entries WHERE tsv @@ to_tsquery('english', 'harbour')",
        {},
    ),
    "search tags_all": (
        "entries_tags_folded_gin",
        "SELECT e.id FROM entries e WHERE " + FILTER_SQL["tags_all"],
        {"f_tags_all": ["t3"]},
    ),
    "search tags_any": (
        "entries_tags_folded_gin",
        "SELECT e.id FROM entries e WHERE " + FILTER_SQL["tags_any"],
        {"f_tags_any": ["t3", "t8"]},
    ),
    "list tags_all": ("entries_tags_folded_gin", *_list(EntryFilters(tags_all=["T3"]))),
    "list tags_any": ("entries_tags_folded_gin", *_list(EntryFilters(tags_any=["t3", "T8"]))),
}
# The tag filter as it was up to migration 0008, for the databases of revision 0006.
TAGS_ALL_0006 = "SELECT e.id FROM entries e WHERE e.tags |@> %(f_tags_all)s::text[]"
BROAD = ("arraycontains", "arrayoverlap")
NARROW = ("pgrecall_tags_contain", "pgrecall_tags_overlap")
NARROW_REVISION = "0006_narrow_tag_operators"


def _fill(conn: psycopg.Connection[Any]) -> None:
    conn.execute(
        """
        INSERT INTO entries (owner, body, tags, language, content_hash)
        SELECT CASE WHEN i % 2 = 0 THEN 'alice' ELSE 'bob' END,
               'note ' || i || CASE WHEN i % 97 = 0 THEN ' about the harbour' ELSE '' END,
               ARRAY['t' || (i % 50)] || CASE WHEN i % 3 = 0 THEN ARRAY['t' || (i % 7)] ELSE '{}' END,
               'english', 'sha256:' || repeat('0', 64)
        FROM generate_series(1, 4000) AS i
        """
    )


def _leave_only_gin(conn: psycopg.Connection[Any]) -> None:
    # Leave the planner only two ways in: a sequential scan (disabled by the caller) or the
    # GIN index, which it may use under the policy only if the operator is LEAKPROOF.
    for index in (
        "entries_owner_created",
        "entries_owner_kind",
        "entries_owner_source",
        "entries_owner_kind_folded",
        "entries_owner_source_folded",
        "entries_owner_hash",
        "entries_pending",
    ):
        conn.execute(f"DROP INDEX {index}")
    conn.execute("ALTER TABLE entries DROP CONSTRAINT entries_pkey CASCADE")  # and the link keys
    conn.execute("ANALYZE entries")


def _plan(conn: psycopg.Connection[Any], statement: str, params: dict[str, Any]) -> str:
    return "\n".join(r[0] for r in conn.execute("EXPLAIN " + statement, params).fetchall())


def test_gin_indexes_serve_the_restricted_role(db_url: str) -> None:
    with psycopg.connect(db_url) as conn:
        _fill(conn)
        _leave_only_gin(conn)
        conn.commit()
        conn.execute(f"SET ROLE {APP_ROLE}")
        conn.execute("SELECT set_config('pgrecall.owner', 'alice', false)")
        conn.execute("SET enable_seqscan = off")
        for name, (index, statement, params) in QUERIES.items():
            plan = _plan(conn, statement, params)
            assert f"Index Scan on {index}" in plan, (name, plan)
        hits = conn.execute(QUERIES["text search"][1]).fetchall()
        assert len(hits) == len([i for i in range(1, 4001) if i % 97 == 0 and i % 2 == 0])
        # Through the index, still only the owner's rows, and the same rows as the core operators.
        for name in ("search tags_all", "search tags_any"):
            _, statement, params = QUERIES[name]
            got = {r[0] for r in conn.execute(statement, params).fetchall()}
            core = statement.replace("|@>", "@>").replace("|&&", "&&")
            conn.execute("SET enable_seqscan = on")
            expected = {r[0] for r in conn.execute(core, params).fetchall()}
            conn.execute("SET enable_seqscan = off")
            assert got == expected and got, name
            owners = conn.execute(
                "SELECT DISTINCT owner FROM entries WHERE id = ANY(%s)", (list(got),)
            ).fetchall()
            assert owners == [("alice",)]


def _leakproof(conn: psycopg.Connection[Any], names: tuple[str, ...]) -> dict[str, bool]:
    rows = conn.execute(
        "SELECT proname, bool_or(proleakproof) FROM pg_proc WHERE proname = ANY(%s) GROUP BY proname",
        (list(names),),
    ).fetchall()
    return {r[0]: r[1] for r in rows}


def test_only_text_array_functions_are_leakproof(db_url: str) -> None:
    with psycopg.connect(db_url) as conn:
        assert _leakproof(conn, BROAD) == {"arraycontains": False, "arrayoverlap": False}
        assert _leakproof(conn, NARROW) == {"pgrecall_tags_contain": True, "pgrecall_tags_overlap": True}
        signatures = conn.execute(
            "SELECT DISTINCT pg_get_function_identity_arguments(oid) FROM pg_proc WHERE proname = ANY(%s)",
            (list(NARROW),),
        ).fetchall()
        assert signatures == [("text[], text[]",)]


def test_operators_agree_with_core_ones(db_url: str) -> None:
    values = ["{}", "{a}", "{a,b}", "{b,c,c}", "{A}", '{"a b",c}']
    with psycopg.connect(db_url) as conn:
        for left in values:
            for right in values:
                row = conn.execute(
                    "SELECT %s::text[] |@> %s::text[] = %s::text[] @> %s::text[], "
                    "%s::text[] |&& %s::text[] = %s::text[] && %s::text[]",
                    (left, right, left, right, left, right, left, right),
                ).fetchone()
                assert row == (True, True), (left, right)
        assert conn.execute("SELECT NULL::text[] |@> '{a}'::text[]").fetchone() == (None,)


def test_downgrade_restores_the_broad_marks(db_url: str) -> None:
    with psycopg.connect(db_url) as conn:
        _fill(conn)
    schema.downgrade(db_url, "0005_row_level_security")
    with psycopg.connect(db_url) as conn:
        assert _leakproof(conn, BROAD) == {"arraycontains": True, "arrayoverlap": True}
        assert _leakproof(conn, NARROW) == {}
        row = conn.execute("SELECT indexdef FROM pg_indexes WHERE indexname = 'entries_tags_gin'").fetchone()
        assert row is not None and row[0].endswith("USING gin (tags)")
    schema.upgrade(db_url, "head")
    with psycopg.connect(db_url) as conn:
        assert _leakproof(conn, BROAD) == {"arraycontains": False, "arrayoverlap": False}
        count = conn.execute("SELECT count(*) FROM entries WHERE tags |@> '{t7}'").fetchone()
        assert count == (80,)


@pytest.fixture
def migrator(empty_db_url: str) -> Any:
    """A login role that may create objects in the empty database's public schema, not a superuser."""
    role = f"pgrecall_migrator_{os.getpid()}"
    with psycopg.connect(empty_db_url, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN NOSUPERUSER")
    yield role, empty_db_url.replace("postgres@", f"{role}@", 1)
    with psycopg.connect(empty_db_url, autocommit=True) as conn:
        conn.execute(f"DROP OWNED BY {role}")
        conn.execute(f"DROP ROLE {role}")


def test_non_superuser_migration_falls_back_to_plain_sql_operators(empty_db_url: str, migrator: Any) -> None:
    role, url = migrator
    schema.upgrade(empty_db_url, "0005_row_level_security")
    with psycopg.connect(empty_db_url) as conn:
        _fill(conn)
        conn.execute(f"GRANT CREATE ON SCHEMA public TO {role}")
        conn.execute(f"GRANT SELECT, UPDATE ON alembic_version TO {role}")
    # Up to 0006 only: later revisions alter the entries table, which only its owner may do.
    schema.upgrade(url, NARROW_REVISION)
    with psycopg.connect(empty_db_url) as conn:
        # Nothing LEAKPROOF was added, and the broad marks of 0005 (set as superuser) stay
        # for a superuser to remove: a plain role may not change them.
        assert _leakproof(conn, NARROW) == {"pgrecall_tags_contain": False, "pgrecall_tags_overlap": False}
        assert _leakproof(conn, BROAD) == {"arraycontains": True, "arrayoverlap": True}
        # The SQL body is inlined into the core operator: unrestricted queries keep the index.
        conn.execute("SET enable_seqscan = off")
        statement, params = TAGS_ALL_0006, {"f_tags_all": ["t3"]}
        assert "Index Scan on entries_tags_gin" in _plan(conn, statement, params)
        conn.execute(f"SET ROLE {APP_ROLE}")
        conn.execute("SELECT set_config('pgrecall.owner', 'alice', false)")
        assert len(conn.execute(statement, params).fetchall()) == 95
    schema.downgrade(url, "0005_row_level_security")
    with psycopg.connect(empty_db_url) as conn:
        assert _leakproof(conn, NARROW) == {}
    # The repair the migration's notice names: a superuser steps back and up again.
    schema.upgrade(url, NARROW_REVISION)
    schema.downgrade(empty_db_url, "0005_row_level_security")
    schema.upgrade(empty_db_url, "head")
    with psycopg.connect(empty_db_url) as conn:
        assert _leakproof(conn, NARROW) == {"pgrecall_tags_contain": True, "pgrecall_tags_overlap": True}
        assert _leakproof(conn, BROAD) == {"arraycontains": False, "arrayoverlap": False}
