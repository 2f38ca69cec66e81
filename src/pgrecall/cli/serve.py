"""`pgrecall serve`: the MCP server over stdio (desktop clients) or streamable HTTP (teams)."""

from __future__ import annotations

import logging
import signal
import threading
from enum import StrEnum
from types import FrameType
from typing import TYPE_CHECKING, Annotated

import typer

from pgrecall.cli.common import fail, settings

if TYPE_CHECKING:
    from pgrecall.mcp.runtime import Runtime

log = logging.getLogger(__name__)


class Transport(StrEnum):
    """Transports `serve` offers."""

    stdio = "stdio"
    http = "http"


def _terminate_gracefully(signum: int, frame: FrameType | None) -> None:
    # SIGTERM otherwise ends the process without running `finally`, leaving the embedded
    # PostgreSQL held by a dead process until the next start prunes it.
    raise KeyboardInterrupt


def _warm_up(runtime: Runtime) -> None:
    """Have the shared model worker load the embedder and the detector before the first call needs them.

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
        str, typer.Option(help="DEBUG, INFO, WARNING or ERROR (logs go to stderr).")
    ] = "INFO",
) -> None:
    """Run the MCP server. On stdio nothing but protocol is written to stdout."""
    import anyio

    from pgrecall.app import App
    from pgrecall.errors import PgrecallError
    from pgrecall.mcp.auth import is_loopback
    from pgrecall.mcp.observability import configure_logging
    from pgrecall.mcp.runtime import Runtime
    from pgrecall.mcp.server import create_server

    configure_logging(log_level)
    current = settings()
    signal.signal(signal.SIGTERM, _terminate_gracefully)
    try:
        opened = App(current, restricted=True)
        opened.open()
    except PgrecallError as exc:
        fail(str(exc))
    runtime = Runtime(opened)
    try:
        auth_base_url = None
        if transport is Transport.http and (current.auth_required or not is_loopback(host)):
            if opened.tokens.active_count() == 0:
                fail(
                    f"authentication is required (PGRECALL_AUTH_REQUIRED or non-loopback --host {host}) "
                    "but no token exists; create one with: pgrecall token create --owner NAME"
                )
            shown = f"[{host}]" if ":" in host else host
            auth_base_url = f"http://{shown}:{port}"
        server = create_server(runtime, auth_base_url=auth_base_url)
        configure_logging(log_level)  # the SDK installs its own (rich) handler; ours writes JSON
        threading.Thread(target=_warm_up, args=(runtime,), name="pgrecall-warm-up", daemon=True).start()
        runtime.reembed.start()
        log.info(
            "serving",
            extra={"fields": {"transport": transport.value, "auth": auth_base_url is not None}},
        )
        if transport is Transport.stdio:
            anyio.run(server.run_stdio_async)
        else:
            import uvicorn

            asgi = server.streamable_http_app(host=host)
            config = uvicorn.Config(asgi, host=host, port=port, log_level=log_level.lower(), log_config=None)
            uvicorn.Server(config).run()
    except KeyboardInterrupt:
        pass
    finally:
        runtime.reembed.stop()
        opened.close()
        log.info("stopped")


def register(app: typer.Typer) -> None:
    """Add this module's commands to the root app."""
    app.command("serve")(serve)
