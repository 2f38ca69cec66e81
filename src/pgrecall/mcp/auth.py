"""Bearer-token authentication for the HTTP transport, through the MCP SDK's TokenVerifier hook."""

from __future__ import annotations

import ipaddress
from typing import TYPE_CHECKING

import anyio.to_thread
from mcp.server.auth.provider import AccessToken

if TYPE_CHECKING:
    from pgrecall.services.tokens import TokenService

SCOPE = "pgrecall"


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

    def __init__(self, tokens: TokenService) -> None:
        self.tokens = tokens

    async def verify_token(self, token: str) -> AccessToken | None:
        """The SDK calls this for every HTTP request carrying a bearer token."""
        owner = await anyio.to_thread.run_sync(self.tokens.owner_of, token)
        if owner is None:
            return None
        return AccessToken(token=token, client_id=owner, scopes=[SCOPE], subject=owner)
