"""what is current: entries may expire and may supersede an earlier entry

Revision ID: 0009_current_entries
Revises: 0008_folded_filters
Create Date: 2026-11-25

expires_at: after it, the entry is left out of search, list and context unless a caller asks
for expired entries. supersedes: the id of an earlier entry of the same owner that this one
replaces; while this one is live, the earlier one is left out the same way (deleting the newer
entry brings the older one back). No foreign key: an import may name an entry that comes later
in its file, and a purged entry's successors simply hide nothing. The service checks that the
id exists for the owner and that the chain has no cycle.
"""

from alembic import op

revision = "0009_current_entries"
down_revision = "0008_folded_filters"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE entries ADD COLUMN expires_at timestamptz, ADD COLUMN supersedes uuid")
    op.execute(
        "ALTER TABLE entries ADD CONSTRAINT entries_supersedes_other "
        "CHECK (supersedes IS NULL OR supersedes <> id)"
    )
    # "Is this entry superseded?" is asked of every search candidate: answered from this index.
    op.execute(
        "CREATE INDEX entries_owner_supersedes ON entries (owner, supersedes) "
        "WHERE supersedes IS NOT NULL AND deleted_at IS NULL"
    )
    op.execute(
        "CREATE INDEX entries_owner_expires ON entries (owner, expires_at) WHERE expires_at IS NOT NULL"
    )


def downgrade() -> None:
    op.execute("DROP INDEX entries_owner_expires")
    op.execute("DROP INDEX entries_owner_supersedes")
    op.execute("ALTER TABLE entries DROP COLUMN supersedes, DROP COLUMN expires_at")
