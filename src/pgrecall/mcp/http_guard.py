"""What every HTTP request must pass before any route sees it: its Host, its Origin, its size.

DNS rebinding: a page on evil.example whose name re-resolves to this machine makes the browser
send `Host: evil.example` to our port. Refusing Host names we do not answer to (and Origins we
do not serve) closes that, for every bind address, whether tokens are required or not. The MCP
SDK's own check only switches on for 127.0.0.1/localhost/::1 and only guards /mcp; this guard
wraps the whole application (/mcp, /healthz, /metrics and anything added later).

Wildcard binds (0.0.0.0, ::) cannot know the names clients use: they accept the loopback names,
this machine's host name, any IP-literal Host (a literal cannot be re-pointed by DNS, so it
covers the machine's own addresses without enumerating them), and the configured allow-list.
"""

from __future__ import annotations

import ipaddress
import logging
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from starlette.datastructures import Headers
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from pgrecall.domain.validation import (
    MAX_IDEMPOTENCY_KEY_CHARS,
    MAX_METADATA_BYTES,
    MAX_SOURCE_CHARS,
    MAX_TAG_CHARS,
    MAX_TAGS,
    MAX_TITLE_CHARS,
)
from pgrecall.mcp.http_unavailable import UnavailableAsRetry

log = logging.getLogger(__name__)

ANY_PORT = -1
_WILDCARDS = frozenset({"", "0.0.0.0", "::"})  # noqa: S104 - names of wildcard binds, compared only
_LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
_DEFAULT_PORTS = {"http": 80, "https": 443}

# Worst-case bytes one character of a string costs inside a JSON request: an astral code point
# (emoji, rare CJK) sent by an encoder that escapes non-ASCII (Python's json.dumps default) is a
# surrogate pair, "\ud83d\ude00" = 12 bytes. Control characters escape to 6, UTF-8 is at most 4.
ESCAPED_CHAR_BYTES = 12
# The JSON-RPC envelope, field names, the other small arguments (kind, language, ids, limits) and
# the JSON punctuation between them: generous, it is a few hundred bytes in practice.
ENVELOPE_BYTES = 16 * 1024
# Metadata is limited by its compact JSON size; escaping non-ASCII in transit grows a UTF-8
# sequence of 2-4 bytes to at most 12 (×6 for 2-byte sequences, the worst ratio).
METADATA_ESCAPE_FACTOR = 6


def max_request_bytes(max_text_chars: int) -> int:
    """The largest request body any tool call within the limits can need (413 above it).

    text + title + tags (each quoted, comma-separated) + source + idempotency key, each character
    at its worst-case escaped size, plus metadata at its worst escaping, plus the envelope:
        12 × (max_text_chars + 500 + 64 × (100 + 3) + 2000 + 200) + 6 × 65 536 + 16 KiB
    = 1 742 672 bytes (~1.7 MB) for the default 100 000 characters. Texts that normalize shorter
    (whitespace runs, decomposed accents) count at their raw length here: for ASCII text the ×12
    leaves room for ~12× the limit in raw characters.
    """
    chars = (
        max_text_chars
        + MAX_TITLE_CHARS
        + MAX_TAGS * (MAX_TAG_CHARS + 3)
        + MAX_SOURCE_CHARS
        + MAX_IDEMPOTENCY_KEY_CHARS
    )
    return ESCAPED_CHAR_BYTES * chars + METADATA_ESCAPE_FACTOR * MAX_METADATA_BYTES + ENVELOPE_BYTES


def _name(raw: str) -> str:
    # One spelling per host: lower case, no trailing dot, IP literals in their compressed form
    # (so 0:0:0:0:0:0:0:1, ::1 and [::1] are one host).
    name = raw.strip().lower().rstrip(".")
    if name.startswith("[") and name.endswith("]"):
        name = name[1:-1]
    try:
        return ipaddress.ip_address(name).compressed
    except ValueError:
        return name


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def split_host(value: str) -> tuple[str, int | None] | None:
    """`host[:port]`, `[v6][:port]` or a bare IPv6 literal → (normalized name, port); None if malformed.

    A port of `*` (allow-list entries) becomes ANY_PORT.
    """
    value = value.strip()
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            return None
        name, rest = value[1:end], value[end + 1 :]
        if rest and not rest.startswith(":"):
            return None
        port_text = rest[1:] if rest else None
    elif value.count(":") > 1:
        name, port_text = value, None
    else:
        name, sep, port_text_raw = value.partition(":")
        port_text = port_text_raw if sep else None
    if not name:
        return None
    if port_text is None:
        return _name(name), None
    if port_text == "*":
        return _name(name), ANY_PORT
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        return None
    return _name(name), int(port_text)


def _split_origin(value: str) -> tuple[str, str, int] | None:
    # (scheme, normalized name, effective port) of scheme://host[:port]; ANY_PORT for ":*".
    value = value.strip().lower().rstrip("/")
    any_port = value.endswith(":*")
    if any_port:
        value = value[:-2]
    try:
        parts = urlsplit(value)
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in _DEFAULT_PORTS or not parts.hostname or parts.path or parts.query:
        return None
    effective = ANY_PORT if any_port else (port or _DEFAULT_PORTS[parts.scheme])
    return parts.scheme, _name(parts.hostname), effective


def _entries(values: Iterable[str]) -> list[str]:
    return [v.strip() for value in values for v in value.split(",") if v.strip()]


@dataclass(frozen=True)
class HostPolicy:
    """The Host and Origin values one server accepts."""

    own_names: frozenset[str]  # any port as Host; as an Origin's host only with the server's port
    hosts: frozenset[tuple[str, int | None]]  # configured: port None or ANY_PORT = any port
    origins: frozenset[tuple[str, str, int]]  # configured (scheme, name, port or ANY_PORT)
    any_ip_literal: bool  # wildcard binds: any IP-literal Host is this machine's own address
    port: int | None = None  # the server's port; None: not known, any port (own names only)

    @classmethod
    def for_bind(
        cls, bind: str, hosts: Iterable[str] = (), origins: Iterable[str] = (), port: int | None = None
    ) -> HostPolicy:
        """The policy of a server bound to `bind`:`port`, plus the extra allowed hosts and origins.

        Malformed entries raise ValueError naming them.
        """
        bound = _name(bind)
        wildcard = bound in _WILDCARDS
        own = set() if wildcard else {bound}
        if wildcard or bound == "localhost" or (_is_ip(bound) and ipaddress.ip_address(bound).is_loopback):
            own |= _LOOPBACK_NAMES
        if wildcard:
            own.add(_name(socket.gethostname()))
        parsed_hosts = set()
        for entry in _entries(hosts):
            host = split_host(entry)
            if host is None:
                raise ValueError(f"allowed host {entry!r} is not host[:port]")
            parsed_hosts.add(host)
        parsed_origins = set()
        for entry in _entries(origins):
            origin = _split_origin(entry)
            if origin is None:
                raise ValueError(f"allowed origin {entry!r} is not http(s)://host[:port]")
            parsed_origins.add(origin)
        return cls(frozenset(own), frozenset(parsed_hosts), frozenset(parsed_origins), wildcard, port)

    def host_ok(self, header: str | None) -> bool:
        """True when a Host header names this server."""
        host = split_host(header) if header else None
        if host is None:
            return False
        name, port = host
        if name in self.own_names or (self.any_ip_literal and _is_ip(name)):
            return True
        if (name, None) in self.hosts or (name, ANY_PORT) in self.hosts:
            return True
        if port is None:  # a browser omits the scheme's default port
            return any((name, p) in self.hosts for p in _DEFAULT_PORTS.values())
        return (name, port) in self.hosts

    def origin_ok(self, header: str | None) -> bool:
        """True when there is no Origin (not a browser) or it is one this server serves."""
        if header is None:
            return True
        origin = _split_origin(header)
        if origin is None:
            return False
        scheme, name, port = origin
        # The port too: a page served from another port of 127.0.0.1 is another origin, and could
        # otherwise post forms here (login CSRF, sign-out).
        if name in self.own_names and (self.port is None or port == self.port):
            return True
        return (scheme, name, port) in self.origins or (scheme, name, ANY_PORT) in self.origins


class HttpGuard:
    """ASGI middleware: Host and Origin checks, then the body cap, in front of every route."""

    def __init__(self, app: ASGIApp, policy: HostPolicy, max_body_bytes: int) -> None:
        self.app = app
        self.policy = policy
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Refuse foreign hosts (421), origins (403) and oversized bodies (413), else pass on."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        if not self.policy.host_ok(headers.get("host")):
            await _refuse(
                421, "Invalid Host header", scope, receive, send, drain_bytes=self._drainable(headers)
            )
        elif not self.policy.origin_ok(headers.get("origin")):
            await _refuse(
                403, "Invalid Origin header", scope, receive, send, drain_bytes=self._drainable(headers)
            )
        elif _declared_size(headers) > self.max_body_bytes:
            await _refuse(413, "Request body too large", scope, receive, send)
        else:
            await self._capped(scope, receive, send)

    def _drainable(self, headers: Headers) -> int:
        # A body no larger than an accepted request's may be read and dropped; a larger declared
        # one is not worth reading.
        return self.max_body_bytes if _declared_size(headers) <= self.max_body_bytes else 0

    async def _capped(self, scope: Scope, receive: Receive, send: Send) -> None:
        # Chunked bodies declare no size: count while reading, stop at the first byte over the cap.
        # The body is buffered (≤ the cap) and replayed, so no route starts on a body later refused.
        body = bytearray()
        first: list[Message] = []
        while True:
            message = await receive()
            if message["type"] != "http.request":
                first.append(message)
                break
            body += message.get("body", b"")
            if len(body) > self.max_body_bytes:
                await _refuse(413, "Request body too large", scope, receive, send)
                return
            if not message.get("more_body", False):
                first.insert(0, {"type": "http.request", "body": bytes(body), "more_body": False})
                break

        async def replay() -> Message:
            return first.pop(0) if first else await receive()

        await self.app(scope, replay, send)


def _declared_size(headers: Headers) -> int:
    value = headers.get("content-length", "")
    return int(value) if value.isdigit() else 0


async def _refuse(
    status: int, reason: str, scope: Scope, receive: Receive, send: Send, *, drain_bytes: int = 0
) -> None:
    # A refused request's body is read (up to `drain_bytes`) before the answer: closing a socket
    # with unread data makes the kernel send a reset instead of a clean close, and the client then
    # loses the answer ("Connection reset by peer" while it still sends). Beyond the bound, or for
    # a body refused for its size, `Connection: close` hangs up without reading the rest, which a
    # client could make endless.
    log.warning("refused request", extra={"fields": {"status": status, "path": scope.get("path")}})
    await _drain(receive, drain_bytes)
    response = PlainTextResponse(reason, status_code=status, headers={"Connection": "close"})
    await response(scope, receive, send)


async def _drain(receive: Receive, limit: int) -> None:
    read = 0
    while read < limit:
        message = await receive()
        if message["type"] != "http.request" or not message.get("more_body", False):
            return
        read += len(message.get("body", b""))


def guarded_app(server: MCPServer, policy: HostPolicy, max_body_bytes: int) -> ASGIApp:
    """The streamable-HTTP application of `server` behind an HttpGuard."""
    inner = server.streamable_http_app(
        max_request_body_size=max_body_bytes,
        # Off here because HttpGuard applies the same check, stricter, to every route; the SDK's
        # would otherwise refuse the configured extra hosts on a 127.0.0.1 bind.
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    return HttpGuard(UnavailableAsRetry(inner), policy, max_body_bytes)
