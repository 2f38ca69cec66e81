"""What a running server holds: the App (opened in the background on stdio), metrics, re-embedding.

A desktop client gives a new server seconds to answer `initialize`. Opening the App (the database,
the schema check, the pool) and importing what it needs takes longer than that on a small machine,
and several windows start their servers at once on few cores. So a stdio server answers
`initialize` first and starts opening the App (in a thread) with the client's next message; each
tool call waits for the App (up to a bound) before it runs.
"""

from __future__ import annotations

import functools
import inspect
import logging
import threading
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

import anyio.to_thread
from mcp.server.mcpserver.exceptions import ToolError

from pgrecall.mcp.observability import Metrics

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

    from pgrecall.app import App
    from pgrecall.config import Settings
    from pgrecall.services.maintenance import BackgroundReembed

log = logging.getLogger(__name__)
P = ParamSpec("P")
R = TypeVar("R")
OPEN_WAIT_S = 120.0  # a tool call waits this long for the database before it gives up


class Runtime:
    """The server's state: opened once per process, shared by every MCP session."""

    def __init__(
        self,
        app: App | None = None,
        *,
        settings: Settings | None = None,
        make_app: Callable[[], App] | None = None,
        reembed_interval_s: float = 30.0,
    ) -> None:
        if app is not None:
            self.settings: Settings = app.settings
        elif settings is not None and make_app is not None:
            self.settings = settings
        else:
            raise ValueError("give an App, or settings and make_app to build one later")
        self._app = app
        self._make_app = make_app
        self.metrics = Metrics()
        self.reembed_interval_s = reembed_interval_s
        self._reembed: BackgroundReembed | None = None
        self._opened = threading.Event()
        self._failure: str | None = None
        self._opening: threading.Thread | None = None
        self._opening_lock = threading.Lock()
        # Held while the App is built and while it is closed: close() in one thread and open() in
        # the opening thread never miss each other (an App built after close is never opened).
        self._closing_lock = threading.Lock()
        self._closing = False
        self.after_open: Callable[[], None] | None = None
        if app is not None and app.pool is not None:  # an App opened by the caller
            self._ready()

    @classmethod
    def deferred(
        cls, settings: Settings, make_app: Callable[[], App], *, reembed_interval_s: float = 30.0
    ) -> Runtime:
        """A runtime whose App is built and opened later, by open() (nothing heavy is imported now)."""
        return cls(settings=settings, make_app=make_app, reembed_interval_s=reembed_interval_s)

    @property
    def app(self) -> App:
        """The App (built and opened; tools reach it after wait_open())."""
        assert self._app is not None, "the App is not open yet"
        return self._app

    def _ready(self) -> None:
        self._reembed = self.app.background_reembed(
            on_pending=self.metrics.pending_vectors.set, interval_s=self.reembed_interval_s
        )
        self._opened.set()

    def open(self) -> None:
        """Open the App (blocking), then start what depends on it; records a failure for the tools."""
        try:
            with self._closing_lock:
                if self._closing:
                    raise RuntimeError("the server is stopping")
                if self._app is None:
                    assert self._make_app is not None
                    self._app = self._make_app()
                app = self._app
            app.open()
        except Exception as exc:
            self._failure = str(exc)
            self._opened.set()
            raise
        self._ready()

    def start_opening(self) -> None:
        """Open the App in a thread unless that has begun; `after_open` runs once it is open."""
        with self._opening_lock:
            if self._opening is not None or self._opened.is_set():
                return

            def run() -> None:
                try:
                    self.open()
                except Exception as exc:
                    log.error("could not open the database: %s", exc)
                    return
                if self.after_open is not None and not self._closing:
                    self.after_open()

            self._opening = threading.Thread(target=run, name="pgrecall-open", daemon=True)
            self._opening.start()

    async def wait_open(self) -> None:
        """Return once the App is open; a ToolError if it could not be opened (the message says why)."""
        if not self._opened.is_set():
            self.start_opening()
            await anyio.to_thread.run_sync(self._opened.wait, OPEN_WAIT_S)
        if self._failure is not None:
            raise ToolError(f"database: not available ({self._failure})")
        if not self._opened.is_set():
            raise ToolError("database: still starting; retry shortly")

    @property
    def reembed(self) -> BackgroundReembed:
        """The background re-embedding (exists once the App is open)."""
        assert self._reembed is not None, "the App is not open yet"
        return self._reembed

    @property
    def active_model(self) -> str | None:
        """Model of the active embedder (None: no embedder)."""
        return self.app.active_model

    @property
    def is_open(self) -> bool:
        """True once the App is open."""
        return self._opened.is_set() and self._failure is None

    def ping(self) -> None:
        """Raise unless the database answers (health checks)."""
        self.app.ping()

    def stop(self) -> None:
        """Stop the background work."""
        if self._reembed is not None:
            self._reembed.stop()

    def close(self) -> None:
        """Close the App (the pool, the database hold, the model worker hold) if it was built.

        An open under way in the background is not abandoned half-way: a database being acquired
        is waited for and released, and nothing is opened after this.
        """
        with self._closing_lock:
            self._closing = True
            app = self._app
        if app is not None:
            app.close()


def description_of(docstring: str) -> str:
    """A docstring as a tool description: one line per paragraph, without the source indentation."""
    paragraphs = inspect.cleandoc(docstring).split("\n\n")
    return "\n".join(" ".join(paragraph.split()) for paragraph in paragraphs)


def runtime_tool(
    server: MCPServer, runtime: Runtime, **options: Any
) -> Callable[[Callable[P, Awaitable[R]]], Callable[P, Awaitable[R]]]:
    """Like `server.tool(...)`, but the tool first waits for the App to be open."""

    def register(fn: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R]]:
        @functools.wraps(fn)
        async def guarded(*args: P.args, **kwargs: P.kwargs) -> R:
            await runtime.wait_open()
            return await fn(*args, **kwargs)

        if "description" not in options and fn.__doc__:
            options["description"] = description_of(fn.__doc__)
        server.tool(**options)(guarded)
        return guarded

    return register
