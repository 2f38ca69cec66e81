"""Dotted names found by their parts (migration 0019: indexed whole and as parts)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import psycopg

from pgrecall.app import App
from pgrecall.db import migrate as schema
from pgrecall.domain.text import DOTTED_NAME
from pgrecall.services.search import SearchOptions
from tests.helpers.search import lexical_hits
from tests.integration.test_cli_error_lines import _cli, _one_line_failure
from tests.integration.test_search_stats import df_of, mismatches

LEXICAL = SearchOptions(mode="lexical")
SMTP = "SMTP.ehlo_or_helo_if_needed() calls ehlo() and or helo() if there has been none in this session."
CATALOG = "Every table has a row in pg_catalog.pg_class; its relkind tells tables from indexes."
CONFIG = "Set shared_buffers in postgresql.conf and restart the server."
RELEASE = "Version 3.11 of the interpreter, e.g. for the U.S. mirror, is packaged as python3.11."
LEXEMES = "SELECT array_agg(t.lexeme ORDER BY t.lexeme) FROM unnest(to_tsvector('english', %s)) AS t"


def test_a_qualified_name_finds_the_page_that_names_it_shorter(app: App) -> None:
    ids = {
        name: str(app.entries.add("default", text=text).entry.id)
        for name, text in (("smtp", SMTP), ("catalog", CATALOG), ("config", CONFIG))
    }
    # The question qualifies the class by its module; the page does not (and the other way round).
    assert lexical_hits(app, "smtplib.SMTP") == [ids["smtp"]]
    assert lexical_hits(app, "pg_catalog") == [ids["catalog"]]
    assert lexical_hits(app, "which conf file") == [ids["config"]]
    # The whole name stays a term of its own: the entry that writes it whole ranks first.
    parts_only = str(app.entries.add("default", text="PostgreSQL reads every conf file at start.").entry.id)
    assert lexical_hits(app, "postgresql.conf") == [ids["config"], parts_only]


def test_numbers_and_abbreviations_keep_their_dots(db_url: str) -> None:
    with psycopg.connect(db_url) as conn:
        row = conn.execute(LEXEMES.replace("%s", "pgrecall_lexical_text(%s)"), (RELEASE,)).fetchone()
        plain = conn.execute(LEXEMES, (RELEASE,)).fetchone()
    assert row is not None and plain is not None
    # 3.11, e.g., U.S. and python3.11 read as before: no part of two letters follows their dots.
    assert row == plain
    assert "3.11" in row[0]


def test_statistics_stay_exact_with_parts(app: App, db_url: str) -> None:
    entry = app.entries.add("default", text=SMTP).entry
    assert df_of(db_url, "smtp") == 1 and df_of(db_url, "smtp.ehlo") == 1
    app.entries.update("default", entry.id, text=CATALOG)
    assert df_of(db_url, "smtp") == 0 and df_of(db_url, "pg_class") == 0 and df_of(db_url, "class") == 1
    assert mismatches(db_url) == (0, 0)


def test_migration_splits_existing_entries_and_back(empty_db_url: str) -> None:
    url = empty_db_url
    schema.upgrade(url, "0018_huge_store_ef_search")
    insert = (
        "INSERT INTO entries (body, content_hash, language) VALUES (%s, 'sha256:' || repeat('0', 64), %s)"
    )
    with psycopg.connect(url) as conn:
        conn.execute(insert, (SMTP, "english"))
        conn.execute(insert, (RELEASE, "english"))
        release_before = conn.execute("SELECT tsv::text FROM entries WHERE body = %s", (RELEASE,)).fetchone()
    assert df_of(url, "smtp") == 0 and df_of(url, "smtp.ehlo") == 1
    schema.upgrade(url, "head")
    assert df_of(url, "smtp") == 1 and df_of(url, "smtp.ehlo") == 1 and mismatches(url) == (0, 0)
    with psycopg.connect(url) as conn:
        release_after = conn.execute("SELECT tsv::text FROM entries WHERE body = %s", (RELEASE,)).fetchone()
    assert release_after == release_before  # text without a dotted name keeps its exact tsv
    schema.downgrade(url, "0018_huge_store_ef_search")
    assert df_of(url, "smtp") == 0 and mismatches(url) == (0, 0)
    schema.upgrade(url, "head")
    assert df_of(url, "smtp") == 1 and mismatches(url) == (0, 0)


def test_the_parts_of_a_dotted_name_are_marked(app: App) -> None:
    app.entries.add("default", text=SMTP)
    result = app.search.search("default", "smtplib.SMTP", top_k=1, options=LEXICAL)
    terms = result.hits[0].breakdown.matched_terms
    (pieces,) = app.highlighter.pieces([(SMTP, "english", terms)])
    assert "".join(p.text for p in pieces) == SMTP  # the dots stay in the text shown
    assert [p.text for p in pieces if p.matched] == ["SMTP"]


def test_the_index_and_the_highlighter_agree_on_dotted_names() -> None:
    path = Path(schema.__file__).parent / "migrations" / "versions" / "0019_dotted_names.py"
    spec = importlib.util.spec_from_file_location("dotted_names_0019", path)
    assert spec is not None and spec.loader is not None
    migration = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(migration)
    assert DOTTED_NAME.pattern == migration._DOTTED


def test_a_citus_distributed_store_is_told_how_to_upgrade(empty_db_url: str, tmp_path: Path) -> None:
    # Citus refuses SET EXPRESSION on its tables; its catalog is imitated here (no Citus binaries).
    url = empty_db_url
    schema.upgrade(url, "0018_huge_store_ef_search")
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SET allow_system_table_mods = on")
        conn.execute("CREATE TABLE pg_catalog.pg_dist_partition (logicalrelid regclass)")
        conn.execute("INSERT INTO pg_catalog.pg_dist_partition VALUES ('entries')")
    line = _one_line_failure(_cli(tmp_path / "home", "migrate", "upgrade", url=url))
    assert "distributed by Citus" in line and "pgrecall migrate citus --undo, then" in line
    assert schema.current_revision(url) == "0018_huge_store_ef_search"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DELETE FROM pg_catalog.pg_dist_partition")
    schema.upgrade(url, "head")  # plain tables again: it runs
    assert schema.current_revision(url) == "0019_dotted_names"
