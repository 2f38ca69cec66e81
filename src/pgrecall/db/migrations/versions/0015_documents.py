"""documents owning ordered chunks; a chunk is an entry with its document, ordinal and section path

Revision ID: 0015_documents
Revises: 0014_hnsw_degree
Create Date: 2026-11-27

A document is what was ingested from one source (a path or a URL string) in one version: its
title, format, language, metadata, its whole normalized text (every chunk is a span of it) and its
hash, and the fingerprint of
the file it came from (size, mtime) so an unchanged file is skipped without being read twice. Its
chunks are ordinary entries (own text, hash, regconfig, tsv, vector), so hybrid search, filters,
pins, citations and supersede apply to them unchanged; `document_id`, `ordinal` and
`section_path` place them in the document. A live source has one live document per version
label. Owner-scoped and under row-level security like entries, and distributed with them by owner.
"""

from alembic import op

revision = "0015_documents"
down_revision = "0014_hnsw_degree"
branch_labels = None
depends_on = None

ROLE = "pgrecall_app"


def upgrade() -> None:
    op.execute(
        """
        CREATE TABLE documents (
            owner         text        NOT NULL DEFAULT 'default',
            id            uuid        NOT NULL DEFAULT uuidv7(),
            source        text        NOT NULL,
            title         text,
            version_label text,
            format        text        NOT NULL,
            language      regconfig   NOT NULL DEFAULT 'simple',
            metadata      jsonb       NOT NULL DEFAULT '{}'::jsonb,
            content_hash  text        NOT NULL,
            text          text        NOT NULL,
            size_bytes    bigint,
            mtime         timestamptz,
            chunk_count   integer     NOT NULL DEFAULT 0,
            created_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
            updated_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
            deleted_at    timestamptz,
            PRIMARY KEY (owner, id),
            CONSTRAINT documents_hash_format CHECK (content_hash ~ '^sha256:[0-9a-f]{64}$')
        )
        """
    )
    # One live document per (source, version): a re-ingest replaces it, another version sits beside it.
    op.execute(
        "CREATE UNIQUE INDEX documents_live_source ON documents (owner, source, coalesce(version_label, '')) "
        "WHERE deleted_at IS NULL"
    )
    op.execute("CREATE INDEX documents_owner_updated ON documents (owner, updated_at, id)")
    op.execute("ALTER TABLE entries ADD COLUMN document_id uuid")
    op.execute("ALTER TABLE entries ADD COLUMN ordinal integer")
    op.execute("ALTER TABLE entries ADD COLUMN section_path text[]")
    op.execute(
        "ALTER TABLE entries ADD CONSTRAINT entries_document_fk FOREIGN KEY (owner, document_id) "
        "REFERENCES documents (owner, id) ON DELETE CASCADE"
    )
    op.execute(
        "ALTER TABLE entries ADD CONSTRAINT entries_chunk_place CHECK "
        "((document_id IS NULL) = (ordinal IS NULL))"
    )
    op.execute(
        "CREATE INDEX entries_document_order ON entries (owner, document_id, ordinal) "
        "WHERE document_id IS NOT NULL"
    )
    op.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON documents TO {ROLE}")
    op.execute("ALTER TABLE documents ENABLE ROW LEVEL SECURITY")
    op.execute("ALTER TABLE documents FORCE ROW LEVEL SECURITY")
    op.execute(
        f"CREATE POLICY documents_owner_isolation ON documents TO {ROLE} "
        "USING (owner = current_setting('pgrecall.owner', true)) "
        "WITH CHECK (owner = current_setting('pgrecall.owner', true))"
    )
    op.execute("CREATE POLICY documents_operator ON documents TO CURRENT_USER USING (true) WITH CHECK (true)")


def downgrade() -> None:
    # Chunks stay as plain entries: nothing an assistant wrote is lost by going back.
    op.execute("DROP INDEX entries_document_order")
    op.execute("ALTER TABLE entries DROP CONSTRAINT entries_chunk_place")
    op.execute("ALTER TABLE entries DROP CONSTRAINT entries_document_fk")
    op.execute("ALTER TABLE entries DROP COLUMN section_path")
    op.execute("ALTER TABLE entries DROP COLUMN ordinal")
    op.execute("ALTER TABLE entries DROP COLUMN document_id")
    op.execute("DROP TABLE documents")
