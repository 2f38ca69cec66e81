"""What a running server holds: the open App, its metrics, and the background re-embedding."""

from __future__ import annotations

from pgrecall.app import App
from pgrecall.mcp.observability import Metrics
from pgrecall.services.maintenance import BackgroundReembed


class Runtime:
    """The server's state: opened once per process, shared by every MCP session."""

    def __init__(self, app: App, *, reembed_interval_s: float = 30.0) -> None:
        self.app = app
        self.metrics = Metrics()
        self.reembed = BackgroundReembed(
            app.store,
            app.embedder,
            app.settings.owner,
            on_pending=self.metrics.pending_vectors.set,
            interval_s=reembed_interval_s,
        )

    @property
    def active_model(self) -> str | None:
        """Model of the active embedder (None: no embedder)."""
        return self.app.active_model

    def ping(self) -> None:
        """Raise unless the database answers (health checks)."""
        self.app.ping()
