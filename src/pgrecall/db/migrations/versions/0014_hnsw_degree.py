"""HNSW indexes rebuilt with m = 24 (was 16)

Revision ID: 0014_hnsw_degree
Revises: 0013_hnsw_build
Create Date: 2026-11-26

With 24 links per element instead of 16, a walk reaches the true neighbours of a query in a
clustered store through a shorter candidate list: at 100k entries ef_search 300 finds more of the
true top 10 than ef_search 400 did with 16 links, in less time (figures in Tuning.ef_search). The
index is about the same size at 384 dimensions (its pages are dominated by the vectors), and the
build takes ~1.5x as long (100k x 384-d on 2 cores: ~45 s -> ~67 s), once, here.

pgvector prices a walk by m x ef_search against the table's size, so with 24 links the same
ef_search looks dearer to the planner: below Tuning.large_store the search sets ef_search 150,
which prices like 16 links at 200 did (an exact scan of a 10k store costs ~25 ms against a ~3 ms
walk, and the planner must not prefer it).
"""

from alembic import op

revision = "0014_hnsw_degree"
down_revision = "0013_hnsw_build"
branch_labels = None
depends_on = None

HNSW_DIMS = (384, 512, 768, 1024, 1536)


def _rebuild(m: int) -> None:
    for dim in HNSW_DIMS:
        op.execute(f"DROP INDEX IF EXISTS entries_embedding_hnsw_{dim}")
        op.execute(
            f"CREATE INDEX entries_embedding_hnsw_{dim} ON entries "
            f"USING hnsw ((embedding::vector({dim})) vector_cosine_ops) "
            f"WITH (m = {m}, ef_construction = 256) WHERE embedding_dim = {dim}"
        )


def upgrade() -> None:
    _rebuild(24)


def downgrade() -> None:
    _rebuild(16)
