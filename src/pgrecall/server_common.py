"""Helpers shared by the tool modules."""

from collections.abc import Callable
from typing import Any, TypeVar

import anyio.to_thread
from mcp.server.mcpserver.exceptions import ToolError

from pgrecall.errors import DatabaseUnavailableError, InvalidInputError, NotFoundError, PgrecallError

T = TypeVar("T")


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


async def run_blocking(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run a blocking service call in a worker thread, turning pgrecall errors into tool errors."""
    try:
        return await anyio.to_thread.run_sync(lambda: fn(*args, **kwargs))
    except PgrecallError as exc:
        raise _tool_error(exc) from exc
