"""Request ids, structured call logs and Prometheus metrics for the MCP tools.

Logs carry tool, request id, latency, status and counts — never query or entry text
at INFO or above (assistants store private notes; logs are shipped elsewhere).
"""

from __future__ import annotations

import json
import logging
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

call_log = logging.getLogger("pgrecall.calls")

_LATENCY_BUCKETS = (0.002, 0.005, 0.01, 0.015, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message and the record's `fields`."""

    def format(self, record: logging.LogRecord) -> str:
        """Render the record as JSON."""
        data: dict[str, Any] = {
            "ts": round(record.created, 3),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        extra = getattr(record, "fields", None)
        if isinstance(extra, dict):
            data.update(extra)
        if record.exc_info:
            data["exc"] = self.formatException(record.exc_info)
        return json.dumps(data, ensure_ascii=False, default=str)


class QueryStringFilter(logging.Filter):
    """Drops the query string from uvicorn's access lines.

    Query strings carry what the log must not: search words (/ui/search?q=), entry filters, and the
    one-time sign-in code (/ui/signin/once?code=), a credential until it is spent.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        """Rewrite the path argument of an access record; every record passes."""
        args = record.args
        if record.name == "uvicorn.access" and isinstance(args, tuple) and len(args) >= 3:
            path = str(args[2])
            if "?" in path:
                record.args = (*args[:2], path.split("?", 1)[0] + "?…", *args[3:])
        return True


def configure_logging(level: str = "INFO") -> None:
    """JSON logs on stderr (stdout belongs to the MCP protocol on stdio)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    handler.addFilter(QueryStringFilter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    # Alembic logs seven "setup plugin …" INFO lines when the schema check first imports it:
    # noise at every start of a server, nothing was set up that an operator chose.
    logging.getLogger("alembic.runtime.plugins").setLevel(logging.WARNING)


class Metrics:
    """The server's Prometheus metrics, in a registry of its own (one per server instance)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.calls = Counter(
            "pgrecall_tool_calls",
            "Tool calls by tool and outcome: ok, rejected (a bad argument, before or in the tool), "
            "error (anything else).",
            ["tool", "status"],
            registry=self.registry,
        )
        self.errors = Counter(
            "pgrecall_tool_errors",
            "Failed tool calls by tool and kind (invalid_input, not_found, unavailable, internal).",
            ["tool", "kind"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "pgrecall_tool_latency_seconds",
            "Tool call latency.",
            ["tool"],
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.search_stage = Histogram(
            "pgrecall_search_stage_seconds",
            "Search latency per mode and stage (embed = query vector, sql = the hybrid statement).",
            ["mode", "stage"],
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.searches = Counter(
            "pgrecall_searches",
            "Searches by mode and whether they were degraded.",
            ["mode", "degraded"],
            registry=self.registry,
        )
        self.empty_searches = Counter(
            "pgrecall_searches_empty",
            "Searches that returned no hit, by mode.",
            ["mode"],
            registry=self.registry,
        )
        self.pending_vectors = Gauge(
            "pgrecall_pending_vectors",
            "Live entries without a vector of the active model.",
            registry=self.registry,
        )

    def exposition(self) -> bytes:
        """The text exposition format for /metrics."""
        return generate_latest(self.registry)


@dataclass
class Call:
    """One tool call being observed; tools add counts to `fields`."""

    tool: str
    request_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    started: float = field(default_factory=time.perf_counter)
    fields: dict[str, Any] = field(default_factory=dict)

    def elapsed_ms(self) -> float:
        """Milliseconds since the call started."""
        return (time.perf_counter() - self.started) * 1000


def outcome(kind: str) -> str:
    """A failed call's outcome in pgrecall_tool_calls: the caller's mistake, or ours/the system's."""
    return "rejected" if kind == "invalid_input" else "error"


def rejected(metrics: Metrics, tool: str, fields: list[str]) -> None:
    """Count and log a call the SDK refused for its arguments (the tool never ran): names, no values."""
    metrics.calls.labels(tool, "rejected").inc()
    metrics.errors.labels(tool, "invalid_input").inc()
    call_log.info(
        "tool call",
        extra={
            "fields": {
                "tool": tool,
                "request_id": uuid.uuid4().hex,
                "status": "rejected",
                "error_kind": "invalid_input",
                "rejected_fields": fields,
            }
        },
    )


@contextmanager
def observe(metrics: Metrics, tool: str) -> Iterator[Call]:
    """Time a tool call, count it, and log one structured line when it ends."""
    call = Call(tool)
    status, kind = "ok", None
    try:
        yield call
    except Exception as exc:
        kind = getattr(exc, "error_kind", "internal")
        status = outcome(kind)
        raise
    finally:
        elapsed = call.elapsed_ms()
        metrics.calls.labels(tool, status).inc()
        metrics.latency.labels(tool).observe(elapsed / 1000)
        if kind is not None:
            metrics.errors.labels(tool, kind).inc()
        fields = {
            "tool": tool,
            "request_id": call.request_id,
            "latency_ms": round(elapsed, 2),
            "status": status,
        }
        if kind is not None:
            fields["error_kind"] = kind
        fields.update(call.fields)
        call_log.info("tool call", extra={"fields": fields})
