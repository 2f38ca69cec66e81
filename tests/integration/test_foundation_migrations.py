"""Schema by Alembic only: round trips on a database holding rows, and the operator CLI."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from pgrecall.app import App
from pgrecall.config import Settings
from pgrecall.db import migrate as schema
from pgrecall.errors import SchemaNotAtHeadError
from tests.helpers.cli import Ran, run_here

FIRST = "0001_entries"
INSERT = """
INSERT INTO entries (body, title, tags, language, content_hash)
VALUES (%s, 'title', '{t}', 'english'::regconfig, 'sha256:' || repeat('0', 64))
"""


def _count(url: str) -> int:
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT count(*) FROM entries").fetchone()
        assert row is not None
        return int(row[0])


def _tables(url: str) -> set[str]:
    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'").fetchall()
    return {r[0] for r in rows}


def test_round_trip_with_rows(empty_db_url: str) -> None:
    url = empty_db_url
    schema.upgrade(url, FIRST)
    with psycopg.connect(url) as conn:
        for i in range(20):
            conn.execute(INSERT, (f"retirement savings plan number {i}",))
    # Later revisions must carry rows written before them.
    schema.upgrade(url, "head")
    assert schema.current_revision(url) == schema.head_revision()
    assert _count(url) == 20
    with psycopg.connect(url) as conn:
        conn.execute(INSERT, ("one more row at head",))
    schema.downgrade(url, "base")
    assert schema.current_revision(url) is None
    assert _tables(url) <= {"alembic_version"}
    schema.upgrade(url, "head")
    assert _count(url) == 0
    with psycopg.connect(url) as conn:
        conn.execute(INSERT, ("works again after the round trip",))
    assert _count(url) == 1


def test_each_revision_steps_down_and_up_with_rows(empty_db_url: str) -> None:
    url = empty_db_url
    revisions = [rev for rev, _, _ in schema.history()]
    schema.upgrade(url, "head")
    with psycopg.connect(url) as conn:
        conn.execute(INSERT, ("a row present during every step",))
    for rev in reversed(revisions[1:]):
        schema.downgrade(url, "-1")
        assert schema.current_revision(url) != rev
        assert _count(url) == 1
    schema.upgrade(url, "head")
    assert _count(url) == 1


def _hnsw_options(url: str) -> set[str]:
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT DISTINCT unnest(reloptions) FROM pg_class WHERE relname LIKE 'entries_embedding_hnsw_%'"
        ).fetchall()
    return {r[0] for r in rows}


@pytest.mark.parametrize(
    ("before", "after", "options_before", "options_after"),
    [
        (
            "0012_transaction_settings",
            "0013_hnsw_build",
            {"m=16", "ef_construction=128"},
            {"m=16", "ef_construction=256"},
        ),
        (
            "0013_hnsw_build",
            "0014_hnsw_degree",
            {"m=16", "ef_construction=256"},
            {"m=24", "ef_construction=256"},
        ),
    ],
)
def test_hnsw_indexes_are_rebuilt_and_back(
    empty_db_url: str, before: str, after: str, options_before: set[str], options_after: set[str]
) -> None:
    url = empty_db_url
    schema.upgrade(url, before)
    with psycopg.connect(url) as conn:
        conn.execute(INSERT, ("a row the rebuilt index must hold",))
    assert _hnsw_options(url) == options_before
    schema.upgrade(url, after)
    assert _hnsw_options(url) == options_after
    with psycopg.connect(url) as conn:
        conn.execute("SET enable_seqscan = off")
        plan = "\n".join(
            r[0]
            for r in conn.execute(
                "EXPLAIN SELECT id FROM entries WHERE embedding_dim = 384 "
                "ORDER BY embedding::vector(384) <=> %s::vector(384) LIMIT 5",
                ("[" + ",".join(["0.05"] * 384) + "]",),
            )
        )
    assert "entries_embedding_hnsw_384" in plan
    schema.downgrade(url, before)
    assert _hnsw_options(url) == options_before
    assert _count(url) == 1


def test_servers_starting_together_upgrade_once_and_all_open(empty_db_url: str) -> None:
    # Three windows start at once after an upgrade of pgrecall, each its own process on the same
    # database; 0014 rebuilds the HNSW index, long enough that all three read the old revision before
    # the first commits. Each must end at head: those that lose the race wait and find nothing left
    # to do (they used to fail — a deadlock, or Alembic finding the version row already moved — and
    # their server answered every tool call with "database: not available").
    url = empty_db_url
    schema.upgrade(url, "0013_hnsw_build")
    with psycopg.connect(url) as conn:
        conn.execute(
            "INSERT INTO entries (body, language, content_hash, embedding, embedding_model, embedding_dim) "
            "SELECT 'row ' || i, 'english', 'sha256:' || lpad(to_hex(i), 64, '0'), "
            "(SELECT array_agg(random())::real[] FROM generate_series(1, 384) WHERE i > 0)::vector, "
            "'test-model', 384 FROM generate_series(1, 3000) AS i"
        )
    # Each process imports first, then waits for its go line, so that all three ask at once.
    code = (
        "import sys; from pgrecall.db import migrate as m; sys.stdin.readline(); "
        "m.require_head(sys.argv[1], embedded=True)"
    )
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code, url],
            stdin=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    try:
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
        errors = [proc.communicate(timeout=240)[1] for proc in procs]
    finally:
        for proc in procs:
            proc.kill()
    assert [proc.returncode for proc in procs] == [0, 0, 0], [err.strip().splitlines()[-1:] for err in errors]
    assert schema.current_revision(url) == schema.head_revision()
    assert _hnsw_options(url) == {"m=24", "ef_construction=256"}
    assert _count(url) == 3000


def test_external_database_not_at_head_is_refused(empty_db_url: str, tmp_path: Path) -> None:
    settings = Settings(database_url=empty_db_url, home=tmp_path)
    with pytest.raises(SchemaNotAtHeadError) as info:
        App(settings, embedder=None).open()
    message = str(info.value)
    assert "pgrecall migrate upgrade head" in message and "empty database" in message
    assert schema.current_revision(empty_db_url) is None  # nothing was created behind the operator's back


def _cli(*args: str, url: str | None = None, home: Path | None = None) -> Ran:
    # In this process: these tests are about what `pgrecall migrate` answers, not about its process.
    env = {k: v for k, v in os.environ.items() if not k.startswith("PGRECALL_")}
    if url:
        env["PGRECALL_DATABASE_URL"] = url
    if home:
        env["PGRECALL_HOME"] = str(home)
    return run_here(env, *args)


def test_migrate_cli_on_url(empty_db_url: str) -> None:
    url = empty_db_url
    check = _cli("migrate", "check", url=url)
    assert check.returncode == 1
    assert "PGRECALL_DATABASE_URL=<url> pgrecall migrate upgrade head" in check.stderr
    assert "empty" in _cli("migrate", "current", url=url).stdout
    up = _cli("migrate", "upgrade", FIRST, url=url)
    assert up.returncode == 0, up.stderr
    assert f"empty -> {FIRST}" in up.stdout
    at_head = schema.head_revision() == FIRST
    assert _cli("migrate", "check", url=url).returncode == (0 if at_head else 1)
    assert _cli("migrate", "upgrade", url=url).returncode == 0
    assert _cli("migrate", "check", url=url).returncode == 0
    assert "at head" in _cli("migrate", "current", url=url).stdout
    history = _cli("migrate", "history", url=url).stdout
    assert f"base -> {FIRST}" in history
    down = _cli("migrate", "downgrade", "base", url=url)
    assert down.returncode == 0 and "-> base" in down.stdout
    stamp = _cli("migrate", "stamp", "head", url=url)
    assert stamp.returncode == 0 and schema.current_revision(url) == schema.head_revision()


def test_migrate_cli_reports_unreachable_database(tmp_path: Path) -> None:
    result = _cli("migrate", "current", url=f"postgresql://nobody@/none?host={tmp_path}")
    assert result.returncode == 1
    assert result.stderr.startswith("pgrecall: cannot connect to PostgreSQL")


def _has_index(url: str, name: str) -> bool:
    with psycopg.connect(url) as conn:
        return conn.execute("SELECT 1 FROM pg_indexes WHERE indexname = %s", (name,)).fetchone() is not None


def test_the_id_tail_index_comes_and_goes(empty_db_url: str) -> None:
    url = empty_db_url
    schema.upgrade(url, "0016_id_tail_index")
    assert _has_index(url, "entries_id_tail")
    schema.downgrade(url, "0015_documents")
    assert not _has_index(url, "entries_id_tail")


def test_the_head_check_logs_nothing_below_warning(db_url: str, caplog: pytest.LogCaptureFixture) -> None:
    # `serve` checks the schema at every start; Alembic's INFO lines there told nothing.
    with caplog.at_level(logging.INFO):
        schema.require_head(db_url, embedded=False)
        assert schema.current_revision(db_url) == schema.head_revision()
    assert [r.getMessage() for r in caplog.records if r.name.startswith("alembic")] == []
    assert logging.getLogger("alembic").level == logging.NOTSET  # put back as it was
