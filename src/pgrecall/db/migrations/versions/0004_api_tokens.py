"""bearer tokens for the HTTP transport

Revision ID: 0004_api_tokens
Revises: 0003_idempotency_key
Create Date: 2026-11-22

Only a SHA-256 of each token is stored (tokens are 256-bit random, so a fast hash is
enough: there is nothing to brute-force). The token is looked up before its owner is
known, hence a unique index on the hash alone (on Citus this is a reference table).
"""

from alembic import op

revision = "0004_api_tokens"
down_revision = "0003_idempotency_key"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
        CREATE TABLE api_tokens (
            owner        text        NOT NULL,
            id           uuid        NOT NULL DEFAULT uuidv7(),
            name         text        NOT NULL DEFAULT '',
            token_hash   text        NOT NULL,
            created_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
            last_used_at timestamptz,
            revoked_at   timestamptz,
            PRIMARY KEY (owner, id),
            CONSTRAINT api_tokens_hash_format CHECK (token_hash ~ '^[0-9a-f]{64}$')
        )
        """
    )
    op.execute("CREATE UNIQUE INDEX api_tokens_hash ON api_tokens (token_hash)")


def downgrade() -> None:
    op.execute("DROP TABLE api_tokens")
