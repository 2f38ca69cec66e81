"""pgrecall_search_knobs with a third ef_search tier, for owners of very large stores

Revision ID: 0018_huge_store_ef_search
Revises: 0017_cjk_bigrams
Create Date: 2026-11-27

An HNSW walk with the same candidate list finds less of the true top 10 as the graph grows: on the
bench's stores, ef_search 250 finds 0.99 of it at 100k entries and 0.9425 at 1M, where 600 finds
0.995 (Tuning.ef_search_huge). From Tuning.huge_store live entries of the owner on, the search sets
the longer list; below, nothing changes.

The function of migration 0012 is kept beside the new one (another signature), so that a server
still running the previous release keeps searching while the schema moves on under it.
"""

from alembic import op

revision = "0018_huge_store_ef_search"
down_revision = "0017_cjk_bigrams"
branch_labels = None
depends_on = None

_SEARCH_KNOBS = """
CREATE OR REPLACE FUNCTION pgrecall_search_knobs(
    p_owner text, large_store bigint, ef_search integer, ef_search_small integer,
    huge_store bigint, ef_search_huge integer, max_scan_tuples text, plan_cache_mode text
) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    live bigint;
BEGIN
    -- The owner first: row-level security lets the size lookup see only the owner's statistics.
    PERFORM pgrecall_set_local('pgrecall.owner', p_owner);
    SELECT coalesce(sum(n_docs), 0) INTO live FROM lexical_docs WHERE owner = p_owner;
    PERFORM pgrecall_set_local('hnsw.ef_search', (CASE WHEN live >= huge_store THEN ef_search_huge
                                                       WHEN live >= large_store THEN ef_search
                                                       ELSE ef_search_small END)::text);
    PERFORM pgrecall_set_local('hnsw.iterative_scan', 'relaxed_order');
    PERFORM pgrecall_set_local('hnsw.max_scan_tuples', max_scan_tuples);
    PERFORM pgrecall_set_local('plan_cache_mode', plan_cache_mode);
    RETURN live;
END
$$
"""


def upgrade() -> None:
    op.execute(_SEARCH_KNOBS)


def downgrade() -> None:
    op.execute(
        "DROP FUNCTION pgrecall_search_knobs(text, bigint, integer, integer, bigint, integer, text, text)"
    )
