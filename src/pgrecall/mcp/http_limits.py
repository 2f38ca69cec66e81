"""Connection limits of the HTTP server: how many, how many per client, how slow a header may be.

uvicorn accepts every connection and waits for a request header forever: a client that opens
many connections and sends one header byte every few seconds (slowloris) holds a descriptor
each, and once the process runs out, nothing else can open a file or a socket, health checks
and the database supervisor included. Its `limit_concurrency` answers 503 only once a request
header is complete, which such a client never sends. This protocol closes a connection at once
when the server or its client address is over the cap, and closes any connection whose request
header is not complete within the header timeout.
"""

from __future__ import annotations

import asyncio
import logging
import resource
from dataclasses import dataclass
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from pgrecall.config import Settings

log = logging.getLogger(__name__)

# Descriptors left to everything that is not an HTTP connection: the database pool, the model
# worker's socket, files being read, the supervisor's look at the pid file.
_FD_SHARE = 2
_REFUSAL_LOG_INTERVAL_S = 10.0


@dataclass(frozen=True)
class ConnectionLimits:
    """The caps one server applies."""

    max_connections: int
    max_per_client: int
    header_timeout_s: float

    @classmethod
    def within_fd_limit(
        cls, max_connections: int, max_per_client: int, header_timeout_s: float
    ) -> ConnectionLimits:
        """The configured caps, the total lowered to half the process's descriptor limit."""
        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft != resource.RLIM_INFINITY:
            max_connections = max(1, min(max_connections, soft // _FD_SHARE))
        return cls(max_connections, min(max_per_client, max_connections), header_timeout_s)


def limited_protocol(limits: ConnectionLimits) -> type[H11Protocol]:
    """An h11 protocol class (uvicorn's `http=`) enforcing `limits`."""
    refused = {"count": 0, "logged_at": -_REFUSAL_LOG_INTERVAL_S}

    class LimitedH11Protocol(H11Protocol):
        _header_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            if self._over_cap():
                self._refuse(transport)
                return
            self._arm_header_timer()

        def _over_cap(self) -> bool:
            if len(self.connections) > limits.max_connections:
                return True
            address = _address(self)
            if address is None:
                return False
            same = sum(1 for c in self.connections if _address(c) == address)
            return same > limits.max_per_client

        def _refuse(self, transport: asyncio.Transport) -> None:
            self.connections.discard(self)
            transport.abort()
            refused["count"] += 1
            now = self.loop.time()
            if now - refused["logged_at"] >= _REFUSAL_LOG_INTERVAL_S:  # one line per interval, not per socket
                log.warning(
                    "HTTP connections over the cap closed",
                    extra={
                        "fields": {
                            "refused": refused["count"],
                            "max_connections": limits.max_connections,
                            "max_per_client": limits.max_per_client,
                        }
                    },
                )
                refused["logged_at"] = now
                refused["count"] = 0

        def _arm_header_timer(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
            self._header_timer = self.loop.call_later(limits.header_timeout_s, self._header_timed_out)

        def _header_timed_out(self) -> None:
            self._header_timer = None
            # IDLE: no complete request header since the connection opened or its last response.
            if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
                self.transport.close()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing():
                self._arm_header_timer()

        def connection_lost(self, exc: Exception | None) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None
            super().connection_lost(exc)

    return LimitedH11Protocol


def _address(protocol: object) -> str | None:
    client = getattr(protocol, "client", None)
    return str(client[0]) if isinstance(client, tuple) and client else None


def uvicorn_options(settings: Settings) -> dict[str, Any]:
    """uvicorn.Config keyword arguments applying the settings' connection limits."""
    limits = ConnectionLimits.within_fd_limit(
        settings.http_max_connections,
        settings.http_max_connections_per_client,
        settings.http_header_timeout_s,
    )
    return {"http": limited_protocol(limits), "timeout_keep_alive": min(5.0, limits.header_timeout_s)}
