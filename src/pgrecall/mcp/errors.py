"""How pgrecall errors reach an MCP client: ToolErrors that name the field and the rule."""

import logging
from collections.abc import Callable
from typing import Any, TypeVar

import anyio.to_thread
from mcp.server.mcpserver.exceptions import ToolError

from pgrecall.errors import DatabaseUnavailableError, InvalidInputError, NotFoundError, PgrecallError

T = TypeVar("T")
log = logging.getLogger(__name__)


def _tool_error(exc: PgrecallError) -> ToolError:
    error = ToolError(str(exc))
    kind = "internal"
    if isinstance(exc, InvalidInputError):
        kind = "invalid_input"
    elif isinstance(exc, NotFoundError):
        kind = "not_found"
    elif isinstance(exc, DatabaseUnavailableError):
        kind = "unavailable"
    error.error_kind = kind  # type: ignore[attr-defined]
    return error


def _unavailable(exc: Exception) -> ToolError:
    # PostgreSQL restarting, a dropped connection, no pooled connection within the pool's
    # timeout (PoolTimeout), a statement timeout: the caller can only retry, and should be
    # told so rather than get a bare internal error. The driver's message (socket paths,
    # host names) stays in the server log; the caller gets its type.
    log.warning("database call failed: %s: %s", type(exc).__name__, str(exc).strip()[:500])
    return _tool_error(
        DatabaseUnavailableError(f"database: unavailable or timed out ({type(exc).__name__}); retry shortly")
    )


async def run_blocking(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run a blocking service call in a worker thread, turning pgrecall and connection errors into
    tool errors."""
    try:
        return await anyio.to_thread.run_sync(lambda: fn(*args, **kwargs))
    except PgrecallError as exc:
        raise _tool_error(exc) from exc
    except Exception as exc:
        import psycopg  # already loaded by the time a call fails: the App uses it

        if isinstance(exc, psycopg.OperationalError):
            raise _unavailable(exc) from exc
        raise


def checked(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run a cheap input check on the event loop, turning pgrecall errors into tool errors."""
    try:
        return fn(*args, **kwargs)
    except PgrecallError as exc:
        raise _tool_error(exc) from exc
