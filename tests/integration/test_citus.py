"""Scaling out on Citus: what runs everywhere (the refusal, the Citus-safe statistics functions on a
single server) and, where PostgreSQL binaries with Citus are given (PGRECALL_CITUS_PG_BIN), a real
coordinator with two workers."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import psycopg
import pytest
from psycopg.rows import dict_row

from pgrecall.app import App
from pgrecall.config import Settings
from pgrecall.db import citus, citus_sql
from pgrecall.domain.entries import EntryFilters
from pgrecall.services.retrieval import RetrievalRequest
from pgrecall.services.search import SearchOptions
from tests.helpers.subprocess_server import run_pgrecall, server_env

CITUS_BIN = os.environ.get("PGRECALL_CITUS_PG_BIN")
# As root the servers run as this existing user (initdb refuses root; none is created).
CITUS_RUN_AS = os.environ.get("PGRECALL_CITUS_RUN_AS")
REPO = Path(__file__).resolve().parents[2]
BENCHMARKS = REPO / "benchmarks"


def _wrong(url: str) -> int:
    with psycopg.connect(url, row_factory=dict_row) as conn:
        row = conn.execute(citus_sql.SQL_STATISTICS_DRIFT).fetchone()
    assert row is not None
    return int(row["df_wrong"]) + int(row["docs_wrong"])


def test_migrate_citus_refuses_a_server_without_citus(settings: Settings) -> None:
    result = run_pgrecall(server_env(settings), "migrate", "citus")
    assert result.returncode == 1
    assert "the database has no citus extension" in result.stderr
    assert "Traceback" not in result.stderr


def test_the_check_refuses_to_overwrite_a_result_before_starting_anything(tmp_path: Path) -> None:
    check = [sys.executable, str(BENCHMARKS / "citus_check.py"), "--pg-bin", str(tmp_path / "no-such-bin")]
    committed = subprocess.run([*check, "--json", str(BENCHMARKS / "citus_check.json")],
                               capture_output=True, text=True, timeout=120, cwd=REPO)  # fmt: skip
    assert committed.returncode == 2
    assert "is a committed result (tracked by git)" in committed.stderr and "--force" in committed.stderr
    existing = tmp_path / "mine.json"
    existing.write_text("{}")
    again = subprocess.run([*check, "--json", str(existing)], capture_output=True, text=True, timeout=120)
    assert again.returncode == 2 and f"{existing} exists" in again.stderr
    assert existing.read_text() == "{}"


def test_the_cluster_helper_creates_no_user(monkeypatch: pytest.MonkeyPatch) -> None:
    sys.path.insert(0, str(BENCHMARKS))
    from citus_cluster import ClusterError, server_user

    monkeypatch.setattr(os, "geteuid", lambda: 0)
    with pytest.raises(ClusterError, match=r"initdb refuses to run as root.*useradd"):
        server_user(None)
    with pytest.raises(ClusterError, match="no user 'pgrecall-no-such-user'"):
        server_user("pgrecall-no-such-user")
    assert server_user("root") == "root"
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert server_user(None) is None


def test_set_local_sets_only_pgrecall_settings(db_url: str) -> None:
    with psycopg.connect(db_url, row_factory=dict_row) as conn:
        conn.execute("SELECT pgrecall_set_local('pgrecall.owner', %s)", ("o'brien",))
        row = conn.execute("SELECT current_setting('pgrecall.owner') AS owner").fetchone()
        assert row == {"owner": "o'brien"}
        with pytest.raises(psycopg.errors.RaiseException, match="is not a setting pgrecall sets"):
            conn.execute("SELECT pgrecall_set_local('role', 'postgres')")


def test_the_citus_set_local_carries_the_propagation_setting_per_transaction(db_url: str) -> None:
    with psycopg.connect(db_url, autocommit=True) as conn:
        conn.execute(citus_sql.SET_LOCAL)
    # A session that never got the database-level setting (opened before `migrate citus`).
    with psycopg.connect(db_url, row_factory=dict_row) as conn:
        conn.execute("SELECT pgrecall_set_local('pgrecall.owner', %s)", ("ann",))
        row = conn.execute(
            "SELECT current_setting('citus.propagate_set_commands') AS propagate, "
            "current_setting('pgrecall.owner') AS owner"
        ).fetchone()
        assert row == {"propagate": "local", "owner": "ann"}
        conn.commit()
        after = conn.execute(
            "SELECT coalesce(current_setting('citus.propagate_set_commands', true), '') AS propagate"
        ).fetchone()
        assert after is not None and after["propagate"] != "local"  # transaction-local, like the owner
        with pytest.raises(psycopg.errors.RaiseException, match="is not a setting pgrecall sets"):
            conn.execute("SELECT pgrecall_set_local('citus.propagate_set_commands', 'none')")


def test_the_citus_safe_statistics_functions_are_exact_on_a_single_server(settings: Settings) -> None:
    assert settings.database_url is not None
    url = settings.database_url.get_secret_value()
    with psycopg.connect(url, autocommit=True) as conn:
        for function in (citus_sql.COMPACT_OWNER, citus_sql.COMPACT_ALL, citus_sql.STATS_TRIGGER,
                         citus_sql.TRUNCATE_TRIGGER, citus_sql.SET_LOCAL):  # fmt: skip
            conn.execute(function)
    with App(settings, embedder=None, restricted=True) as app:
        ids = []
        for i in range(300):
            owner = ("ann", "ben")[i % 2]
            text = (
                f"Note {i} on {('wings', 'libraries', 'heating', 'Winterreifen im Oktober')[i % 4]} and drag."
            )
            ids.append((owner, app.entries.add(owner, text=text).entry.id))
        for owner, ident in ids[:40]:
            app.entries.update(owner, ident, text="Rewritten about lift and the boundary layer.")
        for owner, ident in ids[40:80]:
            app.entries.delete(owner, ident)
        for owner, ident in ids[40:60]:
            app.entries.restore(owner, ident)
        assert _wrong(url) == 0
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("SELECT pgrecall_lexical_compact()")
            left = conn.execute("SELECT count(*) FROM lexical_df_delta").fetchone()
        assert left == (0,) and _wrong(url) == 0
        found = app.retrieval.retrieve(
            "ann", RetrievalRequest(query="drag on wings", options=SearchOptions(mode="lexical"))
        )
        assert found.items and all(r.entry.owner == "ann" for r in found.items)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("TRUNCATE entries CASCADE")
        left = conn.execute(
            "SELECT (SELECT count(*) FROM lexical_df) + (SELECT count(*) FROM lexical_docs) + "
            "(SELECT count(*) FROM lexical_df_delta) + (SELECT count(*) FROM lexical_docs_delta)"
        ).fetchone()
    assert left == (0,)


def test_statistics_are_rebuilt_owner_by_owner_while_others_write_and_search(settings: Settings) -> None:
    assert settings.database_url is not None
    url = settings.database_url.get_secret_value()
    owners = [f"o{i}" for i in range(7)]
    with psycopg.connect(url, autocommit=True) as conn:
        # Installed by migrate citus before it rebuilds (0002's MERGE fails on a recount's insert).
        for function in (citus_sql.COMPACT_OWNER, citus_sql.COMPACT_ALL, citus_sql.STATS_TRIGGER):
            conn.execute(function)
    with App(settings, embedder=None, restricted=True) as app:
        for i in range(70):
            app.entries.add(owners[i % 7], text=f"Note {i} on the boundary layer and drag of wings.")
        with psycopg.connect(url, autocommit=True) as conn:
            # Wrong counts to be repaired: a lost row, a stray owner, a double count.
            conn.execute("DELETE FROM lexical_df WHERE owner = 'o1' AND lexeme = 'drag'")
            conn.execute("INSERT INTO lexical_docs VALUES ('ghost', 'english', 3, 9)")
            conn.execute("UPDATE lexical_docs SET n_docs = n_docs * 2 WHERE owner = 'o2'")
        assert _wrong(url) > 0
        # One batch of o0's rebuild left open: other owners' writes and o0's searches go on.
        with psycopg.connect(url, row_factory=dict_row) as held:
            held.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            for statement in citus_sql.REBUILD_OWNERS:
                held.execute(statement, {"owners": ["o0"]})
            app.entries.add("o3", text="Written while o0's statistics are being rebuilt.")
            found = app.retrieval.retrieve(
                "o0", RetrievalRequest(query="boundary layer", options=SearchOptions(mode="lexical"))
            )
            assert found.items and all(r.entry.owner == "o0" for r in found.items)
            held.commit()
        with psycopg.connect(url, autocommit=True, row_factory=dict_row) as conn:
            assert citus.rebuild_statistics(conn, batch=3) == 8  # seven owners and the stray one
        assert _wrong(url) == 0
        # Writes of the owners being rebuilt, from other threads, during a rebuild: exact afterwards.
        errors: list[BaseException] = []

        def write(owner: str) -> None:
            try:
                for i in range(15):
                    entry = app.entries.add(
                        owner, text=f"Concurrent {owner} {i} about lift and heating."
                    ).entry
                    if i % 3 == 0:
                        app.entries.delete(owner, entry.id)
            except BaseException as exc:  # reported below
                errors.append(exc)

        threads = [threading.Thread(target=write, args=(owner,)) for owner in owners[:3]]
        for thread in threads:
            thread.start()
        with psycopg.connect(url, autocommit=True, row_factory=dict_row) as conn:
            for _ in range(3):
                citus.rebuild_statistics(conn, batch=2)
                conn.execute("SELECT pgrecall_lexical_compact()")
        for thread in threads:
            thread.join()
        assert errors == []
        assert _wrong(url) == 0


@pytest.mark.skipif(
    not CITUS_BIN, reason="no PostgreSQL with Citus given (set PGRECALL_CITUS_PG_BIN to its bin)"
)
def test_a_real_cluster_answers_like_one_server() -> None:
    assert CITUS_BIN is not None
    sys.path.insert(0, str(BENCHMARKS))
    from citus_cluster import start_cluster

    # Under /tmp and traversable: the servers run as their own user.
    tmp_path = Path(tempfile.mkdtemp(prefix="pgrecall-test-citus-", dir="/tmp"))
    tmp_path.chmod(0o755)
    cluster = start_cluster(Path(CITUS_BIN), tmp_path / "cluster", run_as=CITUS_RUN_AS)
    try:
        url = cluster.coordinator.url
        env = {k: v for k, v in os.environ.items() if not k.startswith("PGRECALL_")}
        env |= {
            "PGRECALL_DATABASE_URL": url,
            "PGRECALL_HOME": str(tmp_path / "home"),
            "PGRECALL_MODELS": "in-process",
        }
        assert run_pgrecall(env, "migrate", "upgrade").returncode == 0
        # A role that may do none of the steps: refused with every node's gaps, nothing changed.
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CREATE ROLE pgrecall_ops LOGIN")  # Citus creates it on the workers too
            conn.execute("GRANT SELECT ON alembic_version TO pgrecall_ops")
        ops = env | {"PGRECALL_DATABASE_URL": url.replace("postgres@", "pgrecall_ops@")}
        refused = run_pgrecall(ops, "migrate", "citus")
        assert refused.returncode == 1, refused.stdout + refused.stderr
        assert "migrate citus changed nothing: connected as pgrecall_ops" in refused.stderr
        assert "pgrecall_ops does not own the database" in refused.stderr
        for worker in cluster.workers:
            assert f"127.0.0.1:{worker.port}: ts_match_vq is not LEAKPROOF" in refused.stderr
        with psycopg.connect(url) as conn:
            assert conn.execute(citus_sql.SQL_DISTRIBUTED).fetchall() == []
        settings = Settings(database_url=url, home=tmp_path / "home", models="in-process")
        lexical = RetrievalRequest(query="boundary layer", options=SearchOptions(mode="lexical"))
        # A server running through the migration: its pooled sessions predate the database-level
        # setting `migrate citus` makes, and must still see the owner's rows afterwards.
        with App(settings, embedder=None, restricted=True) as app:
            app.entries.add(
                "ann", text="The boundary layer thickens downstream of the leading edge.", tags=["aero"]
            )
            app.entries.add("ben", text="Journals are indexed by subject in the library.", tags=["aero"])
            assert [h.entry.owner for h in app.retrieval.retrieve("ann", lexical).items] == ["ann"]
            first, again = run_pgrecall(env, "migrate", "citus"), run_pgrecall(env, "migrate", "citus")
            assert first.returncode == 0 and again.returncode == 0, first.stderr + again.stderr
            assert "every table was distributed already" in again.stdout
            assert [h.entry.owner for h in app.retrieval.retrieve("ann", lexical).items] == ["ann"]
            assert len(app.entries.list("ben", EntryFilters(tags_all=["aero"])).entries) == 1
        with App(settings, embedder=None, restricted=True) as app:
            app.entries.add("ann", text="A second note on the boundary layer of a flat plate.")
            assert len(app.retrieval.retrieve("ann", lexical).items) == 2
        assert _wrong(url) == 0
    finally:
        cluster.stop()
        shutil.rmtree(tmp_path, ignore_errors=True)


@pytest.mark.skipif(
    not CITUS_BIN, reason="no PostgreSQL with Citus given (set PGRECALL_CITUS_PG_BIN to its bin)"
)
def test_a_distributed_store_is_upgraded_past_a_generated_column_change() -> None:
    # Citus refuses SET EXPRESSION (migration 0019): refused in one line, then undo, upgrade, redo.
    assert CITUS_BIN is not None
    sys.path.insert(0, str(BENCHMARKS))
    from citus_cluster import start_cluster

    tmp_path = Path(tempfile.mkdtemp(prefix="pgrecall-test-citus-", dir="/tmp"))
    tmp_path.chmod(0o755)
    cluster = start_cluster(Path(CITUS_BIN), tmp_path / "cluster", run_as=CITUS_RUN_AS)
    try:
        url = cluster.coordinator.url
        env = {k: v for k, v in os.environ.items() if not k.startswith("PGRECALL_")}
        env |= {
            "PGRECALL_DATABASE_URL": url,
            "PGRECALL_HOME": str(tmp_path / "home"),
            "PGRECALL_MODELS": "in-process",
        }
        assert run_pgrecall(env, "migrate", "upgrade", "0018_huge_store_ef_search").returncode == 0
        with psycopg.connect(url) as conn:
            conn.execute(
                "INSERT INTO entries (body, content_hash, language) VALUES "
                "('SMTP.ehlo() greets the server.', 'sha256:' || repeat('0', 64), 'english')"
            )
        citus.distribute(url, lambda _line: None)  # as the previous release's `migrate citus` did
        refused = run_pgrecall(env, "migrate", "upgrade")
        assert refused.returncode == 1 and "Traceback" not in refused.stderr, refused.stderr
        assert "distributed by Citus" in refused.stderr and "migrate citus --undo" in refused.stderr
        for step in (["migrate", "citus", "--undo"], ["migrate", "upgrade"], ["migrate", "citus"]):
            ran = run_pgrecall(env, *step)
            assert ran.returncode == 0, (step, ran.stdout + ran.stderr)
        with psycopg.connect(url) as conn:
            assert {row[0] for row in conn.execute(citus_sql.SQL_DISTRIBUTED).fetchall()} >= {"entries"}
        settings = Settings(database_url=url, home=tmp_path / "home", models="in-process")
        with App(settings, embedder=None) as app:
            found = app.search.search("default", "smtplib.SMTP", options=SearchOptions(mode="lexical"))
            assert [hit.snippet for hit in found.hits] == ["SMTP.ehlo() greets the server."]
        assert _wrong(url) == 0
    finally:
        cluster.stop()
        shutil.rmtree(tmp_path, ignore_errors=True)
