"""How pgrecall errors reach an MCP client: ToolErrors that name the field and the rule."""

import logging
from collections.abc import Callable, Mapping
from typing import Any, TypeVar, cast

import anyio.to_thread
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import ValidationError
from pydantic_core import ErrorDetails

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


_NUMBER_ERRORS = {
    "int_parsing",
    "int_type",
    "int_from_float",
    "float_parsing",
    "float_type",
    "finite_number",
    "greater_than",
    "greater_than_equal",
    "less_than",
    "less_than_equal",
}


def _path(loc: tuple[int | str, ...]) -> str:
    out = str(loc[0])
    for part in loc[1:]:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def _branch(prop: Mapping[str, Any]) -> Mapping[str, Any]:
    """The non-null branch of a property that also admits null."""
    for option in prop.get("anyOf", ()):
        if option.get("type") != "null":
            return cast("Mapping[str, Any]", option)
    return prop


def _rule(error: ErrorDetails, prop: Mapping[str, Any]) -> str:
    kind, schema = error["type"], _branch(prop)
    if kind == "missing":
        return "required"
    if len(error["loc"]) == 1 and kind in _NUMBER_ERRORS and schema.get("type") in ("integer", "number"):
        noun = "an integer" if schema["type"] == "integer" else "a number"
        low, high = schema.get("minimum"), schema.get("maximum")
        if low is not None and high is not None:
            return f"must be {noun} between {low} and {high}"
        return f"must be {noun}"
    if len(error["loc"]) == 1 and kind == "literal_error" and "enum" in schema:
        return "must be one of " + ", ".join(str(v) for v in schema["enum"])
    message = error["msg"].removeprefix("Value error, ")
    if message.startswith("Input should be "):
        message = "must be " + message.removeprefix("Input should be ")
    return message[:1].lower() + message[1:]


def argument_errors(exc: ValidationError, input_schema: Mapping[str, Any] | None) -> str:
    """The SDK's argument validation failure as one line: `<field>: <rule>` per problem, "; "-joined.

    Never the rejected value (it is the caller's data) nor pydantic's documentation URL.
    """
    props: Mapping[str, Any] = (input_schema or {}).get("properties", {})
    seen: list[str] = []
    for error in exc.errors(include_url=False, include_input=False):
        loc = error["loc"] or ("arguments",)
        line = f"{_path(loc)}: {_rule(error, props.get(str(loc[0]), {}))}"
        if line not in seen:
            seen.append(line)
    return "; ".join(seen)
