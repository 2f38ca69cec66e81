"""Issue 39 point 8: while PostgreSQL is down, every HTTP route answers 503 with Retry-After.

A real `pgrecall serve --transport http` with tokens required, over an embedded PostgreSQL the
test stops and starts itself (no supervisor restarts it behind the test's back), reached over
loopback by plain HTTP clients and the page's client.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import suppress
from pathlib import Path

import httpx
import pytest

from pgrecall.db.embedded import EmbeddedServer
from tests.helpers.cli import new_token
from tests.helpers.subprocess_server import running_http_server
from tests.helpers.web import sign_in_with_token, ui_client

pytestmark = pytest.mark.slow

_INITIALIZE = (
    b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
    b'"capabilities":{},"clientInfo":{"name":"test","version":"0"}}}'
)
_MCP_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


def _env(server: EmbeddedServer, home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PGRECALL_")}
    env.update(
        PGRECALL_DATABASE_URL=server.url(),
        PGRECALL_HOME=str(home),
        PGRECALL_AUTH_REQUIRED="true",
        PGRECALL_EMBEDDER="usem3",
        PGRECALL_DB_CONNECT_TIMEOUT_S="2",
    )
    return env


def _answers(base: str, token: str, page_cookies: dict[str, str]) -> dict[str, httpx.Response]:
    bearer = {"Authorization": f"Bearer {token}"}
    cookie = {"Cookie": "; ".join(f"{k}={v}" for k, v in page_cookies.items())}
    with httpx.Client(base_url=base, timeout=60) as http:
        calls: dict[str, Callable[[], httpx.Response]] = {
            "healthz": lambda: http.get("/healthz"),
            "mcp": lambda: http.post("/mcp", content=_INITIALIZE, headers=_MCP_HEADERS | bearer),
            "metrics": lambda: http.get("/metrics", headers=bearer),
            "ui": lambda: http.get("/ui", headers=cookie),
            "ui/entries": lambda: http.get("/ui/entries", headers=cookie),
            "ui/search": lambda: http.get("/ui/search", params={"q": "backup"}, headers=cookie),
        }
        # At once: during the outage each waits out the connect timeout.
        with ThreadPoolExecutor(len(calls)) as pool:
            answers = {name: pool.submit(call) for name, call in calls.items()}
            return {name: answer.result() for name, answer in answers.items()}


def test_every_route_answers_503_with_retry_after_while_the_database_is_down(
    own_postgres: EmbeddedServer, tmp_path: Path
) -> None:
    env = _env(own_postgres, tmp_path / "home")
    token = new_token(env, "alice")
    with running_http_server(env, tmp_path / "server.log") as base, ui_client(base) as page:
        assert sign_in_with_token(page, token).status_code == 303
        before = _answers(base, token, page.cookies)
        assert {name: r.status_code for name, r in before.items()} == dict.fromkeys(before, 200)

        own_postgres.stop()
        assert own_postgres.wait_stopped(30)
        during = _answers(base, token, page.cookies)
        # Signing in needs the token table too: the form answers 503, not "unknown token".
        during["ui/signin"] = sign_in_with_token(ui_client(base), token)
        for name, response in during.items():
            assert response.status_code == 503, (name, response.status_code, response.text[:300])
            assert response.headers.get("retry-after", "").isdigit(), (name, response.headers)
            assert "Traceback" not in response.text

        own_postgres.pin()
        for _ in range(120):  # bounded: the pool reconnects on the first call after the restart
            with suppress(httpx.HTTPError):
                if httpx.get(f"{base}/healthz", timeout=10).status_code == 200:
                    break
            time.sleep(0.5)
        after = _answers(base, token, page.cookies)
        assert {name: r.status_code for name, r in after.items()} == dict.fromkeys(after, 200)
    assert "Traceback" not in (tmp_path / "server.log").read_text()
