"""entry_links: typed, directed links between two entries of one owner

Revision ID: 0010_entry_links
Revises: 0009_current_entries
Create Date: 2026-11-25

A link (from_id, relation, to_id) belongs to the owner of both entries: the foreign keys are
on (owner, id), so a link can never join two owners' entries, and a purged entry takes its
links with it. A soft-deleted entry keeps its links, hidden by the reads (they join live
entries), so restoring the entry brings them back. Row-level security as in migration 0005.
An operator emptying the store by hand now truncates both: `TRUNCATE entries, entry_links`.
"""

from alembic import op

revision = "0010_entry_links"
down_revision = "0009_current_entries"
branch_labels = None
depends_on = None

ROLE = "pgrecall_app"


def upgrade() -> None:
    op.execute(
        """
        CREATE TABLE entry_links (
            owner      text        NOT NULL,
            from_id    uuid        NOT NULL,
            relation   text        NOT NULL,
            to_id      uuid        NOT NULL,
            note       text,
            created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
            PRIMARY KEY (owner, from_id, relation, to_id),
            FOREIGN KEY (owner, from_id) REFERENCES entries (owner, id) ON DELETE CASCADE,
            FOREIGN KEY (owner, to_id) REFERENCES entries (owner, id) ON DELETE CASCADE,
            CONSTRAINT entry_links_not_self CHECK (from_id <> to_id),
            CONSTRAINT entry_links_relation_token CHECK (relation ~ '^[a-z][a-z0-9_]{0,63}$'),
            CONSTRAINT entry_links_note_size CHECK (note IS NULL OR length(note) <= 1000)
        )
        """
    )
    op.execute("CREATE INDEX entry_links_to ON entry_links (owner, to_id)")
    op.execute("CREATE INDEX entry_links_owner_created ON entry_links (owner, created_at)")
    op.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON entry_links TO {ROLE}")
    op.execute("ALTER TABLE entry_links ENABLE ROW LEVEL SECURITY")
    op.execute("ALTER TABLE entry_links FORCE ROW LEVEL SECURITY")
    op.execute(
        f"CREATE POLICY entry_links_owner_isolation ON entry_links TO {ROLE} "
        "USING (owner = current_setting('pgrecall.owner', true)) "
        "WITH CHECK (owner = current_setting('pgrecall.owner', true))"
    )
    op.execute(
        "CREATE POLICY entry_links_operator ON entry_links TO CURRENT_USER USING (true) WITH CHECK (true)"
    )


def downgrade() -> None:
    op.execute("DROP TABLE entry_links")
