"""HNSW indexes rebuilt with m = 24 (was 16)

Revision ID: 0014_hnsw_degree
Revises: 0013_hnsw_build
Create Date: 2026-11-26

With 24 links per element instead of 16, a walk reaches the true neighbours of a query in a
clustered store through a shorter candidate list: on the bench's 100k store, ef_search 250 finds
0.9945 of the true top 10 at p95 4.4 ms, where 16 links at ef_search 400 found 0.9885 at 5.3 ms
(Tuning.ef_search). The index is about the same size at 384 dimensions (its pages are dominated by
the vectors), and the build takes ~1.3x as long (100k x 384-d on 2 cores: 53 s -> 68 s), once, here.

pgvector prices a walk by m x ef_search against the table's size, so with 24 links the same
ef_search looks dearer to the planner: below Tuning.large_store the search sets ef_search 150,
which prices like 16 links at 200 did (an exact scan of a 10k store costs ~25 ms against a ~2 ms
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
