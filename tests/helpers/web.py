"""A client of the /ui page for tests, over real HTTP (httpx, no browser)."""

from __future__ import annotations

import re
import stat
from html import unescape
from http.cookies import SimpleCookie
from pathlib import Path
from types import TracebackType
from typing import Any

import httpx

_HIDDEN = re.compile(r'name="(csrf|expected_version)" value="([^"]*)"')


def hidden_fields(html: str) -> dict[str, str]:
    """The hidden form fields of a page (the last one of each name wins)."""
    return {name: unescape(value) for name, value in _HIDDEN.findall(html)}


class UiClient:
    """Keeps the page's cookies as a browser on loopback does.

    The cookies are Secure; httpx (like Python's cookiejar) sends Secure cookies over https only,
    while browsers count http://127.0.0.1 as a secure context and send them. Redirects are not
    followed: tests look at them.
    """

    def __init__(self, base: str) -> None:
        self.http = httpx.Client(base_url=base, follow_redirects=False, timeout=60)
        self.cookies: dict[str, str] = {}

    def __enter__(self) -> UiClient:
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.http.close()

    def _send(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        headers = dict(kwargs.pop("headers", {}))
        if self.cookies:
            headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        response = self.http.request(method, path, headers=headers, **kwargs)
        for line in response.headers.get_list("set-cookie"):
            for name, morsel in SimpleCookie(line).items():
                if morsel["max-age"] == "0" or not morsel.value:
                    self.cookies.pop(name, None)
                else:
                    self.cookies[name] = morsel.value
        return response

    def get(self, path: str, **kwargs: Any) -> httpx.Response:
        """GET with the cookies held."""
        return self._send("GET", path, **kwargs)

    def post(self, path: str, **kwargs: Any) -> httpx.Response:
        """POST with the cookies held."""
        return self._send("POST", path, **kwargs)


def ui_client(base: str) -> UiClient:
    """A fresh client (no cookies) of the server at `base`."""
    return UiClient(base)


def sign_in_with_token(client: UiClient, token: str) -> httpx.Response:
    """Post the sign-in form with `token`, as a browser would after loading it."""
    form = client.get("/ui/signin")
    return client.post("/ui/signin", data={"csrf": hidden_fields(form.text)["csrf"], "token": token})


LINK_SAID = "the one-time sign-in link is in"


def once_link_url(home: Path) -> str:
    """The one-time sign-in link a tokenless server wrote for its owner (not a terminal: to a file)."""
    path = home / "ui" / "signin-link"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    return path.read_text().strip()


def once_link(home: Path) -> str:
    """The one-time sign-in link's path and query."""
    found = re.fullmatch(r"http://[^/]+(/ui/signin/once\?code=\S+)", once_link_url(home))
    assert found, once_link_url(home)
    return found.group(1)
