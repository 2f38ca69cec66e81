"""The page layer's shared parts: the App, the sessions, the templates, and how a page answers."""

from __future__ import annotations

import logging
import secrets
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import anyio.to_thread
import psycopg
from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from pgrecall.app import App
from pgrecall.errors import InvalidInputError, NotFoundError, PgrecallError
from pgrecall.web.security import secured, session_id
from pgrecall.web.sessions import Session, SessionStore, SignInLimiter

log = logging.getLogger(__name__)
T = TypeVar("T")


class PageError(Exception):
    """A request the page answers with a message and a status instead of data."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def _status_of(exc: PgrecallError) -> int:
    if isinstance(exc, NotFoundError):
        return 404
    if isinstance(exc, InvalidInputError) and exc.field == "expected_version":
        return 409
    if isinstance(exc, InvalidInputError | ValueError):
        return 400
    return 503


class Ui:
    """Everything the pages share; one per server."""

    def __init__(self, app: App, sessions: SessionStore, *, codes_allowed: bool) -> None:
        self.app = app
        self.sessions = sessions
        self.signin_limiter = SignInLimiter()
        self.signin_key = secrets.token_bytes(32)  # MACs the sign-in form's CSRF tokens
        # True where the process prints one-time sign-in links (`pgrecall ui`, a tokenless
        # loopback server); a token-protected server signs in with tokens only.
        self.codes_allowed = codes_allowed
        # Autoescape everything: entry text, titles and tags are hostile input.
        self.templates = Environment(
            loader=PackageLoader("pgrecall.web", "templates"),
            autoescape=select_autoescape(default=True, default_for_string=True),
            trim_blocks=True,
            lstrip_blocks=True,
        )

    def session(self, request: Request) -> Session | None:
        """The signed-in session of this request, if any."""
        return self.sessions.get(session_id(request))

    def render(
        self, name: str, request: Request, session: Session | None, status: int = 200, **values: Any
    ) -> Response:
        """A template as a secured HTML response."""
        html = self.templates.get_template(name).render(
            session=session, path=request.url.path, query=request.url.query, **values
        )
        return secured(HTMLResponse(html, status_code=status))

    def error(self, request: Request, session: Session | None, status: int, message: str) -> Response:
        """The error page: one line saying what was wrong."""
        return self.render("error.html", request, session, status=status, message=message)

    async def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """A blocking service call in a worker thread; pgrecall errors become PageErrors."""
        try:
            return await anyio.to_thread.run_sync(lambda: fn(*args, **kwargs))
        except PgrecallError as exc:
            raise PageError(_status_of(exc), str(exc)) from exc
        except psycopg.OperationalError as exc:
            log.warning("database unavailable for a page: %s", exc)
            raise PageError(503, "the database is unavailable; try again shortly") from exc


def redirect(url: str) -> Response:
    """A 303 (after a form: the browser GETs the new page) with the security headers."""
    return secured(RedirectResponse(url, status_code=303))


def to_signin() -> Response:
    """Where a request without a session goes: the sign-in page, never data."""
    return redirect("/ui/signin")


PageHandler = Callable[[Ui, Request, Session], Awaitable[Response]]


def signed_in(handler: PageHandler) -> Callable[[Ui, Request], Awaitable[Response]]:
    """A page for signed-in sessions only (others go to sign-in); refusals become the error page."""

    async def page(ui: Ui, request: Request) -> Response:
        session = ui.session(request)
        if session is None:
            return to_signin()
        try:
            return await handler(ui, request, session)
        except PageError as exc:
            return ui.error(request, session, exc.status, exc.message)
        except InvalidInputError as exc:
            return ui.error(request, session, 400, str(exc))

    return page
