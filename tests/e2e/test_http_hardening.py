"""The HTTP transport against a hostile neighbour: foreign Host/Origin headers, oversized bodies,
and the CLI's one-line answers to bad options and bad configuration."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from pgrecall.config import Settings
from pgrecall.mcp.http_guard import HostPolicy, max_request_bytes
from tests.helpers.mcp_calls import call
from tests.helpers.subprocess_server import run_pgrecall, running_http_server
from tests.helpers.subprocess_server import server_env as _env

pytestmark = pytest.mark.anyio

_MCP_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
_INITIALIZE = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "raw-test", "version": "0"},
        },
    }
).encode()


def _request(
    host: str, port: int, method: str, path: str, headers: dict[str, str], body: bytes | None = None
) -> tuple[int, bytes]:
    """One raw request with exactly these headers (Host included), to the bind address."""
    conn = http.client.HTTPConnection(host, port, timeout=30)
    try:
        conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        for name, value in headers.items():
            conn.putheader(name, value)
        if body is not None:
            conn.putheader("Content-Length", str(len(body)))
        conn.endheaders(body)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


@contextmanager
def _serve(env: dict[str, str], log_path: Path, host: str, *extra: str) -> Iterator[int]:
    """`pgrecall serve --transport http --host HOST` on a free port; yields the port once healthy."""
    with running_http_server(env, log_path, *extra, host=host) as base:
        yield int(base.rsplit(":", 1)[1])


async def _session_works(url: str, headers: dict[str, str]) -> None:
    http = httpx2.AsyncClient(headers=headers, timeout=60)
    async with Client(streamable_http_client(url, http_client=http)) as client:
        assert (await call(client, "stats"))["owner"] == "default"


@pytest.mark.parametrize("bind", ["127.0.0.2", "0:0:0:0:0:0:0:1"])
async def test_foreign_host_and_origin_refused_on_every_loopback_bind(
    settings: Settings, tmp_path: Path, bind: str
) -> None:
    env = _env(settings) | {"PGRECALL_HTTP_ALLOWED_HOSTS": "memory.test, other.test:9"}
    with _serve(env, tmp_path / "server.log", bind) as port:
        shown = f"[{bind}]" if ":" in bind else bind
        right = {"Host": f"{shown}:{port}"}
        evil = {"Host": "evil.example", "Origin": "http://evil.example"}
        for method, path, body in (
            ("POST", "/mcp", _INITIALIZE),
            ("GET", "/healthz", None),
            ("GET", "/metrics", None),
        ):
            headers = _MCP_HEADERS if body else {}
            assert _request(bind, port, method, path, headers | {"Host": "evil.example"}, body)[0] == 421, (
                path
            )
            assert _request(bind, port, method, path, headers | evil, body)[0] == 421, path
            assert (
                _request(bind, port, method, path, headers | right | {"Origin": "http://evil.example"}, body)[
                    0
                ]
                == 403
            ), path
            assert (
                _request(bind, port, method, path, headers | {"Host": f"other.test:{port}"}, body)[0] == 421
            )
        # The bind address in another spelling, the loopback names, and the configured extra host.
        for value in (
            "[::1]:{p}",
            "localhost:{p}",
            "127.0.0.1",
            "memory.test:{p}",
            "other.test:9",
            "MEMORY.TEST.",
        ):
            assert _request(bind, port, "GET", "/healthz", {"Host": value.format(p=port)})[0] == 200, value
        own_origin = {"Origin": f"http://{shown}:{port}"}
        assert _request(bind, port, "GET", "/healthz", right | own_origin)[0] == 200
        url = f"http://{shown}:{port}/mcp"
        await _session_works(url, {})
        await _session_works(url, {"Host": f"memory.test:{port}"})


async def test_cli_allowed_host_and_origin(settings: Settings, tmp_path: Path) -> None:
    extra = ("--allowed-host", "cli.test", "--allowed-origin", "https://app.test")
    with _serve(_env(settings), tmp_path / "server.log", "127.0.0.2", *extra) as port:
        assert _request("127.0.0.2", port, "GET", "/healthz", {"Host": "cli.test"})[0] == 200
        ok = {"Host": f"cli.test:{port}", "Origin": "https://app.test"}
        assert _request("127.0.0.2", port, "GET", "/healthz", ok)[0] == 200
        assert (
            _request("127.0.0.2", port, "GET", "/healthz", ok | {"Origin": "https://app.test:8443"})[0] == 403
        )
        assert _request("127.0.0.2", port, "GET", "/healthz", ok | {"Origin": "null"})[0] == 403


def test_wildcard_policy_accepts_ip_literals_and_the_allow_list_only() -> None:
    policy = HostPolicy.for_bind("0.0.0.0", ["memory.example.com:443"], ["https://memory.example.com"])
    assert (
        policy.host_ok("10.0.0.5:8765") and policy.host_ok("[fe80::1]:8765") and policy.host_ok("localhost")
    )
    assert policy.host_ok("memory.example.com") and policy.host_ok("memory.example.com:443")
    assert not policy.host_ok("memory.example.com:8443") and not policy.host_ok("evil.example")
    assert not policy.host_ok(None) and not policy.host_ok("")
    assert policy.origin_ok(None) and policy.origin_ok("https://memory.example.com:443")
    assert not policy.origin_ok("http://10.0.0.5:8765") and not policy.origin_ok("https://evil.example")
    with pytest.raises(ValueError, match="allowed origin"):
        HostPolicy.for_bind("127.0.0.1", [], ["memory.example.com"])


def test_body_cap_formula() -> None:
    # 12 bytes per character (escaped astral code point) over text+title+tags+source+key,
    # 6 × the metadata limit, 16 KiB of envelope.
    assert max_request_bytes(100_000) == 12 * (100_000 + 500 + 64 * 103 + 2000 + 200) + 6 * 65_536 + 16_384
    assert max_request_bytes(1000) < 4 * 1024 * 1024  # below the SDK's own 4 MiB default


def _answer_then_hang_up(sock: socket.socket) -> tuple[str, bool]:
    """The response's head, and whether the server then closed the connection (EOF or reset)."""
    data = b""
    for _ in range(1000):  # bounded: a short response arrives in a few reads
        try:
            chunk = sock.recv(4096)
        except ConnectionResetError:
            return data.decode(errors="replace"), True
        if not chunk:
            return data.decode(errors="replace"), True
        data += chunk
    return data.decode(errors="replace"), False


async def test_oversized_bodies_get_413_before_being_read(settings: Settings, tmp_path: Path) -> None:
    env = _env(settings) | {"PGRECALL_MAX_TEXT_CHARS": "1000"}
    cap = max_request_bytes(1000)
    with _serve(env, tmp_path / "server.log", "127.0.0.2") as port:
        head = (
            f"POST {{path}} HTTP/1.1\r\nHost: 127.0.0.2:{port}\r\nContent-Type: application/json\r\n"
            "Accept: application/json, text/event-stream\r\n{length}\r\n"
        )
        # Declared too big: refused on the headers alone, not one body byte sent, and hung up on.
        for path in ("/mcp", "/metrics", "/healthz"):
            with socket.create_connection(("127.0.0.2", port), timeout=30) as sock:
                sock.sendall(head.format(path=path, length=f"Content-Length: {cap + 1}\r\n").encode())
                answer, closed = _answer_then_hang_up(sock)
            assert answer.startswith("HTTP/1.1 413") and closed, (path, answer)
        # Chunked: the answer comes once the cap is passed, while the body is still unfinished.
        chunk = 64 * 1024
        with socket.create_connection(("127.0.0.2", port), timeout=30) as sock:
            sock.sendall(head.format(path="/mcp", length="Transfer-Encoding: chunked\r\n").encode())
            sent = 0
            for _ in range(cap // chunk + 2):  # bounded: just past the cap
                sock.sendall(b"%x\r\n" % chunk + b"x" * chunk + b"\r\n")
                sent += chunk
                if sent > cap:
                    break
            assert cap < sent <= cap + chunk
            answer, closed = _answer_then_hang_up(sock)
            assert answer.startswith("HTTP/1.1 413") and closed, answer
        # A body just under the cap is read in full and handed to the protocol layer.
        body = b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}'.ljust(cap, b" ")
        status, _ = _request(
            "127.0.0.2", port, "POST", "/mcp", _MCP_HEADERS | {"Host": f"127.0.0.2:{port}"}, body
        )
        assert status != 413
        # A text at the limit, every character an astral one, still fits through a real session.
        async with Client(f"http://127.0.0.2:{port}/mcp") as client:
            added = await call(client, "add_entry", text="😀" * 1000, language="en")
            assert added["id"]


def test_invalid_log_level_is_one_line(settings: Settings) -> None:
    result = run_pgrecall(_env(settings), "serve", "--log-level", "verbose")
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert (
        result.stderr.strip() == "pgrecall: --log-level: 'verbose' is not one of DEBUG, INFO, WARNING, ERROR"
    )


def test_config_errors_are_one_line_each(tmp_path: Path) -> None:
    env = _env_without_db(tmp_path) | {"PGRECALL_POOL_MAX_SIZE": "0", "PGRECALL_DATABASE_URL": "mysql://x"}
    for args in (("serve",), ("serve", "--transport", "http"), ("config",), ("stats",)):
        result = run_pgrecall(env, *args)
        assert result.returncode == 2, args
        assert "Traceback" not in result.stderr and "Value error" not in result.stderr
        assert "errors.pydantic.dev" not in result.stderr
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 2, result.stderr
        assert any("PGRECALL_POOL_MAX_SIZE" in line and "1" in line for line in lines)
        assert any("PGRECALL_DATABASE_URL" in line and "postgresql://" in line for line in lines)


def _env_without_db(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PGRECALL_")}
    return env | {"PGRECALL_HOME": str(tmp_path / "home"), "PGRECALL_MODELS": "in-process"}


def test_malformed_allow_list_is_one_line(tmp_path: Path) -> None:
    env = _env_without_db(tmp_path) | {"PGRECALL_HTTP_ALLOWED_HOSTS": "memory.test, bad:port"}
    result = run_pgrecall(env, "serve", "--transport", "http", "--port", "1")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines() == [
        "pgrecall: PGRECALL_HTTP_ALLOWED_HOSTS/ORIGINS or --allowed-host/--allowed-origin: "
        "allowed host 'bad:port' is not host[:port]"
    ]


def _answer_and_how_it_ended(sock: socket.socket) -> tuple[str, str]:
    """The whole answer, and "eof" (a clean close) or "reset"."""
    data = b""
    for _ in range(10_000):  # bounded: a short response arrives in a few reads
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            return data.decode(errors="replace"), "reset"
        if not chunk:
            return data.decode(errors="replace"), "eof"
        data += chunk
    return data.decode(errors="replace"), "open"


def test_refused_origin_reads_the_body_then_closes_cleanly(settings: Settings, tmp_path: Path) -> None:
    # A browser-like client sends its body while the refusal is on its way: if the server hung up
    # with that body unread, the kernel would answer with a reset and the client lose the 403.
    body = b"csrf=x&text=" + b"y" * 200_000
    with _serve(_env(settings), tmp_path / "server.log", "127.0.0.2") as port:
        for path in ("/ui/signin", "/mcp"):
            head = (
                f"POST {path} HTTP/1.1\r\nHost: 127.0.0.2:{port}\r\nOrigin: http://evil.example\r\n"
                f"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {len(body)}\r\n\r\n"
            ).encode()
            with socket.create_connection(("127.0.0.2", port), timeout=30) as sock:
                sock.sendall(head + body[:100])
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    sock.sendall(body[100:])
                answer, ended = _answer_and_how_it_ended(sock)
            assert answer.startswith("HTTP/1.1 403"), (path, answer[:200])
            assert ended == "eof", (path, ended)
