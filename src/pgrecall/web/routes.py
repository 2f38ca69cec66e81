"""The /ui routes, added to the MCP server's HTTP application (same process, same guard)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from importlib.resources import files

from mcp.server.mcpserver import MCPServer
from starlette.requests import Request
from starlette.responses import Response

from pgrecall.app import App
from pgrecall.web import actions, pages
from pgrecall.web.security import secured
from pgrecall.web.sessions import SessionStore
from pgrecall.web.ui import Ui

Handler = Callable[[Ui, Request], Awaitable[Response]]

_GET: dict[str, Handler] = {
    "/ui": pages.dashboard,
    "/ui/entries": pages.entry_list,
    "/ui/search": pages.search_page,
    "/ui/entry/{entry_id}": pages.entry_page,
    "/ui/documents": pages.document_list,
    "/ui/documents/{document_id}": pages.document_page,
    "/ui/signin": actions.signin_form,
    "/ui/signin/once": actions.signin_once,
}
_POST: dict[str, Handler] = {
    "/ui/signin": actions.signin,
    "/ui/signout": actions.signout,
    "/ui/entry/{entry_id}/edit": actions.edit,
    "/ui/entry/{entry_id}/delete": actions.delete,
    "/ui/entry/{entry_id}/restore": actions.restore,
    "/ui/documents/{document_id}/delete": actions.delete_document,
    "/ui/documents/{document_id}/restore": actions.restore_document,
}
STYLESHEET = files("pgrecall.web").joinpath("static", "ui.css").read_bytes()


def mount_ui(server: MCPServer, app: App, *, codes_allowed: bool) -> Ui:
    """Serve the page at /ui on `server`'s HTTP app; returns the Ui (to issue one-time codes)."""
    ui = Ui(app, SessionStore(), codes_allowed=codes_allowed)

    def bind(handler: Handler) -> Callable[[Request], Awaitable[Response]]:
        async def route(request: Request) -> Response:
            return await handler(ui, request)

        return route

    for methods, table in ((["GET"], _GET), (["POST"], _POST)):
        for path, handler in table.items():
            server.custom_route(path, methods=methods, include_in_schema=False)(bind(handler))

    async def stylesheet(request: Request) -> Response:
        return secured(Response(STYLESHEET, media_type="text/css; charset=utf-8"))

    server.custom_route("/ui/static/ui.css", methods=["GET"], include_in_schema=False)(stylesheet)
    return ui
