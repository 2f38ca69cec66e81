"""What `pgrecall migrate citus` checks before changing anything: the Citus version and the privileges of
the connecting role, decided from the state a real PostgreSQL reports (a role without superuser on the
embedded server; the per-worker query is the one run through run_command_on_workers on a cluster)."""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator

import psycopg
import pytest
from psycopg import sql
from psycopg.rows import dict_row

from pgrecall.config import Settings
from pgrecall.db import citus, citus_sql
from pgrecall.db.citus_checks import (
    TESTED_CITUS,
    CitusVersion,
    NodeState,
    missing_on_coordinator,
    missing_on_worker,
    node_state,
    parse_citus_version,
    version_problem,
)
from pgrecall.errors import ConfigurationError
from tests.helpers.subprocess_server import run_pgrecall, server_env

_roles = itertools.count()


def test_citus_version_text_is_parsed() -> None:
    text = "Citus 14.0.1 on x86_64-pc-linux-gnu, compiled by gcc (Debian 12.2.0-14) 12.2.0, 64-bit"
    assert parse_citus_version(text) == CitusVersion(14, 0, 1, "")
    assert parse_citus_version("Citus 15.0devel on x86_64-pc-linux-gnu") == CitusVersion(15, 0, 0, "devel")
    assert parse_citus_version("Citus 14.0 on x") == CitusVersion(14, 0, 0, "")
    with pytest.raises(ConfigurationError, match="cannot read the Citus version"):
        parse_citus_version("PostgreSQL 18.1")


def test_only_the_tested_releases_pass() -> None:
    low, high = TESTED_CITUS
    assert version_problem(CitusVersion(*low, 0, "")) is None  # the low end: 14.0.0
    assert version_problem(CitusVersion(*high, 1, "")) is None  # the high end: 14.0.1, the proof's
    assert "outside the releases pgrecall is tested with (14.0)" in str(
        version_problem(CitusVersion(13, 2, 0, ""))
    )
    assert "outside" in str(version_problem(CitusVersion(high[0], high[1] + 1, 0, "")))
    assert "development build" in str(version_problem(CitusVersion(15, 0, 0, "devel")))


def test_the_version_is_read_with_citus_version(db_url: str) -> None:
    # No Citus here: a function of the same name stands in, so the statement itself runs for real.
    with psycopg.connect(db_url, autocommit=True, row_factory=dict_row) as conn:
        conn.execute(
            "CREATE FUNCTION citus_version() RETURNS text LANGUAGE sql AS $$ SELECT 'Citus 13.0.3 on x' $$"
        )
        row = conn.execute(citus_sql.SQL_CITUS_VERSION).fetchone()
    assert row is not None
    assert version_problem(parse_citus_version(str(row["version"]))) is not None


@pytest.fixture
def limited_role(db_url: str) -> Iterator[str]:
    """A login role without superuser, CREATEROLE or any ownership (as on a managed service)."""
    name = f"t_limited_{os.getpid()}_{next(_roles)}"
    with psycopg.connect(db_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN NOSUPERUSER NOCREATEROLE").format(sql.Identifier(name)))
    yield name
    with psycopg.connect(db_url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(name)))


def _state(url: str, node: str, user: str | None = None) -> NodeState:
    with psycopg.connect(
        url, autocommit=True, row_factory=dict_row, **({"user": user} if user else {})
    ) as conn:
        return node_state(conn, node)


def test_a_superuser_coordinator_at_head_lacks_nothing(db_url: str) -> None:
    state = _state(db_url, "coordinator")
    assert state.superuser and state.tag_opclass and state.leakproof
    assert missing_on_coordinator(state) == []


def test_a_role_without_ownership_is_told_what_it_lacks_on_the_coordinator(
    db_url: str, limited_role: str
) -> None:
    state = _state(db_url, "coordinator", limited_role)
    assert not state.superuser
    problems = missing_on_coordinator(state)
    assert len(problems) == 3, problems
    assert f"coordinator: {limited_role} does not own the database" in problems[0]
    assert "does not own api_tokens, documents, entries, entry_links, lexical_df" in problems[1]
    assert "pgrecall_set_local" in problems[2]


def test_a_bare_worker_needs_a_superuser_for_what_the_coordinator_has(
    db_url: str, empty_db_url: str, limited_role: str
) -> None:
    coordinator = _state(db_url, "coordinator")
    worker = _state(empty_db_url, "w1:5432", limited_role)
    assert not (worker.leakproof or worker.tag_functions or worker.tag_opclass or worker.prepared)
    problems = missing_on_worker(worker, coordinator)
    assert [p.split(":", 2)[2].split(" (")[0].strip() for p in problems] == [
        "pgrecall_app may not log in and " + limited_role + " may not change that",
        "ts_match_vq is not LEAKPROOF and only a superuser can mark it",
        "the tag functions, operators and operator class pgrecall_tags_ops are missing; the functions are "
        "LANGUAGE internal and only a superuser can create them and the operator class",
    ]
    assert all(p.startswith("w1:5432: ") for p in problems)
    # The same bare node as a superuser: everything can be done there.
    assert missing_on_worker(_state(empty_db_url, "w1:5432"), coordinator) == []
    # A coordinator migrated without those (no LEAKPROOF, no operator class) asks nothing of workers
    # but the login; migrate citus refuses it on the coordinator side instead.
    plain = NodeState(**{**coordinator.__dict__, "leakproof": False, "tag_opclass": False})
    assert len(missing_on_worker(worker, plain)) == 1
    assert "plain-SQL form of a migration run without superuser" in missing_on_coordinator(plain)[0]


def test_steps_a_provider_has_done_need_no_privilege_again(
    db_url: str, empty_db_url: str, limited_role: str
) -> None:
    coordinator = _state(db_url, "coordinator")
    with psycopg.connect(empty_db_url, autocommit=True) as conn:
        # What `--node-sql` prints, run by a superuser (the login step left out: the role is shared
        # by this test server's other databases).
        for statement in (citus_sql.WORKER_LEAKPROOF, citus_sql.WORKER_TAG_OPERATORS):
            conn.execute(statement)
        conn.execute(
            sql.SQL("GRANT pgrecall_app TO {} WITH ADMIN OPTION").format(sql.Identifier(limited_role))
        )
        conn.execute(sql.SQL("ALTER ROLE {} CREATEROLE").format(sql.Identifier(limited_role)))
    worker = _state(empty_db_url, "w1:5432", limited_role)
    assert worker.prepared and worker.leakproof and worker.app_admin
    assert missing_on_worker(worker, coordinator) == []
    for statement in ("WORKER_LEAKPROOF", "WORKER_TAG_OPERATORS", "CREATE EXTENSION IF NOT EXISTS vector"):
        assert getattr(citus_sql, statement, statement).strip().splitlines()[0] in citus.node_sql()


def test_check_node_says_a_node_is_not_prepared(settings: Settings, empty_db_url: str, db_url: str) -> None:
    env = server_env(settings)
    bare = run_pgrecall(env, "migrate", "citus", "--check-node", empty_db_url)
    assert bare.returncode == 1 and "Traceback" not in bare.stderr
    assert "is not prepared: the operator class pgrecall_tags_ops is missing" in bare.stderr
    assert "--prepare-node URL" in bare.stderr
    ready = run_pgrecall(env, "migrate", "citus", "--check-node", db_url)
    assert ready.returncode == 0, ready.stderr
    assert "prepared (citus_add_node can copy pgrecall's tables there)" in ready.stdout
