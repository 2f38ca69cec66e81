"""What every page response carries and every change must prove: headers, the cookie, CSRF."""

from __future__ import annotations

import secrets
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from pgrecall.web.sessions import SESSION_SECONDS, Session

SESSION_COOKIE = "pgrecall_ui"
# Before sign-in there is no session to hold a CSRF token: the sign-in form gets its own
# (double-submit: this cookie and a hidden field must agree).
SIGNIN_COOKIE = "pgrecall_ui_signin"
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


def set_signin_cookie(response: Response, token: str) -> None:
    """Set the sign-in form's CSRF token as a cookie; the form carries the same value."""
    response.set_cookie(SIGNIN_COOKIE, token, max_age=3600, **_COOKIE_ATTRIBUTES)


def same_token(given: object, expected: str | None) -> bool:
    """Constant-time equality of a submitted token with the expected one (never equal to nothing)."""
    return isinstance(given, str) and bool(expected) and secrets.compare_digest(given, str(expected))


def session_id(request: Request) -> str | None:
    """The session id the browser sent, if any."""
    return request.cookies.get(SESSION_COOKIE)
