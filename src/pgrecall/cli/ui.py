"""`pgrecall ui`: the web page on this machine's store, for one person, opened in the browser."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from pgrecall.cli.common import settings, stop_on_sigterm

if TYPE_CHECKING:
    from pgrecall.app import App

HOST = "127.0.0.1"


def ui(
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port on 127.0.0.1 (0: any free port).")] = 0,
    browser: Annotated[bool, typer.Option(help="Open the sign-in link in the default browser.")] = True,
    log_level: Annotated[str, typer.Option(help="DEBUG, INFO, WARNING or ERROR.")] = "WARNING",
    print_link: Annotated[
        bool,
        typer.Option(
            "--print-link",
            help="Print the one-time sign-in link alone on stdout (for scripts); never to the log.",
        ),
    ] = False,
) -> None:
    """Serve the web page on loopback for the configured owner; prints a one-time sign-in link."""
    import webbrowser

    import uvicorn

    from pgrecall.cli.serve import (
        _listen,
        _log_level,
        _mount_ui,
        _open_or_fail,
        _warm_up,
    )
    from pgrecall.mcp.http_guard import HostPolicy, guarded_app, max_request_bytes
    from pgrecall.mcp.http_limits import uvicorn_options
    from pgrecall.mcp.observability import configure_logging
    from pgrecall.mcp.runtime import Runtime
    from pgrecall.mcp.server import create_server

    level = _log_level(log_level)
    configure_logging(level)
    current = settings()

    def make_app() -> App:
        from pgrecall.app import App

        return App(current, restricted=True)

    # Listening before anything prints: with port 0 the link must name the port really taken, and a
    # click that comes before uvicorn has started waits in the backlog instead of being refused.
    sock = _listen(HOST, port)
    taken = int(sock.getsockname()[1])
    stop_on_sigterm()
    runtime = Runtime.deferred(current, make_app)
    try:
        _open_or_fail(runtime)
        runtime.reembed.start()
        _warm_up(runtime)
        server = create_server(runtime)
        link = _mount_ui(server, runtime, HOST, taken, codes_allowed=True, print_link=print_link)
        configure_logging(level)
        if browser and link is not None:
            webbrowser.open(link)
        typer.echo("pgrecall: Ctrl-C stops the page", err=True)
        policy = HostPolicy.for_bind(HOST, port=taken)
        asgi = guarded_app(server, policy, max_request_bytes(current.max_text_chars))
        config = uvicorn.Config(asgi, log_level=level.lower(), log_config=None, **uvicorn_options(current))
        uvicorn.Server(config).run(sockets=[sock])
    except KeyboardInterrupt:
        pass
    finally:
        sock.close()
        runtime.stop()
        runtime.close()


def register(app: typer.Typer) -> None:
    """Add this module's commands to the root app."""
    app.command("ui")(ui)
