"""Bearer-token authentication for the HTTP transport, through the MCP SDK's TokenVerifier hook."""

from __future__ import annotations

import hashlib
import ipaddress
import secrets

import anyio.to_thread
from mcp.server.auth.provider import AccessToken

from pgrecall.store.tokens import TokenStore

TOKEN_PREFIX = "pgr_"  # noqa: S105 - a public prefix, not a secret
SCOPE = "pgrecall"


def new_token() -> str:
    """A fresh random token (shown once, never stored)."""
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def token_hash(token: str) -> str:
    """What the database keeps of a token."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def is_loopback(host: str) -> bool:
    """True for 127.0.0.0/8, ::1 and localhost."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class DatabaseTokenVerifier:
    """Maps a bearer token to its owner; unknown or revoked tokens are refused (401)."""

    def __init__(self, store: TokenStore) -> None:
        self.store = store

    async def verify_token(self, token: str) -> AccessToken | None:
        """The SDK calls this for every HTTP request carrying a bearer token."""
        if not token.startswith(TOKEN_PREFIX) or len(token) > 200:
            return None
        owner = await anyio.to_thread.run_sync(self.store.owner_of, token_hash(token))
        if owner is None:
            return None
        return AccessToken(token=token, client_id=owner, scopes=[SCOPE], subject=owner)
