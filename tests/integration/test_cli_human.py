"""Issue 16: the human CLI — tables and text on a terminal, JSON when piped, ids by a part, serve by hand.

Where the process matters (a terminal, a pipe, a fresh home's database start, serve, completion),
commands run as `python -m pgrecall` subprocesses; "a terminal" is a real pseudo-terminal. Tests of
what a command answers run it in this process through typer's CliRunner: the same command code
from the same arguments and environment, without an interpreter start and imports per command. One
database serves the whole module; the embedder is an HTTP endpoint nobody listens on, so writes
keep their vectors pending and searches run lexical (no embedding model is loaded here).
"""

from __future__ import annotations

import contextlib
import json
import os
import pty
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pgrecall.db.embedded import EmbeddedServer
from tests.helpers.cli import run_here
from tests.helpers.postgres import TEMPLATE, _create_db, _drop_db
from tests.helpers.subprocess_server import free_port, run_pgrecall

SRC = Path(__file__).resolve().parents[2] / "src"
READ_BOUND_S = 120  # a hung command fails the test instead of blocking it


def _base_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PGRECALL_")}
    env.update(
        PYTHONPATH=str(SRC),
        PGRECALL_HOME=str(home),
        PGRECALL_MODELS="in-process",
        PGRECALL_EMBEDDER="http",
        PGRECALL_EMBEDDING_URL=f"http://127.0.0.1:{free_port()}/v1",
        PGRECALL_EMBEDDING_MODEL="unreachable",
        PGRECALL_EMBEDDING_DIM="8",
        PGRECALL_EMBEDDING_RETRIES="0",
        COLUMNS="120",
    )
    return env


@pytest.fixture(scope="module")
def env(pg_server: EmbeddedServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    name = _create_db(pg_server, TEMPLATE)
    env = _base_env(tmp_path_factory.mktemp("cli-human"))
    env["PGRECALL_DATABASE_URL"] = pg_server.url(name)
    yield env
    _drop_db(pg_server, name)


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return run_pgrecall(env, *args, timeout=READ_BOUND_S)


def _ok(env: dict[str, str], *args: str) -> str:
    result = run_here(env, *args)
    assert result.returncode == 0, result.stderr
    return result.stdout


def _process_ok(env: dict[str, str], *args: str) -> str:
    result = _cli(env, *args)
    assert result.returncode == 0, result.stderr
    return result.stdout


def _one_line_failure(env: dict[str, str], *args: str) -> str:
    result = run_here(env, *args)
    assert result.returncode != 0, result.stdout
    assert "Traceback" not in result.stderr, result.stderr
    lines = [line for line in result.stderr.strip().splitlines() if "WARNING" not in line]
    assert len(lines) == 1, result.stderr
    return lines[0]


def _read_until_eof(master: int, proc: subprocess.Popen[bytes]) -> str:
    chunks = []
    for _ in range(100_000):  # bounded; a command writes far fewer chunks
        ready, _, _ = select.select([master], [], [], READ_BOUND_S)
        assert ready, "no output and no exit"
        try:
            data = os.read(master, 4096)
        except OSError:  # EIO: the command exited and closed its end
            break
        if not data:
            break
        chunks.append(data)
    return b"".join(chunks).decode().replace("\r\n", "\n")


def _on_terminal(env: dict[str, str], *args: str) -> str:
    """Run a command with stdout and stderr on a pseudo-terminal; its output as the terminal shows it."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "pgrecall", *args],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=slave,
        stderr=slave,
    )
    os.close(slave)
    try:
        shown = _read_until_eof(master, proc)
    finally:
        os.close(master)
    assert proc.wait(timeout=READ_BOUND_S) == 0, shown
    return shown


@pytest.fixture(scope="module")
def stored(env: dict[str, str]) -> dict[str, dict[str, object]]:
    """Two entries written within seconds: UUIDv7 ids, so they share their first digits."""
    backup = json.loads(
        _ok(
            env,
            "add",
            "The backup window for the billing database is Sunday 02:00 UTC.",
            "--title",
            "Backup window",
            "-t",
            "ops",
            "-t",
            "db",
            "--kind",
            "fact",
            "--language",
            "en",
        )
    )
    lake = json.loads(_ok(env, "add", "Die Häuser am See sind im Winter still und leer.", "--language", "de"))
    return {"backup": backup, "lake": lake}


def test_list_and_search_are_tables_on_a_terminal(
    env: dict[str, str], stored: dict[str, dict[str, object]]
) -> None:
    backup, lake = str(stored["backup"]["id"]), str(stored["lake"]["id"])
    listed = _on_terminal(env, "list")
    header, *rows = [line for line in listed.splitlines() if line.strip()]
    assert header.split() == ["ID", "UPDATED", "KIND", "LANGUAGE", "TAGS", "TITLE", "/", "TEXT"]
    assert rows[0].split()[0] == lake[-8:] and rows[1].split()[0] == backup[-8:]  # newest first
    assert "Backup window" in rows[1] and "ops,db" in rows[1] and "english" in rows[1]
    assert "{" not in listed
    found = _on_terminal(env, "search", "backup window", "--mode", "lexical")
    header, first = found.splitlines()[:2]
    assert header.split()[:3] == ["#", "SCORE", "ID"]
    assert first.split()[0] == "1" and first.split()[2] == backup[-8:]


def test_get_and_stats_read_as_text_on_a_terminal(
    env: dict[str, str], stored: dict[str, dict[str, object]]
) -> None:
    backup = str(stored["backup"]["id"])
    shown = _on_terminal(env, "get", backup[-8:])
    head, body = shown.split("\n\n", 1)
    assert f"id:       {backup}" in head.splitlines() and "title:    Backup window" in head.splitlines()
    assert body.strip() == "The backup window for the billing database is Sunday 02:00 UTC."
    stats = _on_terminal(env, "stats").splitlines()
    assert any(line.startswith("entries:") and line.split()[1] == "2" for line in stats), stats
    # --json wins on a terminal too.
    assert json.loads(_on_terminal(env, "stats", "--json"))["entries"] == 2


def test_piped_output_stays_json(env: dict[str, str], stored: dict[str, dict[str, object]]) -> None:
    backup = str(stored["backup"]["id"])
    listed = json.loads(_process_ok(env, "list"))["entries"]
    assert {e["id"] for e in listed} == {backup, stored["lake"]["id"]}
    assert json.loads(_process_ok(env, "get", backup))["title"] == "Backup window"
    assert json.loads(_process_ok(env, "stats"))["entries"] == 2
    hits = json.loads(_process_ok(env, "search", "billing database", "--mode", "lexical"))["hits"]
    assert [h["id"] for h in hits] == [backup]


def test_ids_by_a_unique_start_or_end(env: dict[str, str], stored: dict[str, dict[str, object]]) -> None:
    backup, lake = str(stored["backup"]["id"]), str(stored["lake"]["id"])
    assert json.loads(_ok(env, "get", backup[-8:]))["id"] == backup
    assert json.loads(_ok(env, "get", lake[:24]))["id"] == lake  # past the shared time part
    assert backup[:4] == lake[:4]  # UUIDv7: created within seconds
    ambiguous = _one_line_failure(env, "get", backup[:4])
    assert "several entries" in ambiguous and backup in ambiguous and lake in ambiguous
    unknown = "0000000f" if not {backup[-8:], lake[-8:]} & {"0000000f"} else "0000000e"
    assert "no entry" in _one_line_failure(env, "get", unknown)
    assert "too short" in _one_line_failure(env, "get", backup[-3:])
    assert "hex digits" in _one_line_failure(env, "get", "not-an-id")
    # delete and restore take a part too; restore finds the deleted entry.
    assert _ok(env, "delete", lake[-6:]).strip() == f"deleted {lake}"
    assert "already deleted" in _one_line_failure(env, "delete", lake[-6:])
    assert _ok(env, "restore", lake[-6:]).strip() == f"restored {lake}"


def test_search_takes_the_search_tool_options(
    env: dict[str, str], stored: dict[str, dict[str, object]]
) -> None:
    unknown = _one_line_failure(env, "search", "backup", "--language", "xx")
    # A filter detects nothing: leaving it out searches every language.
    assert "unknown language 'xx'" in unknown and "detect" not in unknown and "every language" in unknown
    backup = str(stored["backup"]["id"])
    query = ("search", "backup billing winter", "--mode", "lexical")
    assert [h["id"] for h in json.loads(_ok(env, *query, "--tag", "ops"))["hits"]] == [backup]
    lake = str(stored["lake"]["id"])
    assert [h["id"] for h in json.loads(_ok(env, *query, "--kind", "note"))["hits"]] == [lake]
    decided = json.loads(_ok(env, *query, "--kind", "decision"))
    assert decided["hits"] == [] and decided["applied"]["filters"] == {"kind": "decision"}
    assert decided["reason"].startswith("filters keep 0 of ")
    assert json.loads(_ok(env, *query, "--updated-before", "2000-01-01"))["hits"] == []
    explained = json.loads(_ok(env, *query, "--top-k", "1", "--explain"))["hits"]
    assert len(explained) == 1 and explained[0]["breakdown"]["lexical_rank"] == 1
    assert "--created-after" in _one_line_failure(env, *query, "--created-after", "last tuesday")
    assert "mode" in _one_line_failure(env, "search", "backup", "--mode", "fuzzy")


def test_search_by_document_gives_n_documents(pg_server: EmbeddedServer, tmp_path: Path) -> None:
    name = _create_db(pg_server, TEMPLATE)
    try:
        env = _base_env(tmp_path / "home")
        env["PGRECALL_DATABASE_URL"] = pg_server.url(name)
        sections = "\n\n".join(
            f"## Boiler {i}\n\n" + f"Descale boiler {i} with citric acid every quarter. " * 25
            for i in range(12)
        )
        manual = tmp_path / "manual.md"
        manual.write_text(f"# Boiler manual\n\n{sections}\n", encoding="utf-8")
        _ok(env, "ingest", str(manual))
        for who in ("Ana", "Ben"):
            _ok(env, "add", f"{who} checks the boiler pressure on Mondays.")
        query = ("search", "boiler", "--mode", "lexical", "--top-k", "3", "--json")
        flat = json.loads(_ok(env, *query))["hits"]
        assert len(flat) == 3 and len({h["document_id"] for h in flat}) == 1
        assert flat[0]["section_path"][0] == "Boiler manual"
        grouped = json.loads(_ok(env, *query, "--by-document"))["hits"]
        assert len(grouped) == 3
        assert grouped[0]["document_id"] == flat[0]["document_id"]
        assert len(grouped[0]["more_chunks"]) == 2
        assert [h["document_id"] for h in grouped[1:]] == [None, None]
        assert all(h["more_chunks"] == [] for h in grouped[1:])
    finally:
        _drop_db(pg_server, name)


def test_update_by_a_part_with_expected_version(
    env: dict[str, str], stored: dict[str, dict[str, object]]
) -> None:
    backup = str(stored["backup"]["id"])
    version = int(json.loads(_ok(env, "get", backup))["version"])
    updated = json.loads(
        _ok(
            env,
            "update",
            backup[-8:],
            "--title",
            "Backups",
            "--tag",
            "ops",
            "--expected-version",
            str(version),
        )
    )
    assert (updated["id"], updated["title"], updated["tags"], updated["version"]) == (
        backup,
        "Backups",
        ["ops"],
        version + 1,
    )
    conflict = _one_line_failure(
        env, "update", backup[-8:], "--title", "Again", "--expected-version", str(version)
    )
    assert "version" in conflict
    assert json.loads(_ok(env, "get", backup))["title"] == "Backups"
    shown = _on_terminal(env, "update", backup[-8:], "--no-tags")
    assert shown.strip().startswith(f"updated {backup} (version {version + 2}")


def test_version_flag_completion_and_plain_help(env: dict[str, str]) -> None:
    assert _process_ok(env, "--version") == _process_ok(env, "version")
    # typer asks shellingham for the parent shell, which a test runner started from a daemon or CI
    # may not have; its own switch makes --show-completion take the shell as a value instead.
    no_detection = {**env, "_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1"}
    script = _process_ok(no_detection, "--show-completion", "bash")
    assert "_PGRECALL_COMPLETE" in script and "complete" in script
    words = _process_ok(
        {**env, "_PGRECALL_COMPLETE": "complete_bash", "COMP_WORDS": "pgrecall se", "COMP_CWORD": "1"}
    )
    assert words.split() == ["search", "serve"]
    for command in ("list", "search", "update", "serve"):
        shown = _process_ok(env, command, "--help")
        assert "<bool>" not in shown and "<str>" not in shown and "<int>" not in shown, shown
    listing = _process_ok(env, "list", "--help")
    assert "Only entries of this kind" in listing and "Only entries with this source (any case)" in listing


def _controlling_terminal() -> None:
    # The pty becomes the child's controlling terminal, so ^C typed there is a SIGINT to it.
    import fcntl
    import termios

    os.setsid()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)
    # A runner started in the background (no job control) hands its children SIGINT ignored.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _poll(condition: object, what: str) -> None:
    for _ in range(600):  # bounded: 600 polls, 0.2 s apart
        if callable(condition) and condition():
            return
        time.sleep(0.2)
    pytest.fail(f"timed out waiting for {what}")


def test_serve_on_a_terminal_says_so_and_stops_on_the_first_ctrl_c(pg_home: Path) -> None:
    home = pg_home / f"serve-tty-{time.monotonic_ns()}"
    env = _base_env(home)
    assert _cli(env, "migrate", "upgrade").returncode == 0
    server = EmbeddedServer(home)
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "pgrecall", "serve"],
        env=env,
        stdin=slave,
        stdout=slave,
        stderr=slave,
        preexec_fn=_controlling_terminal,
    )
    os.close(slave)
    seen = b""

    def read_some() -> None:
        nonlocal seen
        if select.select([master], [], [], 0)[0]:
            with contextlib.suppress(OSError):  # EIO once serve has exited
                seen += os.read(master, 65536)

    try:
        _poll(lambda: read_some() or b"waiting for an MCP client on stdin" in seen, "the waiting line")
        # A client's first two messages: the App (and the embedded PostgreSQL) opens after them.
        hello = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        }
        os.write(master, (json.dumps(hello) + "\n").encode())
        os.write(master, b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
        _poll(lambda: read_some() or server.running(), "the embedded server to start")
        os.write(master, b"\x03")  # one Ctrl-C, typed on the terminal
        _poll(lambda: read_some() or proc.poll() is not None, "serve to stop after one Ctrl-C")
        read_some()
        released = server.wait_stopped(60)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=READ_BOUND_S)
        os.close(master)
        server.stop()
    text = seen.decode(errors="replace")
    assert "Traceback" not in text, text
    assert proc.returncode == 0, text
    assert released, "the embedded PostgreSQL was not released (the last holder stops it)"


def test_activity_and_tags_commands(env: dict[str, str]) -> None:
    # The module's other tests share this database: only what this test adds is asserted on.
    added = json.loads(
        _ok(env, "add", "The activity command lists this entry.", "--tag", "ActivityCheck", "--tag", "cli")
    )
    recent = json.loads(_ok(env, "activity", "--since", "1h"))
    assert (added["id"], "added") in {(c["id"], c["change"]) for c in recent["changes"]}
    found = json.loads(_ok(env, "tags", "--prefix", "activityc"))
    assert found == {"tags": [{"tag": "ActivityCheck", "entries": 1}], "truncated": False}
    assert "since: not understood" in _one_line_failure(env, "activity", "--since", "last week")


def test_links_expiry_and_supersedes_on_the_command_line(env: dict[str, str]) -> None:
    old = json.loads(_ok(env, "add", "The standup is at 09:15 in room Kepler.", "--title", "Standup v1"))
    new = json.loads(
        _ok(
            env,
            "add",
            "The standup is at 09:30 in room Galilei.",
            "--supersedes",
            old["id"][-8:],
            "--expires",
            "30d",
        )
    )
    assert new["supersedes"] == old["id"] and new["expires_at"] is not None
    listed = {e["id"] for e in json.loads(_ok(env, "list", "--limit", "200"))["entries"]}
    assert new["id"] in listed and old["id"] not in listed
    every = {e["id"] for e in json.loads(_ok(env, "list", "--limit", "200", "--superseded"))["entries"]}
    assert old["id"] in every

    task = json.loads(_ok(env, "add", "Book room Galilei for the standup.", "--title", "Booking task"))
    assert _ok(env, "link", task["id"][-8:], "depends on", new["id"]).startswith("linked ")
    assert _ok(env, "link", task["id"], "depends_on", new["id"]).startswith("already linked ")
    related = json.loads(_ok(env, "related", new["id"]))["related"]
    assert [(r["id"], r["relation"], r["direction"]) for r in related] == [(task["id"], "depends_on", "in")]
    assert "unknown relation" in _one_line_failure(env, "link", task["id"], "loves", new["id"])
    assert _ok(env, "unlink", task["id"], new["id"]).strip() == "removed depends_on"
    assert json.loads(_ok(env, "related", new["id"]))["related"] == []
    cleared = json.loads(_ok(env, "update", new["id"], "--supersedes", "", "--expires", ""))
    assert cleared["supersedes"] is None and cleared["expires_at"] is None


def test_add_on_a_terminal_says_the_database_is_starting(pg_home: Path) -> None:
    home = pg_home / f"add-tty-{time.monotonic_ns()}"
    env = _base_env(home)
    try:
        first = _on_terminal(env, "add", "The first note of a new home.", "--language", "en")
        assert "pgrecall: creating the database in" in first, first
        again = _on_terminal(env, "add", "A second note once the database exists.", "--language", "en")
        assert "pgrecall: starting the database…" in again, again
        assert "creating" not in again, again
        piped = _cli(env, "add", "A piped note says nothing about the start.", "--language", "en")
        assert piped.returncode == 0, piped.stderr
        assert "database" not in piped.stderr, piped.stderr
    finally:
        EmbeddedServer(home).stop()


def test_db_status_is_text_on_a_terminal_and_json_when_piped(pg_home: Path) -> None:
    home = pg_home / f"db-status-{time.monotonic_ns()}"
    env = _base_env(home)
    fresh = _on_terminal(env, "db", "status")
    assert "server:" in fresh and "not created yet" in fresh and "{" not in fresh, fresh
    try:
        assert _cli(env, "db", "start").returncode == 0
        shown = _on_terminal(env, "db", "status")
        assert "running, kept by `pgrecall db start`" in shown and "url:" in shown, shown
        assert json.loads(_on_terminal(env, "db", "status", "--json"))["running"] is True
        piped = json.loads(_process_ok(env, "db", "status"))
        assert piped["running"] is True and piped["pinned"] is True and piped["home"] == str(home)
    finally:
        EmbeddedServer(home).stop()
