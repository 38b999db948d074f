"""The control page: `GET /` and its static files (plain HTML, CSS and JavaScript from
`web/static`, no build step); and whether each Running app's catalog shows a UI.

The page and its files hold no user data, so they are served without the token: a person who
is not logged in gets the page, which says how to log in. Everything the page shows comes from
the authenticated admin API and `/admin/events`.
"""

from __future__ import annotations

import contextlib
from html import escape
from importlib import resources
from typing import Any

import trio
from quart import Blueprint, Response, request

from actors.catalog import Catalog
from actors.messages import AppError, AppStatus, GetCatalog, RegistryMessage, ToApp
from actors.runtime import ASK_TIMEOUT_S, AskTimeout, Mailbox, Overloaded, ask
from supervisor.model.lifecycle import AppState
from web.errors import json_error
from web.uiview import catalog_has_ui

STATIC_PREFIX = "/static/"
# The files the page is made of, and their types; the sandbox page is served only by the
# sandbox listener.
STATIC_FILES = {
    "app.js": "text/javascript; charset=utf-8",
    "host.js": "text/javascript; charset=utf-8",
    # The official MCP Apps host library, vendored (scripts/vendor-app-bridge.sh).
    "app-bridge.js": "text/javascript; charset=utf-8",
    "asking.js": "text/javascript; charset=utf-8",
    "sse.js": "text/javascript; charset=utf-8",
    "style.css": "text/css; charset=utf-8",
}
_PAGE_HEADERS = {
    "Cache-Control": "no-cache",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


def _static(name: str) -> bytes:
    return resources.files("web").joinpath("static", name).read_bytes()


def control_blueprint(sandbox_origin: str | None) -> Blueprint:
    control = Blueprint("control", __name__)

    @control.get("/")
    async def page() -> Any:
        html = _static("index.html").decode()
        # The page learns the sandbox origin from its own markup (no request needed first).
        html = html.replace("{{SANDBOX_ORIGIN}}", escape(sandbox_origin or ""))
        return Response(html, content_type="text/html; charset=utf-8", headers=_PAGE_HEADERS)

    @control.get("/static/<name>")
    async def static(name: str) -> Any:
        if name not in STATIC_FILES:
            return json_error(404, "not_found", f"there is no file '{name}'")
        response = Response(_static(name), content_type=STATIC_FILES[name], headers=_PAGE_HEADERS)
        # With an ETag, `no-cache` costs a 304 instead of the file (app-bridge.js is 520 KiB).
        await response.add_etag()
        return await response.make_conditional(request)

    return control


async def current_catalogs(
    registry: Mailbox[RegistryMessage], app_ids: list[str]
) -> dict[str, Catalog]:
    """The catalogs of `app_ids`, asked of their actors at once; an app that cannot answer (not
    run at all, or busy) is left out."""
    catalogs: dict[str, Catalog] = {}

    async def fetch(app_id: str) -> None:
        with contextlib.suppress(AppError, AskTimeout, Overloaded):
            catalogs[app_id] = await ask(
                registry, lambda r: ToApp(app_id, GetCatalog(r)), ASK_TIMEOUT_S
            )

    async with trio.open_nursery() as nursery:
        for app_id in app_ids:
            nursery.start_soon(fetch, app_id)
    return catalogs


async def ui_shown(
    registry: Mailbox[RegistryMessage], statuses: tuple[AppStatus, ...]
) -> dict[str, bool]:
    """For each Running app: whether its catalog shows a UI."""
    running = [s.id for s in statuses if s.state is AppState.RUNNING]
    catalogs = await current_catalogs(registry, running)
    return {app_id: catalog_has_ui(catalog) for app_id, catalog in catalogs.items()}
