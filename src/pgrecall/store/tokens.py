"""Bearer tokens: only their SHA-256 is stored."""

from __future__ import annotations

import builtins
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool

SQL_CREATE = """
INSERT INTO api_tokens (owner, name, token_hash) VALUES (%(owner)s, %(name)s, %(token_hash)s)
RETURNING owner, id, name, created_at, last_used_at, revoked_at
"""

# last_used_at is refreshed at most once a minute so a busy client does not write on every call.
SQL_LOOKUP = """
UPDATE api_tokens SET last_used_at = statement_timestamp()
WHERE token_hash = %(token_hash)s AND revoked_at IS NULL
  AND (last_used_at IS NULL OR last_used_at < statement_timestamp() - interval '1 minute')
RETURNING owner
"""

SQL_ACTIVE_OWNER = "SELECT owner FROM api_tokens WHERE token_hash = %(token_hash)s AND revoked_at IS NULL"

SQL_LIST = """
SELECT owner, id, name, created_at, last_used_at, revoked_at FROM api_tokens
ORDER BY owner, created_at, id
"""

SQL_REVOKE = """
UPDATE api_tokens SET revoked_at = statement_timestamp() WHERE id = %(id)s AND revoked_at IS NULL
RETURNING owner, id, name, created_at, last_used_at, revoked_at
"""

SQL_EXISTS = "SELECT owner, revoked_at FROM api_tokens WHERE token_hash = %(token_hash)s"

SQL_COUNT_ACTIVE = "SELECT count(*) AS n FROM api_tokens WHERE revoked_at IS NULL"


@dataclass(frozen=True)
class TokenInfo:
    """A token's record (never the token itself)."""

    owner: str
    id: uuid.UUID
    name: str
    created_at: datetime
    last_used_at: datetime | None
    revoked_at: datetime | None


class TokenStore:
    """Token persistence."""

    def __init__(self, pool: ConnectionPool[psycopg.Connection[dict[str, Any]]]) -> None:
        self.pool = pool

    def create(self, owner: str, name: str, token_hash: str) -> TokenInfo:
        """Record a new token's hash."""
        with self.pool.connection() as conn:
            row = conn.execute(
                SQL_CREATE, {"owner": owner, "name": name, "token_hash": token_hash}
            ).fetchone()
        assert row is not None
        return TokenInfo(**row)

    def owner_of(self, token_hash: str) -> str | None:
        """Owner of an active token, or None (unknown or revoked)."""
        with self.pool.connection() as conn:
            row = conn.execute(SQL_LOOKUP, {"token_hash": token_hash}).fetchone()
            if row is None:
                row = conn.execute(SQL_ACTIVE_OWNER, {"token_hash": token_hash}).fetchone()
        return str(row["owner"]) if row is not None else None

    def known(self, token_hash: str) -> tuple[str, bool] | None:
        """(owner, revoked) of a token ever registered, or None."""
        with self.pool.connection() as conn:
            row = conn.execute(SQL_EXISTS, {"token_hash": token_hash}).fetchone()
        return (str(row["owner"]), row["revoked_at"] is not None) if row is not None else None

    def list(self) -> builtins.list[TokenInfo]:
        """Every token, revoked ones included."""
        with self.pool.connection() as conn:
            return [TokenInfo(**r) for r in conn.execute(SQL_LIST).fetchall()]

    def revoke(self, token_id: uuid.UUID) -> TokenInfo | None:
        """Revoke an active token; None if unknown or already revoked."""
        with self.pool.connection() as conn:
            row = conn.execute(SQL_REVOKE, {"id": token_id}).fetchone()
        return TokenInfo(**row) if row is not None else None

    def active_count(self) -> int:
        """How many tokens can be used now."""
        with self.pool.connection() as conn:
            row = conn.execute(SQL_COUNT_ACTIVE).fetchone()
        return int(row["n"]) if row else 0
