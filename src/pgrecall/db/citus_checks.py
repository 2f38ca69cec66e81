"""What `pgrecall migrate citus` checks before it changes anything: the Citus version and, on the
coordinator and on every worker, that the connecting role may do each step still to be done.

Every check runs first and every problem is reported at once, so a refusal leaves the cluster as it
was instead of half-migrated. A step already done (by an earlier run, or by a provider's superuser
on a managed service) needs no privilege: only what is still missing is asked for.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import psycopg

from pgrecall.errors import ConfigurationError

# The Citus releases `migrate citus` was run against (benchmarks/citus_check.py and the cluster test
# of tests/integration/test_citus.py), both ends included, as (major, minor): Citus 14.0 is the
# first release for PostgreSQL 18 and the current one. It relies on Citus behaviour that is not
# documented (SET LOCAL forwarded from inside a function; an index on an operator class created
# with metadata sync off), so a release outside the range is refused until it has been tested.
TESTED_CITUS = ((14, 0), (14, 0))

_VERSION = re.compile(r"Citus (\d+)\.(\d+)(?:\.(\d+))?([0-9A-Za-z.-]*)")


@dataclass(frozen=True)
class CitusVersion:
    """A Citus release as citus_version() names it; `suffix` marks a development build ('devel')."""

    major: int
    minor: int
    patch: int
    suffix: str

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}.{self.patch}{self.suffix}"


def parse_citus_version(text: str) -> CitusVersion:
    """The version in citus_version()'s text, e.g. 'Citus 14.0.1 on x86_64-pc-linux-gnu, …'."""
    found = _VERSION.match(text.strip())
    if found is None:
        raise ConfigurationError(f"cannot read the Citus version from citus_version() = {text!r}")
    major, minor, patch, suffix = found.groups()
    return CitusVersion(int(major), int(minor), int(patch or 0), suffix)


def version_problem(version: CitusVersion) -> str | None:
    """Why `version` is refused (outside TESTED_CITUS, or a development build); None when tested."""
    low, high = TESTED_CITUS
    tested = f"{low[0]}.{low[1]}" if low == high else f"{low[0]}.{low[1]} to {high[0]}.{high[1]}"
    if version.suffix:
        return f"Citus {version} is a development build; pgrecall is tested with Citus {tested} releases"
    if not low <= (version.major, version.minor) <= high:
        return f"Citus {version} is outside the releases pgrecall is tested with ({tested})"
    return None


# One row of JSON about the connecting role and what is already in place, the same on the
# coordinator (run directly) and on each worker (through run_command_on_workers, which returns
# one text value). `tables_owned` / `functions_owned`: pgrecall's tables and the functions
# `migrate citus` replaces that the role may alter (on a worker, before distribution, none exist).
SQL_NODE_STATE = """
SELECT json_build_object(
    'user', current_user,
    'superuser', r.rolsuper,
    'app_role', a.oid IS NOT NULL,
    'app_login', coalesce(a.rolcanlogin, false),
    'app_admin', r.rolcreaterole AND EXISTS (
        SELECT FROM pg_auth_members m WHERE m.roleid = a.oid AND m.member = r.oid AND m.admin_option),
    'leakproof', (SELECT proleakproof FROM pg_proc
                  WHERE oid = 'pg_catalog.ts_match_vq(tsvector, tsquery)'::regprocedure),
    'tag_functions', (SELECT count(*) = 2 FROM pg_proc
                      WHERE proname IN ('pgrecall_tags_contain', 'pgrecall_tags_overlap')),
    'tag_operators', (SELECT count(*) = 2 FROM pg_operator WHERE oprname IN ('|@>', '|&&')),
    'tag_opclass', EXISTS (SELECT FROM pg_opclass WHERE opcname = 'pgrecall_tags_ops'),
    'create_in_public', has_schema_privilege('public', 'CREATE'),
    'database_owner', (SELECT pg_has_role(current_user, datdba, 'USAGE') FROM pg_database
                       WHERE datname = current_database()),
    'tables_not_owned', (SELECT coalesce(json_agg(c.relname ORDER BY c.relname), '[]') FROM pg_class c
                         WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p')
                           AND c.relname IN ('entries', 'entry_links', 'documents', 'api_tokens',
                                             'lexical_df', 'lexical_df_delta', 'lexical_docs',
                                             'lexical_docs_delta')
                           AND NOT pg_has_role(current_user, c.relowner, 'USAGE')),
    'functions_not_owned', (SELECT coalesce(json_agg(p.proname ORDER BY p.proname), '[]') FROM pg_proc p
                            WHERE p.pronamespace = 'public'::regnamespace
                              AND p.proname IN ('pgrecall_lexical_compact_owner', 'pgrecall_lexical_compact',
                                                'pgrecall_lexical_stats', 'pgrecall_lexical_stats_truncate',
                                                'pgrecall_set_local')
                              AND NOT pg_has_role(current_user, p.proowner, 'USAGE'))
)::text AS state
FROM pg_roles r LEFT JOIN pg_roles a ON a.rolname = 'pgrecall_app'
WHERE r.rolname = current_user
"""


@dataclass(frozen=True)
class NodeState:
    """What SQL_NODE_STATE found on one node."""

    node: str
    user: str
    superuser: bool
    app_role: bool
    app_login: bool
    app_admin: bool
    leakproof: bool
    tag_functions: bool
    tag_operators: bool
    tag_opclass: bool
    create_in_public: bool
    database_owner: bool
    tables_not_owned: tuple[str, ...]
    functions_not_owned: tuple[str, ...]

    @classmethod
    def from_json(cls, node: str, text: str) -> NodeState:
        """The state from SQL_NODE_STATE's JSON text."""
        raw: dict[str, Any] = json.loads(text)
        return cls(
            node=node,
            user=str(raw["user"]),
            superuser=bool(raw["superuser"]),
            app_role=bool(raw["app_role"]),
            app_login=bool(raw["app_login"]),
            app_admin=bool(raw["app_admin"]),
            leakproof=bool(raw["leakproof"]),
            tag_functions=bool(raw["tag_functions"]),
            tag_operators=bool(raw["tag_operators"]),
            tag_opclass=bool(raw["tag_opclass"]),
            create_in_public=bool(raw["create_in_public"]),
            database_owner=bool(raw["database_owner"]),
            tables_not_owned=tuple(raw["tables_not_owned"]),
            functions_not_owned=tuple(raw["functions_not_owned"]),
        )

    @property
    def prepared(self) -> bool:
        """True when citus_add_node can copy pgrecall's tables here (the tag operator class exists)."""
        return self.tag_opclass


def node_state(conn: psycopg.Connection[Any], node: str) -> NodeState:
    """SQL_NODE_STATE on the node `conn` is connected to."""
    row = conn.execute(SQL_NODE_STATE).fetchone()
    assert row is not None  # the connecting role always has a pg_roles row
    text = row["state"] if isinstance(row, dict) else row[0]
    return NodeState.from_json(node, str(text))


_SUPERUSER_ONLY = "only a superuser can"


def missing_on_worker(state: NodeState, coordinator: NodeState) -> list[str]:
    """What the role lacks for the per-worker steps still to be done (empty: it may do them all).

    A worker needs what the coordinator has: the LEAKPROOF mark and the superuser form of the tag
    operators only where the coordinator's migrations made them.
    """
    if state.superuser:
        return []
    at, who = state.node, state.user
    out = []
    if not state.app_role:
        out.append(f"{at}: role pgrecall_app does not exist (Citus copies it when the node is added)")
    elif not state.app_login and not state.app_admin:
        out.append(
            f"{at}: pgrecall_app may not log in and {who} may not change that (needs CREATEROLE and "
            "ADMIN OPTION on pgrecall_app): ALTER ROLE pgrecall_app LOGIN"
        )
    if coordinator.leakproof and not state.leakproof:
        out.append(
            f"{at}: ts_match_vq is not LEAKPROOF and {_SUPERUSER_ONLY} mark it "
            "(`pgrecall migrate citus --node-sql` prints the statements)"
        )
    if coordinator.tag_opclass and not (state.tag_functions and state.tag_operators and state.tag_opclass):
        out.append(
            f"{at}: the tag functions, operators and operator class pgrecall_tags_ops are missing; the "
            f"functions are LANGUAGE internal and {_SUPERUSER_ONLY} create them and the operator class "
            "(`pgrecall migrate citus --node-sql` prints the statements)"
        )
    return out


def missing_on_coordinator(state: NodeState) -> list[str]:
    """What the role lacks on the coordinator: the database's setting, the tables and functions."""
    at, who = state.node, state.user
    out = []
    if not state.tag_opclass:
        # Migration 0006 run without a superuser: plain-SQL tag operators, which the per-worker setup
        # does not make and which no run on a cluster has covered.
        out.append(
            f"{at}: the tag operators are the plain-SQL form of a migration run without superuser; "
            "migrate citus needs the superuser form (a superuser runs `pgrecall migrate downgrade "
            "0005_row_level_security` and `pgrecall migrate upgrade head` on the coordinator first)"
        )
    if state.superuser:
        return out
    if not state.database_owner:
        out.append(
            f"{at}: {who} does not own the database, so it may not ALTER DATABASE … SET "
            "citus.propagate_set_commands = 'local'"
        )
    if state.tables_not_owned:
        out.append(
            f"{at}: {who} does not own {', '.join(state.tables_not_owned)} "
            "(create_distributed_table needs the owner: run as the role that ran `migrate upgrade`)"
        )
    if state.functions_not_owned:
        out.append(f"{at}: {who} does not own the functions {', '.join(state.functions_not_owned)}")
    return out
