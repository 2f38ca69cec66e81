"""`pgrecall serve` as a real subprocess for tests: its environment, and an HTTP server that is up."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pgrecall.config import Settings


def server_env(settings: Settings) -> dict[str, str]:
    """The test environment with the PGRECALL_* variables pointing at `settings`' database."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PGRECALL_")}
    assert settings.database_url is not None
    env["PGRECALL_DATABASE_URL"] = settings.database_url.get_secret_value()
    env["PGRECALL_HOME"] = str(settings.home)
    env["PGRECALL_MODELS"] = settings.models
    return env


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def running_http_server(env: dict[str, str], log_path: Path, *extra: str) -> Iterator[str]:
    """Start `pgrecall serve --transport http` on a free port; yield its base URL once healthy."""
    port = _free_port()
    log = log_path.open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "pgrecall", "serve", "--transport", "http", "--port", str(port), *extra],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"{base}/healthz", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            assert proc.poll() is None, log_path.read_text()
            assert time.monotonic() < deadline, "server did not become healthy"
            time.sleep(0.2)
        yield base
    finally:
        proc.terminate()
        proc.wait(30)
        log.close()
    assert proc.returncode == 0, log_path.read_text()
