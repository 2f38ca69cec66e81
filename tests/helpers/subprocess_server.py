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


def run_pgrecall(env: dict[str, str], *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """`python -m pgrecall ARGS` in `env`, output captured as text; a hang fails after `timeout`."""
    return subprocess.run(
        [sys.executable, "-m", "pgrecall", *args], env=env, capture_output=True, text=True, timeout=timeout
    )


def free_port(host: str = "127.0.0.1") -> int:
    """A port nobody listens on at `host` (IPv4 or IPv6 literal)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


@contextmanager
def running_http_server(
    env: dict[str, str], log_path: Path, *extra: str, host: str = "127.0.0.1"
) -> Iterator[str]:
    """Start `pgrecall serve --transport http --host HOST` on a free port; yield its base URL once healthy."""
    port = free_port(host)
    log = log_path.open("w")
    proc = subprocess.Popen(
        [
            *(sys.executable, "-m", "pgrecall", "serve", "--transport", "http"),
            *("--host", host, "--port", str(port), *extra),
        ],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    # urllib sends the URL's host as Host: the bind address itself, which the server answers to.
    base = f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"
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
