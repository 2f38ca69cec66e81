"""libpq connection strings: a bounded connect, and one-line reasons when connecting fails."""

from __future__ import annotations

from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import psycopg
from psycopg.conninfo import conninfo_to_dict

TIMEOUT_SETTING = "PGRECALL_DB_CONNECT_TIMEOUT_S"
URL_HINT = "check that the server runs and PGRECALL_DATABASE_URL names it (or unset it for the embedded one)"


def libpq_timeout(seconds: float) -> int:
    """connect_timeout as libpq reads it: whole seconds, and libpq treats anything below 2 as 2."""
    return max(2, round(seconds))


def with_connect_timeout(url: str, seconds: float) -> str:
    """`url` with connect_timeout set, unless the URL already chooses one (the operator's choice wins)."""
    timeout = libpq_timeout(seconds)
    if not url.startswith(("postgresql://", "postgres://")):
        # key=value form
        return url if "connect_timeout" in url else f"{url} connect_timeout={timeout}"
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    if any(key == "connect_timeout" for key, _ in query):
        return url
    query.append(("connect_timeout", str(timeout)))
    # safe="/": a socket directory in ?host= stays readable for psql users and logs.
    return urlunsplit(parts._replace(query=urlencode(query, safe="/")))


def connect_timeout_of(url: str) -> int | None:
    """The connect_timeout a URL carries, if any."""
    if url.startswith(("postgresql://", "postgres://")):
        values = [v for k, v in parse_qsl(urlsplit(url).query) if k == "connect_timeout"]
    else:
        values = [w.split("=", 1)[1] for w in url.split() if w.startswith("connect_timeout=")]
    try:
        return int(values[-1]) if values else None
    except ValueError:
        return None


def _over_unix_socket(url: str) -> bool:
    # The embedded server's URLs name a socket directory; an operator's URL usually a host.
    try:
        host = conninfo_to_dict(url).get("host") or ""
    except psycopg.ProgrammingError:
        return False
    return str(host).startswith("/")


def describe_failure(reason: str, url: str) -> str:
    """`cannot connect to PostgreSQL: …`, naming the timeout when that is what ended the attempt.

    For a server reached over the network (PGRECALL_DATABASE_URL) the line ends with where to fix it.
    """
    first = reason.strip().splitlines()[0] if reason.strip() else "unknown error"
    timeout = connect_timeout_of(url)
    hint = "" if _over_unix_socket(url) else f"; {URL_HINT}"
    if timeout is not None and "timeout" in reason.lower():
        return (
            f"cannot connect to PostgreSQL: no answer within the {timeout} s connect timeout "
            f"({TIMEOUT_SETTING}): {first}{hint}"
        )
    return f"cannot connect to PostgreSQL: {first}{hint}"
