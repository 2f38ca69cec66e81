"""HNSW indexes rebuilt with ef_construction = 256 (was 128)

Revision ID: 0013_hnsw_build
Revises: 0012_transaction_settings
Create Date: 2026-11-25

The vectors of a memory store are clustered (notes on one topic, near-duplicates), and a graph
built with ef_construction = 128 needed ef_search = 800 at 100k entries for recall@10 ≥ 0.98 in
every build (400 gave 0.974-0.980 over three builds: HNSW draws each element's level at random, and
a parallel build inserts in a different order each time, so no two builds give the same graph;
pgvector/pgvector#786). Built with 256, ef_search = 400 reaches 0.981-0.985 in each of three builds (300:
0.9795-0.984), and a search walks half the list it walked at 800 (`pgrecall bench`). The build
takes ~2x as long (100k x 384-d on 2 cores: 22 s -> 45-58 s), once, in this migration.
"""

from alembic import op

revision = "0013_hnsw_build"
down_revision = "0012_transaction_settings"
branch_labels = None
depends_on = None

HNSW_DIMS = (384, 512, 768, 1024, 1536)


def _rebuild(ef_construction: int) -> None:
    for dim in HNSW_DIMS:
        op.execute(f"DROP INDEX IF EXISTS entries_embedding_hnsw_{dim}")
        op.execute(
            f"CREATE INDEX entries_embedding_hnsw_{dim} ON entries "
            f"USING hnsw ((embedding::vector({dim})) vector_cosine_ops) "
            f"WITH (m = 16, ef_construction = {ef_construction}) WHERE embedding_dim = {dim}"
        )


def upgrade() -> None:
    _rebuild(256)


def downgrade() -> None:
    _rebuild(128)
