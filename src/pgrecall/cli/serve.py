"""`pgrecall serve`: the MCP server over stdio (desktop clients) or streamable HTTP (teams)."""

from __future__ import annotations

import logging
import socket
import sys
import threading
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from pgrecall.cli.common import fail, settings, stop_on_sigterm
from pgrecall.db.privatedir import ensure_private_dir, write_private_file

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

    from pgrecall.app import App
    from pgrecall.config import Settings
    from pgrecall.mcp.http_guard import HostPolicy
    from pgrecall.mcp.runtime import Runtime

log = logging.getLogger(__name__)

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")


def _log_level(value: str) -> str:
    # A click Choice would print usage and a boxed error; one line names the allowed levels.
    level = value.upper()
    if level not in LOG_LEVELS:
        fail(f"--log-level: {value!r} is not one of {', '.join(LOG_LEVELS)}", 2)
    return level


class Transport(StrEnum):
    """Transports `serve` offers."""

    stdio = "stdio"
    http = "http"


def _warm_up(runtime: Runtime) -> None:
    """Have the shared model worker load the embedder before the first search needs it.

    Only a request to another process: nothing here loads a model in this one, so the protocol
    is answered at once. In-process mode loads models on first use instead (a load there would
    hold the GIL, and the event loop with it).
    """
    try:
        runtime.app.warm_models()
    except Exception as exc:
        log.warning("warm-up failed (the first calls will be slower or degraded): %s", exc)


def serve(
    transport: Annotated[
        Transport, typer.Option(help="stdio for desktop clients, http for a team.")
    ] = Transport.stdio,
    host: Annotated[str, typer.Option(help="HTTP bind address.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535, help="HTTP port.")] = 8765,
    log_level: Annotated[
        str, typer.Option(callback=_log_level, help="DEBUG, INFO, WARNING or ERROR (logs go to stderr).")
    ] = "INFO",
    allowed_host: Annotated[
        list[str] | None,
        typer.Option(
            help="HTTP: a Host header value to accept besides the bind address (repeatable; adds to "
            "PGRECALL_HTTP_ALLOWED_HOSTS), e.g. the name clients use through a proxy."
        ),
    ] = None,
    allowed_origin: Annotated[
        list[str] | None,
        typer.Option(
            help="HTTP: a browser Origin (scheme://host[:port]) to accept (repeatable; adds to "
            "PGRECALL_HTTP_ALLOWED_ORIGINS)."
        ),
    ] = None,
    print_link: Annotated[
        bool,
        typer.Option(
            "--print-link",
            help="HTTP without tokens: print the one-time sign-in link alone on stdout (for scripts) "
            "instead of writing it to PGRECALL_HOME/ui/signin-link; never to the log.",
        ),
    ] = False,
) -> None:
    """Run the MCP server. On stdio nothing but protocol is written to stdout."""
    from pgrecall.mcp.observability import configure_logging
    from pgrecall.mcp.runtime import Runtime
    from pgrecall.mcp.server import create_server

    configure_logging(log_level)
    current = settings()
    policy = (
        _host_policy(current, host, port, allowed_host, allowed_origin)
        if transport is Transport.http
        else None
    )
    # Listening before anything prints (the sign-in link, "serving"): a client or a click that comes
    # before uvicorn has started waits in the backlog instead of being refused, and a port in use
    # fails here, before the database opens.
    sock = _listen(host, port) if policy is not None else None
    stop_on_sigterm()

    def make_app() -> App:
        from pgrecall.app import App

        return App(current, restricted=True)

    runtime = Runtime.deferred(current, make_app)

    def started() -> None:
        # The App is open: fill pending vectors, and have the worker load the models.
        runtime.reembed.start()
        _warm_up(runtime)

    try:
        auth_base_url = None
        if policy is None:
            # Answer the protocol at once; the database opens beside it (tools wait for it).
            runtime.after_open = started
        else:
            _open_or_fail(runtime)
            started()
            auth_base_url = _auth_base_url(runtime, host, port)
        server = create_server(runtime, auth_base_url=auth_base_url, read_paths=policy is None)
        if policy is not None:
            _mount_ui(server, runtime, host, port, codes_allowed=auth_base_url is None, print_link=print_link)
        configure_logging(log_level)  # the SDK installs its own (rich) handler; ours writes JSON
        log.info(
            "serving",
            extra={"fields": {"transport": transport.value, "auth": auth_base_url is not None}},
        )
        if policy is None:
            _serve_stdio(server)
        else:
            _serve_http(server, policy, runtime, host, port, log_level, sock)
    except KeyboardInterrupt:
        pass
    finally:
        if sock is not None:
            sock.close()
        runtime.stop()
        runtime.close()
        log.info("stopped")


def _host_policy(
    current: Settings, host: str, port: int, allowed_host: list[str] | None, allowed_origin: list[str] | None
) -> HostPolicy:
    """The Host and Origin values HTTP accepts: the bind address, the settings and the options."""
    from pgrecall.mcp.http_guard import HostPolicy

    try:
        return HostPolicy.for_bind(
            host,
            [current.http_allowed_hosts, *(allowed_host or [])],
            [current.http_allowed_origins, *(allowed_origin or [])],
            port,
        )
    except ValueError as exc:
        fail(f"PGRECALL_HTTP_ALLOWED_HOSTS/ORIGINS or --allowed-host/--allowed-origin: {exc}", 2)


def _auth_base_url(runtime: Runtime, host: str, port: int) -> str | None:
    """The URL tokens are checked for, or None when HTTP on loopback runs without tokens.

    Authentication is required by the setting or by a non-loopback bind; then a token must exist
    before the server listens, or nobody could ever call it.
    """
    from pgrecall.mcp.auth import is_loopback

    if not runtime.settings.auth_required and is_loopback(host):
        return None
    if runtime.app.tokens.active_count() == 0:
        fail(
            "authentication is required (PGRECALL_AUTH_REQUIRED or non-loopback --host "
            f"{host}) but no token exists; create one with: pgrecall token create --owner NAME"
        )
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}"


def _serve_stdio(server: MCPServer) -> None:
    """stdio for a client that started us; a person at a terminal is told what it waits for."""
    import anyio

    if sys.stdin.isatty():
        _serve_terminal(server)
    else:
        anyio.run(server.run_stdio_async)


def _serve_http(
    server: MCPServer,
    policy: HostPolicy,
    runtime: Runtime,
    host: str,
    port: int,
    log_level: str,
    sock: socket.socket | None,
) -> None:
    """Streamable HTTP under the Host/Origin guard and the request limits, on the listening socket."""
    import uvicorn

    from pgrecall.mcp.http_guard import guarded_app, max_request_bytes
    from pgrecall.mcp.http_limits import uvicorn_options

    if policy.any_ip_literal and not policy.hosts:
        log.warning(
            "wildcard bind: only IP addresses, loopback names and this machine's name are "
            "accepted as Host; set PGRECALL_HTTP_ALLOWED_HOSTS to the names clients use"
        )
    current = runtime.settings
    asgi = guarded_app(server, policy, max_request_bytes(current.max_text_chars))
    config = uvicorn.Config(
        asgi,
        host=host,
        port=port,
        log_level=log_level.lower(),
        log_config=None,
        **uvicorn_options(current),
    )
    uvicorn.Server(config).run(sockets=[sock] if sock is not None else None)


def _listen(host: str, port: int) -> socket.socket:
    """A socket bound to host:port and listening, as uvicorn would bind it; exits with a message if taken."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(2048)  # uvicorn's default backlog
    except OSError as exc:
        sock.close()
        fail(
            f"--host {host} --port {port}: cannot listen: {exc.strerror or exc}; choose another --port "
            "(or stop the process that holds it)"
        )
    return sock


def _mount_ui(
    server: MCPServer,
    runtime: Runtime,
    host: str,
    port: int,
    *,
    codes_allowed: bool,
    print_link: bool = False,
) -> str | None:
    """Serve the web page at /ui; without tokens, print a one-time sign-in link and return it."""
    from pgrecall.web.routes import mount_ui

    ui = mount_ui(server, runtime.app, codes_allowed=codes_allowed)
    if not codes_allowed:
        return None
    shown = f"[{host}]" if ":" in host else host
    owner = runtime.settings.owner
    link = f"http://{shown}:{port}/ui/signin/once?code={ui.sessions.issue_code(owner)}"
    _hand_over_link(link, owner, runtime.settings.home, print_link=print_link)
    return link


def _hand_over_link(link: str, owner: str, home: Path, *, print_link: bool = False) -> None:
    """Give the one-time link to the person, never to the log stream (stderr, collected as logs).

    A terminal on stdout is the person: the link is printed there. `--print-link` (a script that
    started the server reads its stdout): the link alone on a line of stdout. Otherwise (a
    service, a pipe) it goes to a file only this user can read, and the log says where.
    """
    path = home / "ui" / "signin-link"
    if print_link:
        path.unlink(missing_ok=True)
        typer.echo(link)
        return
    if sys.stdout.isatty():
        path.unlink(missing_ok=True)  # an earlier run's link: dead now, and not this one
        typer.echo(f"pgrecall: web page for owner {owner}, sign in once at {link}")
        return
    path = write_private_file(ensure_private_dir(path.parent) / path.name, link + "\n")
    typer.echo(
        f"pgrecall: web page for owner {owner}: the one-time sign-in link is in {path} "
        "(readable by this user only; valid once, for 10 minutes)",
        err=True,
    )


def _serve_terminal(server: MCPServer) -> None:
    """Serve stdio when a person started `serve` by hand: say what it waits for; Ctrl-C stops it.

    The server runs in a daemon thread, and the threads it starts are daemons too (they inherit
    it): one of them is blocked reading the terminal, cannot be interrupted, and would otherwise
    hold the first Ctrl-C (the event loop waits for that read before it can stop).
    """
    import anyio

    typer.echo(
        "pgrecall: waiting for an MCP client on stdin (this is meant to be started by an MCP client; "
        "Ctrl-C stops)",
        err=True,
    )
    failed: list[BaseException] = []

    def run() -> None:
        try:
            anyio.run(server.run_stdio_async)
        except BaseException as exc:
            failed.append(exc)

    thread = threading.Thread(target=run, name="mcp-stdio", daemon=True)
    thread.start()
    while thread.is_alive():  # Ctrl-C arrives here, in the main thread, as KeyboardInterrupt
        thread.join(0.5)
    if failed:
        raise failed[0]


def _open_or_fail(runtime: Runtime) -> None:
    from pgrecall.errors import PgrecallError

    try:
        runtime.open()
    except PgrecallError as exc:
        fail(str(exc))


def register(app: typer.Typer) -> None:
    """Add this module's commands to the root app."""
    app.command("serve")(serve)
