"""What every page response carries and every change must prove: headers, the cookie, CSRF."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from pgrecall.web.sessions import SESSION_SECONDS, Session

SESSION_COOKIE = "pgrecall_ui"
# Before sign-in there is no session to hold a CSRF token: the sign-in form gets its own
# (double-submit: this cookie and a hidden field must agree). Cookies are not isolated by port, so
# its name carries the server's port and its value a MAC under this process's key: a page on
# another port of the same host can neither reuse ours nor mint one.
SIGNIN_COOKIE_PREFIX = "pgrecall_ui_signin_"
COOKIE_PATH = "/ui"
# Every cookie of ours, set or cleared: only for /ui, never readable by script, never cross-site.
_COOKIE_ATTRIBUTES: dict[str, Any] = {
    "path": COOKIE_PATH,
    "secure": True,
    "httponly": True,
    "samesite": "strict",
}

# No script at all, styles only from our own file, forms only to ourselves, never framed.
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    # same-origin, not no-referrer: under no-referrer browsers send `Origin: null` with form posts,
    # which the Origin check (rightly) refuses. Nothing leaves for other sites either way.
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
}


def secured(response: Response) -> Response:
    """The response with the page security headers set."""
    for name, value in SECURITY_HEADERS.items():
        response.headers[name] = value
    return response


def set_session_cookie(response: Response, session: Session) -> None:
    """Hand the browser its session id: HttpOnly, Secure, SameSite=Strict, only for /ui."""
    response.set_cookie(SESSION_COOKIE, session.id, max_age=SESSION_SECONDS, **_COOKIE_ATTRIBUTES)


def clear_cookie(response: Response, name: str) -> None:
    """Make the browser forget a cookie of ours."""
    response.delete_cookie(name, **_COOKIE_ATTRIBUTES)


def _server_port(request: Request) -> int:
    server = request.scope.get("server")
    return int(server[1]) if server and server[1] is not None else 0


def signin_cookie_name(request: Request) -> str:
    """The sign-in cookie's name on the port this request came to."""
    return f"{SIGNIN_COOKIE_PREFIX}{_server_port(request)}"


def signin_token(key: bytes, request: Request) -> str:
    """A new sign-in CSRF token: a nonce and its MAC under `key`, bound to this server's port."""
    nonce = secrets.token_urlsafe(24)
    return f"{nonce}.{_mac(key, request, nonce)}"


def signin_token_ok(key: bytes, request: Request, given: object) -> bool:
    """The form's token equals the cookie's, and was minted by this process for this port."""
    cookie = request.cookies.get(signin_cookie_name(request))
    if not same_token(given, cookie) or not isinstance(given, str) or given.count(".") != 1:
        return False
    nonce, mac = given.split(".")
    return secrets.compare_digest(mac, _mac(key, request, nonce))


def _mac(key: bytes, request: Request, nonce: str) -> str:
    message = f"{_server_port(request)}:{nonce}".encode()
    return hmac.new(key, message, hashlib.sha256).hexdigest()


def set_signin_cookie(response: Response, request: Request, token: str) -> None:
    """Set the sign-in form's CSRF token as a cookie; the form carries the same value."""
    response.set_cookie(signin_cookie_name(request), token, max_age=3600, **_COOKIE_ATTRIBUTES)


def same_token(given: object, expected: str | None) -> bool:
    """Constant-time equality of a submitted token with the expected one (never equal to nothing)."""
    return isinstance(given, str) and bool(expected) and secrets.compare_digest(given, str(expected))


def session_id(request: Request) -> str | None:
    """The session id the browser sent, if any."""
    return request.cookies.get(SESSION_COOKIE)
