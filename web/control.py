"""The control page: `GET /` and its static files (plain HTML, CSS and JavaScript from
`web/static`, the page's ES modules from `web/static/js`, no build step); and whether each
Running app's catalog shows a UI.

The page and its files hold no user data, so they are served without the token: a person who
is not logged in gets the page, which says how to log in. Everything the page shows comes from
the authenticated admin API and `/admin/events`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from html import escape
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

import trio
from quart import Blueprint, Response, request

from actors.catalog import Catalog
from actors.messages import AppError, AppStatus, GetCatalog, RegistryMessage, ToApp
from actors.runtime import ASK_TIMEOUT_S, AskTimeout, Mailbox, Overloaded, ask
from supervisor.model.errors import NotFound
from supervisor.model.lifecycle import AppState
from web.pagefiles import PAGE_HEADERS, PageFiles
from web.uiview import catalog_has_ui

STATIC_PREFIX = "/static/"
# The files the page is made of, and their types; the sandbox page is served only by the
# sandbox listener.
JAVASCRIPT = "text/javascript; charset=utf-8"
STATIC_FILES = {
    # The official MCP Apps host library, vendored (scripts/vendor-app-bridge.sh).
    "app-bridge.js": JAVASCRIPT,
    "style.css": "text/css; charset=utf-8",
}


def _modules(folder: Traversable, prefix: str = "") -> Iterator[str]:
    """Every `.js` file under `folder`, by its path there."""
    for entry in folder.iterdir():
        if entry.is_dir():
            yield from _modules(entry, f"{prefix}{entry.name}/")
        elif entry.name.endswith(".js"):
            yield prefix + entry.name


# The page's ES modules: every `.js` file of `web/static/js` and of its folders (the view host,
# `host/`), by its path there; nothing else is served from there. A browser runs a module only
# when it is served with a JavaScript type (and `nosniff` makes it check).
PAGE_MODULES = frozenset(_modules(resources.files("web").joinpath("static", "js")))
# The page names every module up front (`<link rel="modulepreload">`), so the browser fetches
# them all at once rather than one level of imports after another (main.js reaches the view
# host's last module twelve imports deep).
MODULE_PRELOADS = "\n".join(
    f'<link rel="modulepreload" href="static/js/{name}">' for name in sorted(PAGE_MODULES)
)
# The page's files, each read once (and again when it changes): the front door answers their
# GETs itself (web/pagefiles.py); the routes below answer the rest, with the same files.
PAGE_FILES = PageFiles(
    Path(str(resources.files("web").joinpath("static"))),
    {**STATIC_FILES, **{f"js/{name}": JAVASCRIPT for name in PAGE_MODULES}},
)


def page_csp(sandbox_origin: str | None, app_frames: str | None = None) -> str:
    """The control page's Content-Security-Policy: scripts and styles only from its own files
    (no inline script, no eval), requests and the events WebSocket only to its own origin
    (`'self'` covers `ws:`/`wss:` there), frames only from the sandbox origin, which renders
    the apps' views. Anything an app says reaches the page as text, and this keeps it so."""
    return "; ".join(
        (
            "default-src 'none'",
            "script-src 'self'",
            "style-src 'self'",
            # data: for the empty favicon; https: and data: for a rich form's thumbnails
            # (actors/richforms.py lets no other kind of address through). An image runs no
            # script, and the page sends no referrer.
            "img-src 'self' data: https:",
            "connect-src 'self'",
            # `app_frames`: every app's own sandbox origin ([sandbox] app_origins).
            f"frame-src {' '.join(filter(None, (sandbox_origin, app_frames)))}"
            if sandbox_origin
            else "frame-src 'none'",
            "form-action 'self'",
            "base-uri 'none'",
            "frame-ancestors 'none'",
        )
    )


def _static(name: str) -> bytes:
    return resources.files("web").joinpath("static", *name.split("/")).read_bytes()


def _decoded(headers: list[tuple[bytes, bytes]]) -> dict[str, str]:
    """As Quart takes them; it sets the length itself."""
    return {k.decode(): v.decode() for k, v in headers if k != b"content-length"}


def control_blueprint(
    sandbox_origin: str | None, app_frames: str | None = None, *, workspace: bool = False
) -> Blueprint:
    """The page and its files. `workspace`: whether a workspace is set, which the page reads
    from its markup, so that without one it asks nothing of `/apps/files` (whose 404 a browser
    logs as a failed load on every page)."""
    control = Blueprint("control", __name__)
    csp = page_csp(sandbox_origin, app_frames)

    @control.get("/")
    async def page() -> Any:
        html = _static("index.html").decode()
        # The page learns the sandbox origin from its own markup (no request needed first).
        html = html.replace("{{SANDBOX_ORIGIN}}", escape(sandbox_origin or ""))
        html = html.replace("{{MODULE_PRELOADS}}", MODULE_PRELOADS)
        html = html.replace("{{WORKSPACE}}", "true" if workspace else "")
        headers = {**PAGE_HEADERS, "Content-Security-Policy": csp}
        return Response(html, content_type="text/html; charset=utf-8", headers=headers)

    @control.get("/static/<path:name>")
    async def static(name: str) -> Any:
        found = PAGE_FILES.get(f"/static/{name}")
        if found is None:
            raise NotFound(f"there is no file '{name}'")
        status, headers, body = found.answer(request.headers.get("If-None-Match"))
        return Response(body, status=status, headers=_decoded(headers))

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
