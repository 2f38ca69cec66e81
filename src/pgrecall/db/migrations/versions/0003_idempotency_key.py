"""idempotency keys for add_entry

Revision ID: 0003_idempotency_key
Revises: 0002_lexical_stats
Create Date: 2026-11-22

A unique partial index on (owner, idempotency_key): two servers writing the same key
at once end with one row; the loser's INSERT … ON CONFLICT DO NOTHING reads the winner.
"""

from alembic import op

revision = "0003_idempotency_key"
down_revision = "0002_lexical_stats"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE entries ADD COLUMN idempotency_key text")
    op.execute(
        "ALTER TABLE entries ADD CONSTRAINT entries_idempotency_key_length "
        "CHECK (idempotency_key IS NULL OR length(idempotency_key) BETWEEN 1 AND 200)"
    )
    op.execute(
        "CREATE UNIQUE INDEX entries_owner_idempotency_key ON entries (owner, idempotency_key) "
        "WHERE idempotency_key IS NOT NULL"
    )


def downgrade() -> None:
    op.execute("DROP INDEX entries_owner_idempotency_key")
    op.execute("ALTER TABLE entries DROP COLUMN idempotency_key")
