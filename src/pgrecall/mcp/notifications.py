"""Telling subscribed clients that a pgrecall:// resource changed, after a write through a tool.

Two wires, both served:
- 2025-era clients (handshake, `resources/subscribe`): the session that subscribed to a URI gets
  `notifications/resources/updated` for it after its own writes.
- 2026-07-28 clients (`subscriptions/listen`): the SDK's listen streams read from a SubscriptionBus;
  OwnerScopedBus hands an event only to the streams opened by the owner whose write caused it, so
  one owner never learns when another writes.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

import anyio.lowlevel
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.server.subscriptions import ResourceUpdated, ServerEvent
from mcp.shared.exceptions import MCPError
from mcp_types import (
    INVALID_PARAMS,
    EmptyResult,
    ResourceUpdatedNotification,
    ResourceUpdatedNotificationParams,
    SubscribeRequestParams,
    UnsubscribeRequestParams,
)

log = logging.getLogger(__name__)

SCHEME = "pgrecall://"
STATS_URI = "pgrecall://stats"
TAGS_URI = "pgrecall://tags"
RECENT_URI = "pgrecall://recent"
ENTRY_TEMPLATE = "pgrecall://entry/{id}"
DOCUMENT_TEMPLATE = "pgrecall://document/{id}"
MAX_SUBSCRIPTIONS = 256  # per connection: each subscribed entry URI costs a set slot until it closes

# The request being handled when a tool runs: set by the middleware, read by announce_write.
_current: ContextVar[tuple[ChangeNotifier, ServerRequestContext[Any, Any]] | None] = ContextVar(
    "pgrecall_request", default=None
)


def entry_uri(entry_id: str) -> str:
    """The resource URI of one entry."""
    return ENTRY_TEMPLATE.replace("{id}", entry_id)


def _owner_key() -> str:
    # The same input current_owner() reads (the token's subject; no token: the server's one
    # default owner), so two streams share a key exactly when they act as the same owner.
    token = get_access_token()
    return token.subject if token is not None and token.subject else ""


class OwnerScopedBus:
    """A SubscriptionBus that delivers each event only to listen streams of the publishing owner."""

    def __init__(self) -> None:
        self._listeners: dict[object, tuple[str, Callable[[ServerEvent], None]]] = {}

    async def publish(self, event: ServerEvent) -> None:
        """Hand `event` to the listeners registered by the current owner."""
        owner = _owner_key()
        for who, listener in list(self._listeners.values()):
            if who != owner:
                continue
            try:
                listener(event)
            except Exception:  # one broken stream must not fail the write that published
                log.exception("subscription listener failed")
        await anyio.lowlevel.checkpoint()

    def subscribe(self, listener: Callable[[ServerEvent], None]) -> Callable[[], None]:
        """Register `listener` for the current owner (the listen request's); returns its removal."""
        token = object()
        self._listeners[token] = (_owner_key(), listener)

        def unsubscribe() -> None:
            self._listeners.pop(token, None)

        return unsubscribe


def _connection(ctx: ServerRequestContext[Any, Any]) -> object | None:
    # The SDK builds a new ServerSession per request; the connection behind it is what lives as
    # long as a client's session (no public accessor in mcp 2.3).
    return getattr(ctx.session, "_connection", None)


class ChangeNotifier:
    """Per-connection `resources/subscribe` sets, and the announcement after a write."""

    def __init__(self, bus: OwnerScopedBus) -> None:
        self.bus = bus
        self._subscribed: weakref.WeakKeyDictionary[object, set[str]] = weakref.WeakKeyDictionary()

    def install(self, server: MCPServer) -> None:
        """Serve resources/subscribe and resources/unsubscribe, and note each tool call's request."""
        lowlevel = server._lowlevel_server  # the SDK's MCPServer registers no subscribe handler
        lowlevel.add_request_handler("resources/subscribe", SubscribeRequestParams, self._subscribe)
        lowlevel.add_request_handler("resources/unsubscribe", UnsubscribeRequestParams, self._unsubscribe)
        server.middleware.append(self._middleware)

    async def _middleware(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.method != "tools/call":
            return await call_next(ctx)
        token = _current.set((self, ctx))
        try:
            return await call_next(ctx)
        finally:
            _current.reset(token)

    async def _subscribe(
        self, ctx: ServerRequestContext[Any, Any], params: SubscribeRequestParams
    ) -> EmptyResult:
        if not params.uri.startswith(SCHEME):
            raise MCPError(INVALID_PARAMS, f"uri: not a pgrecall resource: {params.uri[:200]}")
        connection = _connection(ctx)
        if connection is None:
            raise MCPError(INVALID_PARAMS, "resources/subscribe: not available on this transport")
        uris = self._subscribed.setdefault(connection, set())
        if params.uri not in uris and len(uris) >= MAX_SUBSCRIPTIONS:
            raise MCPError(INVALID_PARAMS, f"uri: at most {MAX_SUBSCRIPTIONS} subscriptions per session")
        uris.add(params.uri)
        return EmptyResult()

    async def _unsubscribe(
        self, ctx: ServerRequestContext[Any, Any], params: UnsubscribeRequestParams
    ) -> EmptyResult:
        connection = _connection(ctx)
        if connection is not None:
            self._subscribed.get(connection, set()).discard(params.uri)
        return EmptyResult()

    async def announce(self, ctx: ServerRequestContext[Any, Any], uris: list[str]) -> None:
        """Tell this connection's subscribers and this owner's listen streams that `uris` changed."""
        connection = _connection(ctx)
        wanted = self._subscribed.get(connection, set()) if connection is not None else set()
        for uri in uris:
            if uri in wanted:
                # On the write's own response stream: over HTTP the client may have no standalone
                # GET stream open, and the notification then reaches it before the tool result.
                await ctx.session.send_notification(
                    ResourceUpdatedNotification(params=ResourceUpdatedNotificationParams(uri=uri)),
                    related_request_id=ctx.request_id,
                )
            await self.bus.publish(ResourceUpdated(uri=uri))


async def announce_write(entry_id: str | None, *, document_id: str | None = None) -> None:
    """After a committed write to an entry or a document: notify subscribers of the resources it changed."""
    current = _current.get()
    if current is None:  # called outside a tool call (or resources are not registered)
        return
    notifier, ctx = current
    changed = [STATS_URI, TAGS_URI, RECENT_URI]
    if entry_id is not None:
        changed.append(entry_uri(entry_id))
    if document_id is not None:
        changed.append(DOCUMENT_TEMPLATE.replace("{id}", document_id))
    try:
        await notifier.announce(ctx, changed)
    except Exception:  # the write is committed: a client gone away must not turn it into an error
        log.warning("could not send resource change notifications", exc_info=True)
