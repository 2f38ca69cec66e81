"""The requests that change something: sign in and out, edit, delete, restore (entries, documents).

Every change is a POST carrying the session's CSRF token in the form; the owner is always the
session's (from the token it signed in with), never a form field.
"""

from __future__ import annotations

import logging
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from pgrecall.errors import InvalidInputError
from pgrecall.web.forms import entry_edit
from pgrecall.web.pages import show_document, show_entry
from pgrecall.web.security import (
    SESSION_COOKIE,
    clear_cookie,
    same_token,
    session_id,
    set_session_cookie,
    set_signin_cookie,
    signin_cookie_name,
    signin_token,
    signin_token_ok,
)
from pgrecall.web.sessions import SIGNIN_WINDOW_S, Session, TooManySessionsError
from pgrecall.web.ui import PageError, Ui, redirect, signed_in

log = logging.getLogger(__name__)
_MAX_TOKEN_CHARS = 512


async def signin_form(ui: Ui, request: Request, *, status: int = 200, message: str | None = None) -> Response:
    """The sign-in page: a field for a bearer token (from `pgrecall token create`)."""
    if ui.session(request) is not None and message is None:
        return redirect("/ui")
    csrf = signin_token(ui.signin_key, request)
    response = ui.render(
        "signin.html",
        request,
        None,
        status=status,
        message=message,
        csrf=csrf,
        codes_allowed=ui.codes_allowed,
    )
    set_signin_cookie(response, request, csrf)
    return response


async def signin(ui: Ui, request: Request) -> Response:
    """Exchange a bearer token for a session cookie (the token itself is never stored in the browser)."""
    form = await request.form()
    if not signin_token_ok(ui.signin_key, request, form.get("csrf")):
        return await signin_form(ui, request, status=403, message="The form expired; sign in again.")
    token = form.get("token")
    if not isinstance(token, str) or not token.strip() or len(token) > _MAX_TOKEN_CHARS:
        return await signin_form(
            ui, request, status=400, message="token: paste a token from pgrecall token create"
        )
    if not ui.signin_limiter.allow(token.strip(), request.client.host if request.client else None):
        log.warning("ui sign-in refused: too many attempts")
        response = await signin_form(
            ui, request, status=429, message="Too many sign-in attempts; wait a minute and try again."
        )
        response.headers["Retry-After"] = str(int(SIGNIN_WINDOW_S))
        return response
    try:
        owner = await ui.call(ui.app.tokens.owner_of, token.strip())
    except PageError as exc:
        return await signin_form(ui, request, status=exc.status, message=exc.message)
    if owner is None:
        log.warning("ui sign-in refused: unknown or revoked token")
        return await signin_form(ui, request, status=401, message="That token is unknown or revoked.")
    return await _open_session(ui, request, owner)


async def _open_session(ui: Ui, request: Request, owner: str) -> Response:
    try:
        session = ui.sessions.open(owner)
    except TooManySessionsError:
        log.warning("ui sign-in refused: every session slot is taken")
        return await signin_form(ui, request, status=503, message="Too many open sessions; try again later.")
    response = redirect("/ui")
    set_session_cookie(response, session)
    clear_cookie(response, signin_cookie_name(request))
    return response


async def signin_once(ui: Ui, request: Request) -> Response:
    """Open a session from a one-time code (printed by `pgrecall ui`); the code is spent at once."""
    code = request.query_params.get("code", "")
    owner = ui.sessions.redeem_code(code) if ui.codes_allowed and code else None
    if owner is None:
        return await signin_form(
            ui,
            request,
            status=401,
            # Each link opens one session; a new one comes only from a new start of the server.
            message="That sign-in link was used already or expired. For a new one, start `pgrecall ui` "
            "(or `pgrecall serve --transport http`) again, or sign in below with a token "
            "from `pgrecall token create`.",
        )
    # A redirect at once: the code leaves the address bar and is never sent as a Referer.
    return await _open_session(ui, request, owner)


async def signout(ui: Ui, request: Request) -> Response:
    """End the session (CSRF-checked: a foreign page cannot sign you out either)."""
    session = ui.session(request)
    form = await request.form()
    if session is not None and not same_token(form.get("csrf"), session.csrf):
        # Not from this page: the session stays, and so does the browser's cookie.
        log.warning("ui sign-out refused: missing or wrong CSRF token")
        return redirect("/ui")
    if session is not None:
        ui.sessions.close(session_id(request))
    response = redirect("/ui/signin")
    clear_cookie(response, SESSION_COOKIE)
    return response


async def _change(ui: Ui, request: Request, session: Session, action: str) -> Response:
    form = await request.form()
    if not same_token(form.get("csrf"), session.csrf):
        log.warning("ui change refused: missing or wrong CSRF token")
        return ui.error(request, session, 403, "The form is stale or was not sent by this page; reload it.")
    entry_id = request.path_params["entry_id"]
    owner = session.owner
    draft = None
    try:
        if action == "edit":
            edit = draft = entry_edit(form)
            changes: dict[str, Any] = {"title": edit.title, "tags": edit.tags}
            if edit.kind is not None:
                changes["kind"] = edit.kind
            if edit.language is not None:
                changes["language"] = edit.language
            written = await ui.call(
                ui.app.entries.update,
                owner,
                entry_id,
                text=edit.text,
                expected_version=edit.expected_version,
                **changes,
            )
            changed = written.entry
        elif action == "delete":
            changed = await ui.call(ui.app.entries.delete, owner, entry_id)
        else:
            changed = await ui.call(ui.app.entries.restore, owner, entry_id)
    except InvalidInputError as exc:
        return await show_entry(ui, request, session, status=400, message=str(exc), draft=draft)
    except PageError as exc:
        if exc.status == 404:
            return ui.error(request, session, 404, exc.message)
        return await show_entry(ui, request, session, status=exc.status, message=exc.message, draft=draft)
    # The stored id, not the path's text: only a canonical UUID goes into the Location header.
    return redirect(f"/ui/entry/{changed.id}")


@signed_in
async def edit(ui: Ui, request: Request, session: Session) -> Response:
    """Save the edit form (refused with 409 when someone changed the entry since it was opened)."""
    return await _change(ui, request, session, "edit")


@signed_in
async def delete(ui: Ui, request: Request, session: Session) -> Response:
    """Soft-delete the entry (restorable)."""
    return await _change(ui, request, session, "delete")


@signed_in
async def restore(ui: Ui, request: Request, session: Session) -> Response:
    """Restore a soft-deleted entry."""
    return await _change(ui, request, session, "restore")


async def _change_document(ui: Ui, request: Request, session: Session, action: str) -> Response:
    form = await request.form()
    if not same_token(form.get("csrf"), session.csrf):
        log.warning("ui change refused: missing or wrong CSRF token")
        return ui.error(request, session, 403, "The form is stale or was not sent by this page; reload it.")
    change = ui.app.documents.delete if action == "delete" else ui.app.documents.restore
    try:
        changed = await ui.call(change, session.owner, request.path_params["document_id"])
    except PageError as exc:
        if exc.status in (400, 404):
            return ui.error(request, session, exc.status, exc.message)
        return await show_document(ui, request, session, status=exc.status, message=exc.message)
    # The stored id, not the path's text: only a canonical UUID goes into the Location header.
    return redirect(f"/ui/documents/{changed.id}")


@signed_in
async def delete_document(ui: Ui, request: Request, session: Session) -> Response:
    """Soft-delete a document with its chunks (restorable)."""
    return await _change_document(ui, request, session, "delete")


@signed_in
async def restore_document(ui: Ui, request: Request, session: Session) -> Response:
    """Restore a soft-deleted document and the chunks its delete took."""
    return await _change_document(ui, request, session, "restore")
