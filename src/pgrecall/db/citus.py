"""`pgrecall migrate citus`: distribute a pgrecall database on Citus, repeatably, and back.

Every owner-scoped table is distributed by `owner` in one co-location group with `entries`, so
each statement of a search or a write routes to the one shard holding the owner; api_tokens is a
reference table (a copy on every node). Each step checks what is already done, so the command can
be run again, e.g. after adding a worker (it repeats the per-worker setup there).
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import psycopg
from psycopg.rows import dict_row

from pgrecall.db import citus_sql as q
from pgrecall.db.citus_checks import (
    SQL_NODE_STATE,
    NodeState,
    missing_on_coordinator,
    missing_on_worker,
    node_state,
    parse_citus_version,
    version_problem,
)
from pgrecall.errors import ConfigurationError

Report = Callable[[str], None]


def _connect(url: str) -> psycopg.Connection[dict[str, object]]:
    return psycopg.connect(url, autocommit=True, row_factory=dict_row)


def _require_citus(conn: psycopg.Connection[dict[str, object]]) -> None:
    row = conn.execute(q.SQL_HAS_CITUS).fetchone()
    if not (row and row["citus"]):
        raise ConfigurationError(
            "the database has no citus extension: `pgrecall migrate citus` runs on a Citus coordinator "
            "(CREATE EXTENSION citus there, add the workers with citus_add_node, then run it again)"
        )


def _on_workers(conn: psycopg.Connection[dict[str, object]], statement: str) -> list[str]:
    failed = []
    for row in conn.execute(q.SQL_ON_WORKERS, (statement,)).fetchall():
        if not row["success"]:
            failed.append(f"{row['nodename']}:{row['nodeport']}: {row['result']}")
    return failed


def _distributed(conn: psycopg.Connection[dict[str, object]]) -> set[str]:
    return {str(row["name"]) for row in conn.execute(q.SQL_DISTRIBUTED).fetchall()}


def _has_tag_index(conn: psycopg.Connection[dict[str, object]], name: str) -> bool:
    row = conn.execute(q.SQL_INDEX_OPCLASS, (name,)).fetchone()
    return bool(row and row["ours"])


def _worker_states(conn: psycopg.Connection[dict[str, object]]) -> tuple[list[NodeState], list[str]]:
    states, unreachable = [], []
    for row in conn.execute(q.SQL_ON_WORKERS, (SQL_NODE_STATE,)).fetchall():
        node = f"{row['nodename']}:{row['nodeport']}"
        if row["success"]:
            states.append(NodeState.from_json(node, str(row["result"])))
        else:
            unreachable.append(f"{node}: cannot check it: {row['result']}")
    return states, unreachable


def preflight(conn: psycopg.Connection[dict[str, object]], allow_untested: bool) -> list[NodeState]:
    """Every check before the first change: version, workers, privileges; raises with all problems."""
    _require_citus(conn)
    row = conn.execute(q.SQL_CITUS_VERSION).fetchone()
    version = parse_citus_version(str(row["version"] if row else ""))
    problem = version_problem(version)
    if problem and not allow_untested:
        raise ConfigurationError(
            f"{problem}; nothing was changed (--allow-untested-citus runs it anyway: try "
            "benchmarks/citus_check.py with that release first)"
        )
    if not conn.execute(q.SQL_WORKERS).fetchall():
        raise ConfigurationError("the Citus cluster has no active worker: add one with citus_add_node")
    coordinator = node_state(conn, "coordinator")
    workers, problems = _worker_states(conn)
    problems = missing_on_coordinator(coordinator) + problems
    for worker in workers:
        problems += missing_on_worker(worker, coordinator)
    if problems:
        raise ConfigurationError(
            f"migrate citus changed nothing: connected as {coordinator.user}, it cannot do every step:\n  - "
            + "\n  - ".join(problems)
            + "\n(docs/scaling.md: managed services without superuser)"
        )
    return workers


def distribute(url: str, report: Report, allow_untested: bool = False) -> None:
    """Make the database at `url` (a Citus coordinator at schema head) a distributed pgrecall store."""
    with _connect(url) as conn:
        workers = preflight(conn, allow_untested)
        report(f"checked: Citus version, privileges on the coordinator and {len(workers)} worker(s)")
        for statement in q.SQL_SESSION_SETTINGS:
            conn.execute(statement)
        conn.execute(q.SQL_PROPAGATE_SET)
        report("citus.propagate_set_commands = 'local' for this database")
        for statement in (*q.WORKER_STATEMENTS, q.WORKER_TAG_OPERATORS):
            failed = _on_workers(conn, statement)
            if failed:
                raise ConfigurationError("a worker refused the setup: " + "; ".join(failed))
        report(f"workers set up ({len(workers)}): pgrecall_app may log in, tag operators, LEAKPROOF marks")
        for function in (q.COMPACT_OWNER, q.COMPACT_ALL, q.STATS_TRIGGER, q.TRUNCATE_TRIGGER, q.SET_LOCAL):
            conn.execute(function)
        report(
            "statistics functions replaced by their Citus-safe forms; pgrecall_set_local carries the "
            "propagation setting itself (sessions opened before this migration stay correct)"
        )
        done = _distributed(conn)
        moved = [t for t in (*q.DISTRIBUTED_TABLES, *q.REFERENCE_TABLES) if t not in done]
        if moved:
            dropped = _drop_tag_indexes(conn) if "entries" not in done else []
            for table in moved:
                if table == q.DISTRIBUTED_TABLES[0]:
                    conn.execute(q.SQL_DISTRIBUTE_FIRST)
                elif table in q.REFERENCE_TABLES:
                    conn.execute(q.SQL_REFERENCE, (table,))
                else:
                    conn.execute(q.SQL_DISTRIBUTE, (table,))
            report(
                "distributed by owner, co-located with entries: "
                + ", ".join(t for t in moved if t not in q.REFERENCE_TABLES)
            )
            if dropped:
                _tag_indexes(conn, dropped)
                report("tag indexes made again on every shard: " + ", ".join(dropped))
        else:
            report("every table was distributed already")
        for statement in q.REPLICA_IDENTITY:
            conn.execute(statement)
        report("delta tables: REPLICA IDENTITY FULL (shards can be moved by a rebalance)")
        # Every run: a run stopped half-way may have counted copied rows twice; exact afterwards.
        _rebuild_statistics(conn)
        report("lexical statistics rebuilt from the entries")


# Owners per rebuild transaction. A write whose trigger merges an owner being rebuilt waits for
# that transaction: one owner keeps the wait to one owner's recount, at no cost in total time
# (benchmarks/stats_rebuild.json: 100 owners x 1000 entries, 18.4 s and writes waiting 74 ms at
# most, against 20.8 s and 1150 ms with ten owners per transaction).
REBUILD_BATCH = 1
_REBUILD_RETRIES = 5


def rebuild_statistics(conn: psycopg.Connection[dict[str, object]], batch: int = REBUILD_BATCH) -> int:
    """Recount every owner's lexical statistics from its entries, `batch` owners per transaction.

    `conn` is in autocommit. No table lock: searches and writes go on (see q.REBUILD_OWNERS). It
    expects the Citus-safe merge (q.COMPACT_OWNER, an upsert, installed first by `distribute`): the
    MERGE of migration 0002 fails on a row a concurrent recount inserted.
    Returns how many owners were rebuilt.
    """
    owners = [str(row["owner"]) for row in conn.execute(q.SQL_STATISTICS_OWNERS).fetchall()]
    owners.sort()
    for start in range(0, len(owners), batch):
        chunk = owners[start : start + batch]
        for attempt in range(_REBUILD_RETRIES + 1):
            try:
                with conn.transaction():
                    conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
                    for statement in q.REBUILD_OWNERS:
                        conn.execute(statement, {"owners": chunk})
                break
            except (psycopg.errors.SerializationFailure, psycopg.errors.DeadlockDetected):
                if attempt == _REBUILD_RETRIES:
                    raise
    return len(owners)


def _rebuild_statistics(conn: psycopg.Connection[dict[str, object]]) -> None:
    rebuild_statistics(conn)


def prepare_node(url: str, report: Report) -> None:
    """Ready a new node (connected to directly, as a superuser) for citus_add_node."""
    with _connect(url) as conn:
        for statement in (*q.PREPARE_NODE, q.WORKER_TAG_OPERATORS, q.WORKER_LEAKPROOF):
            conn.execute(statement)
        _require_prepared(node_state(conn, url_host(url)))
    report("node ready: extensions, the tag operators and their operator class, LEAKPROOF marks")


def check_node(url: str, report: Report) -> None:
    """Say whether the node at `url` is ready for citus_add_node; raise with what is missing if not."""
    with _connect(url) as conn:
        _require_prepared(node_state(conn, url_host(url)))
    report(f"{url_host(url)}: prepared (citus_add_node can copy pgrecall's tables there)")


def _require_prepared(state: NodeState) -> None:
    if not state.prepared:
        # Without it citus_add_node fails with "failure on connection marked as essential"; the cause
        # (the operator class that entries' tag indexes name) is only in the new node's log.
        raise ConfigurationError(
            f"{state.node} is not prepared: the operator class pgrecall_tags_ops is missing, and "
            'citus_add_node would fail there ("failure on connection marked as essential"); run '
            "`pgrecall migrate citus --prepare-node URL` as a superuser on it first"
        )


def url_host(url: str) -> str:
    """host:port of a connection URL, for messages (never the password)."""
    info = psycopg.conninfo.conninfo_to_dict(url)
    return f"{info.get('host', 'localhost')}:{info.get('port', 5432)}"


def node_sql() -> str:
    """The statements a superuser runs on each worker, and on a node about to be added, for pgrecall."""
    parts = [*q.PREPARE_NODE, q.WORKER_APP_LOGIN, q.WORKER_LEAKPROOF, q.WORKER_TAG_OPERATORS]
    return "\n".join(textwrap.dedent(part).strip() + ";" for part in parts) + "\n"


@contextmanager
def _metadata_sync_off(conn: psycopg.Connection[dict[str, object]]) -> Iterator[None]:
    # Citus then skips the dependency check that refuses an operator class, and leaves the workers'
    # copies of the table alone: the tag indexes are made and dropped on the shards only.
    conn.execute("SET citus.enable_metadata_sync = off")
    try:
        yield
    finally:
        conn.execute("RESET citus.enable_metadata_sync")


def _tag_indexes(conn: psycopg.Connection[dict[str, object]], indexes: list[str]) -> None:
    # The operator class exists on every worker (WORKER_TAG_OPERATORS) by now.
    with _metadata_sync_off(conn):
        for index, column in q.TAG_INDEXES:
            if index in indexes:
                conn.execute(f"CREATE INDEX {index} ON entries USING gin ({column} pgrecall_tags_ops)")


def _drop_tag_indexes(conn: psycopg.Connection[dict[str, object]]) -> list[str]:
    """Drops the indexes on the tag operator class (Citus refuses to move a table that has them)."""
    dropped = []
    with _metadata_sync_off(conn):
        for index, _ in q.TAG_INDEXES:
            if _has_tag_index(conn, index):
                conn.execute(f"DROP INDEX {index}")  # names from q.TAG_INDEXES, not input
                dropped.append(index)
    return dropped


def undistribute(url: str, report: Report) -> None:
    """The way back: every pgrecall table becomes a plain table on the coordinator again."""
    with _connect(url) as conn:
        _require_citus(conn)
        done = _distributed(conn)
        # undistribute_table refuses the tag indexes as distributing does: they go first and are
        # made again on the local table.
        if "entries" in done:
            _drop_tag_indexes(conn)
        for table in (*reversed(q.DISTRIBUTED_TABLES), *q.REFERENCE_TABLES):
            if table in done:
                conn.execute(q.SQL_UNDISTRIBUTE, (table,))
                # Tables joined by foreign keys (entry_links, entries) come back together.
                left = _distributed(conn)
                report(", ".join(sorted(done - left)) + ": local tables again")
                done = left
        missing: list[str] = []
        if (conn.execute(q.SQL_TAGS_OPCLASS_EXISTS).fetchone() or {}).get("present"):
            missing = [
                index
                for index, _ in q.TAG_INDEXES
                if not (conn.execute(q.SQL_INDEX_EXISTS, (index,)).fetchone() or {}).get("present")
            ]
        if missing:  # also after a run that stopped between the drop and here
            _tag_indexes(conn, missing)
            report("tag indexes made again: " + ", ".join(missing))
        _rebuild_statistics(conn)
        report("lexical statistics rebuilt from the entries")
