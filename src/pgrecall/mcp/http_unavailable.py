"""503 with Retry-After on every HTTP route while the database is unavailable.

Routes that catch a database failure themselves (pages, /healthz, tool calls) answer 503 or a tool
error; this layer adds the Retry-After such 503s lack, and turns a database failure that escapes a
route into a 503 too. The one that escapes in practice is the bearer-token check: the MCP SDK's
authentication middleware calls the token verifier, a pool timeout during a PostgreSQL restart
propagates, and Starlette's error middleware answers 500 before re-raising it. That 500 is held
here until the exception says what it was: a database failure replaces it with a 503; anything
else lets it through unchanged.

Why a 503 for the token check and a tool error for a tool call: before the token is checked
nothing is known about the caller, and a 401 would tell a client to drop its token; 503 with
Retry-After is what HTTP clients and proxies retry on. Once a request is authenticated, a tool
call's answer travels inside a 200 response (JSON or an event stream); there a tool error saying
"database: unavailable ... retry shortly" keeps the MCP session alive and reaches the model,
where a failed HTTP status would end the client's transport.
"""

from __future__ import annotations

import logging

import psycopg
from starlette.datastructures import MutableHeaders
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from pgrecall.errors import DatabaseUnavailableError

log = logging.getLogger(__name__)

# The embedded server's supervisor restarts a dead postmaster within a few seconds, and the pool
# reconnects on the first call after it: a client waiting this long usually finds it back.
RETRY_AFTER_S = 5


def is_database_failure(exc: BaseException) -> bool:
    """A failure only waiting can cure: PostgreSQL down, restarting, or no pooled connection in time."""
    # psycopg_pool's PoolTimeout and TooManyRequests are OperationalErrors too.
    return isinstance(exc, DatabaseUnavailableError | psycopg.OperationalError)


class UnavailableAsRetry:
    """ASGI middleware: every 503 carries Retry-After; an escaping database failure becomes one."""

    def __init__(self, app: ASGIApp, retry_after_s: int = RETRY_AFTER_S) -> None:
        self.app = app
        self.retry_after = str(retry_after_s)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass the request on; rewrite its answer as described in the module docstring."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        held: list[Message] = []  # a 500 not yet sent: it may be a database failure's
        started = False

        async def send_or_hold(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                if message["status"] == 500:
                    held.append(message)
                    return
                if message["status"] == 503:
                    headers = MutableHeaders(scope=message)
                    headers.setdefault("Retry-After", self.retry_after)
                started = True
            elif held:
                held.append(message)
                return
            await send(message)

        try:
            await self.app(scope, receive, send_or_hold)
        except Exception as exc:
            if started or not is_database_failure(exc):
                await _flush(held, send)
                raise
            log.warning(
                "database unavailable for an HTTP request",
                extra={"fields": {"path": scope.get("path"), "error": type(exc).__name__}},
            )
            response = PlainTextResponse(
                "the database is unavailable; retry shortly",
                status_code=503,
                headers={"Retry-After": self.retry_after},
            )
            await response(scope, receive, send)
            return
        await _flush(held, send)


async def _flush(held: list[Message], send: Send) -> None:
    for message in held:
        await send(message)
    held.clear()
