"""entries table, per-row language tsv, vectors with their model, indexes

Revision ID: 0001_entries
Revises:
Create Date: 2026-11-22

HNSW parameters: m = 16, ef_construction = 128. m = 16 is pgvector's default and
the usual sweet spot for 384-1536-d text embeddings (graph memory ~ 2*m links per
node); ef_construction = 128 (default 64) buys recall headroom so the search-time
ef_search can stay small for p95 latency, at about 1.6x the build time of 64,
which is still minutes, not hours, at 100k rows on 2 cores.

Vectors of any model live in the same column (untyped `vector`), with the model
name and dimension beside them. HNSW needs a fixed dimension, so there is one
partial expression index per common dimension; a model with another dimension
still works (exact scan) until a migration adds its index.
"""

from alembic import op

revision = "0001_entries"
down_revision = None
branch_labels = None
depends_on = None

HNSW_DIMS = (384, 512, 768, 1024, 1536)


def upgrade() -> None:
    op.execute("CREATE EXTENSION IF NOT EXISTS vector")
    op.execute(
        """
        CREATE FUNCTION pgrecall_tags_text(tags text[]) RETURNS text
        LANGUAGE sql IMMUTABLE PARALLEL SAFE
        RETURN coalesce(array_to_string(tags, ' '), '')
        """
    )
    op.execute(
        """
        CREATE TABLE entries (
            owner           text        NOT NULL DEFAULT 'default',
            id              uuid        NOT NULL DEFAULT uuidv7(),
            kind            text        NOT NULL DEFAULT 'note',
            source          text,
            title           text,
            body            text        NOT NULL,
            tags            text[]      NOT NULL DEFAULT '{}',
            metadata        jsonb       NOT NULL DEFAULT '{}'::jsonb,
            language        regconfig   NOT NULL DEFAULT 'simple',
            tsv             tsvector    GENERATED ALWAYS AS (
                                setweight(to_tsvector(language, coalesce(title, '')), 'A')
                             || setweight(to_tsvector(language, body), 'B')
                             || setweight(to_tsvector(language, pgrecall_tags_text(tags)), 'C')
                            ) STORED,
            content_hash    text        NOT NULL,
            version         integer     NOT NULL DEFAULT 1,
            created_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
            updated_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
            deleted_at      timestamptz,
            embedding       vector,
            embedding_model text,
            embedding_dim   integer,
            PRIMARY KEY (owner, id),
            CONSTRAINT entries_hash_format CHECK (content_hash ~ '^sha256:[0-9a-f]{64}$'),
            CONSTRAINT entries_version_positive CHECK (version >= 1),
            CONSTRAINT entries_embedding_identity CHECK (
                (embedding IS NULL AND embedding_model IS NULL AND embedding_dim IS NULL)
                OR (embedding IS NOT NULL AND embedding_model IS NOT NULL
                    AND embedding_dim = vector_dims(embedding))
            ),
            CONSTRAINT entries_tags_no_nulls CHECK (array_position(tags, NULL) IS NULL)
        )
        """
    )
    op.execute("COMMENT ON COLUMN entries.embedding IS 'vector of embedding_model; NULL = pending'")
    for dim in HNSW_DIMS:
        op.execute(
            f"CREATE INDEX entries_embedding_hnsw_{dim} ON entries "
            f"USING hnsw ((embedding::vector({dim})) vector_cosine_ops) "
            f"WITH (m = 16, ef_construction = 128) WHERE embedding_dim = {dim}"
        )
    op.execute("CREATE INDEX entries_tsv_gin ON entries USING gin (tsv)")
    op.execute("CREATE INDEX entries_tags_gin ON entries USING gin (tags)")
    op.execute("CREATE INDEX entries_owner_created ON entries (owner, created_at, id)")
    op.execute("CREATE INDEX entries_owner_kind ON entries (owner, kind)")
    op.execute("CREATE INDEX entries_owner_source ON entries (owner, source)")
    op.execute("CREATE INDEX entries_owner_hash ON entries (owner, content_hash)")
    op.execute(
        "CREATE INDEX entries_pending ON entries (owner, id) WHERE deleted_at IS NULL AND embedding IS NULL"
    )


def downgrade() -> None:
    op.execute("DROP TABLE entries")
    op.execute("DROP FUNCTION pgrecall_tags_text(text[])")
    # The vector extension stays: other schemas in the database may use it.
