"""pgrecall_set_local, pgrecall_search_knobs: transaction settings that reach every node

Revision ID: 0012_transaction_settings
Revises: 0011_language_how
Create Date: 2026-11-25

The owner that row-level security reads (pgrecall.owner) and the HNSW knobs of a search are
transaction-local settings. `set_config(name, value, true)` sets them on the server it runs on
only; on Citus the statements run on the workers, which then saw no owner (reads returned
nothing) and default knobs. `SET LOCAL` is what Citus forwards to the workers of the transaction
(with citus.propagate_set_commands = 'local', which `pgrecall migrate citus` sets), but it takes
no bound parameter: these functions take the values as parameters and issue the SET LOCAL, for
the settings pgrecall uses only. On a single server they are the same as set_config.
pgrecall_search_knobs sets the owner, reads the owner's live-entry count and sets the knobs in one
round trip, as the single statement it replaces did.
"""

from alembic import op

revision = "0012_transaction_settings"
down_revision = "0011_language_how"
branch_labels = None
depends_on = None

_SET_LOCAL = """
CREATE OR REPLACE FUNCTION pgrecall_set_local(setting text, value text) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
    IF setting NOT IN ('pgrecall.owner', 'hnsw.ef_search', 'hnsw.iterative_scan', 'hnsw.max_scan_tuples',
                       'plan_cache_mode', 'statement_timeout') THEN
        RAISE EXCEPTION 'pgrecall_set_local: % is not a setting pgrecall sets', setting;
    END IF;
    EXECUTE format('SET LOCAL %s = %L', setting, value);
    RETURN value;
END
$$
"""

_SEARCH_KNOBS = """
CREATE OR REPLACE FUNCTION pgrecall_search_knobs(
    p_owner text, large_store bigint, ef_search integer, ef_search_small integer,
    max_scan_tuples text, plan_cache_mode text
) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    live bigint;
BEGIN
    -- The owner first: row-level security lets the size lookup see only the owner's statistics.
    PERFORM pgrecall_set_local('pgrecall.owner', p_owner);
    SELECT coalesce(sum(n_docs), 0) INTO live FROM lexical_docs WHERE owner = p_owner;
    PERFORM pgrecall_set_local('hnsw.ef_search',
                               (CASE WHEN live >= large_store THEN ef_search ELSE ef_search_small END)::text);
    PERFORM pgrecall_set_local('hnsw.iterative_scan', 'relaxed_order');
    PERFORM pgrecall_set_local('hnsw.max_scan_tuples', max_scan_tuples);
    PERFORM pgrecall_set_local('plan_cache_mode', plan_cache_mode);
    RETURN live;
END
$$
"""


def upgrade() -> None:
    op.execute(_SET_LOCAL)
    op.execute(_SEARCH_KNOBS)


def downgrade() -> None:
    op.execute("DROP FUNCTION pgrecall_search_knobs(text, bigint, integer, integer, text, text)")
    op.execute("DROP FUNCTION pgrecall_set_local(text, text)")
