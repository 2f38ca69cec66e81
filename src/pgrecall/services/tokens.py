"""Bearer tokens for the HTTP transport: made here, shown once, kept only as a hash."""

from __future__ import annotations

import builtins
import hashlib
import secrets
import uuid
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool

from pgrecall.domain.validation import check_owner
from pgrecall.store.tokens import TokenInfo, TokenStore

TOKEN_PREFIX = "pgr_"  # noqa: S105 - a public prefix, not a secret
MAX_TOKEN_CHARS = 200
MIN_TOKEN_SECRET_CHARS = 32


def new_token() -> str:
    """A fresh random token (shown once, never stored)."""
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def token_hash(token: str) -> str:
    """What the database keeps of a token."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def well_formed(token: str) -> bool:
    """True when `token` has pgrecall's shape (prefix + at least 32 URL-safe characters, bounded)."""
    return (
        token.startswith(TOKEN_PREFIX)
        and len(TOKEN_PREFIX) + MIN_TOKEN_SECRET_CHARS <= len(token) <= MAX_TOKEN_CHARS
    )


class TokenService:
    """Create, list, revoke and resolve tokens."""

    def __init__(self, pool: ConnectionPool[psycopg.Connection[dict[str, Any]]]) -> None:
        self.store = TokenStore(pool)

    def create(self, owner: str, name: str, token: str) -> TokenInfo:
        """Register `token` for `owner` (its hash only)."""
        return self.store.create(check_owner(owner), name, token_hash(token))

    def known(self, token: str) -> tuple[str, bool] | None:
        """(owner, revoked) of a registered token, or None."""
        return self.store.known(token_hash(token))

    def owner_of(self, token: str) -> str | None:
        """The owner an active token acts as; None for unknown, malformed or revoked tokens."""
        if not token.startswith(TOKEN_PREFIX) or len(token) > MAX_TOKEN_CHARS:
            return None
        return self.store.owner_of(token_hash(token))

    def list(self) -> builtins.list[TokenInfo]:
        """Every token's record (never the token)."""
        return self.store.list()

    def revoke(self, token_id: uuid.UUID) -> TokenInfo | None:
        """Revoke one token; None when there is no such active token."""
        return self.store.revoke(token_id)

    def active_count(self) -> int:
        """How many tokens can still authenticate."""
        return self.store.active_count()
