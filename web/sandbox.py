"""The sandbox listener: a second port, a second origin, serving one thing, the proxy page that
app UIs render inside (`GET /sandbox`).

App HTML comes from the apps, not from us. It runs in an inner frame of this page with an opaque
origin, and this page lives on an origin of its own, so that nothing an app's script does can
reach the control page, its cookie or the authenticated routes. Hence this listener serves no
cookie, no token and no user data: every other path is 404, whatever its method. The page's CSP
(which its inner frame inherits) is built from the `_meta.ui.csp` the control page passes as
`?csp=<JSON>`, each declared domain validated, and from what config.toml allows the app named by
`?app=<id>` (`[apps.entries.<id>] csp_allow`). Naming another app gains a page nothing the
sandbox origin does not already give any page that frames it (inline script runs there
anyway), and no allowance opens the network. The page is told what was applied, so that the
view is told too (`hostCapabilities.sandbox.csp`).
"""

from __future__ import annotations

import errno
import json
import logging
from collections.abc import Callable
from importlib import resources
from typing import Any
from urllib.parse import parse_qs

import attrs
import hypercorn.trio
import trio
from hypercorn.config import Config as HypercornConfig

from supervisor.model.config import Config, url_host
from supervisor.model.errors import McpappsError
from web.apporigins import control_origins, framers, is_app_host, on_app_domain
from web.connections import isolate_connections, websocket_send
from web.csp import build_csp

logger = logging.getLogger("mcpapps.web")

PAGE = resources.files("web").joinpath("static/sandbox.html").read_text()
APPLIED_MARK = "{{APPLIED}}"  # where the page gets what its CSP applied, as JSON
CSP_QUERY_MAX = 16 * 1024  # a CSP declaration is a few origins, not a document
_BIND_ERRORS = frozenset({errno.EADDRINUSE, errno.EADDRNOTAVAIL, errno.EACCES})


class SandboxUnavailable(McpappsError, OSError):
    """The sandbox port cannot be listened on: a bind error, whose `strerror` says where, why
    and what to do."""


AllowFor = Callable[[str], frozenset[str]]  # the CSP allowances config.toml gives an app


def _no_allowances(app_id: str) -> frozenset[str]:
    return frozenset()


async def sandbox_app(
    scope: dict[str, Any],
    receive: Any,
    send: Any,
    allow_for: AllowFor = _no_allowances,
    origins: AppOrigins | None = None,
) -> None:
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            kind = message["type"].rsplit(".", 1)[-1]
            await send({"type": f"lifespan.{kind}.complete"})
            if kind == "shutdown":
                return
    if scope["type"] == "websocket":  # it serves no WebSocket: refused as an unknown route
        start = {"type": "websocket.http.response.start", "status": 404, "headers": []}
        send = websocket_send(send)
        await send(start)
        await send({"type": "websocket.http.response.body", "body": b"not found\n"})
        return
    if scope["type"] != "http":
        return
    if scope["path"] != "/sandbox" or scope["method"] not in ("GET", "HEAD"):
        await _send(send, 404, b"not found\n", [(b"content-type", b"text/plain")])
        return
    query = scope.get("query_string", b"")
    declared = _declared_csp(query)
    app_id = _app_id(query)
    own = False  # served on the app's own origin: its view keeps that origin
    if origins is not None and on_app_domain(_header(scope, b"host"), origins.sandbox_origin):
        refused = _app_origin_refusal(scope, origins, app_id)
        if refused is not None:
            await _send(send, 403, refused.encode(), [(b"content-type", b"text/plain")])
            return
        own = True
    csp = build_csp(declared, allow_for(app_id))
    if csp.rejected:
        # One line per page, however many entries it names: the port takes no token, and a
        # view may load pages too, so a request must not be able to write the log long.
        more = len(csp.rejected) - 1
        also = f" (and {more} more entries refused)" if more else ""
        logger.warning("sandbox: %s%s", csp.rejected[0], also)
    headers = [
        (b"content-type", b"text/html; charset=utf-8"),
        (b"content-security-policy", _policy(csp.header, origins if own else None).encode()),
        (b"cache-control", b"no-store"),
        (b"x-content-type-options", b"nosniff"),
        (b"referrer-policy", b"no-referrer"),
        (b"permissions-policy", b"camera=(), microphone=(), geolocation=()"),
    ]
    applied: dict[str, Any] = {"csp": csp.domains, "allowed": list(csp.allowed)}
    if own:
        applied["sameOrigin"] = True  # the inner frame keeps this page's origin
    # JSON inside a <script> element: `<` escaped, so no value can close the element.
    page = PAGE.replace(APPLIED_MARK, json.dumps(applied).replace("<", "\\u003c")).encode()
    body = b"" if scope["method"] == "HEAD" else page
    await _send(send, 200, body, headers, length=len(page))


@attrs.frozen
class AppOrigins:
    """`[sandbox] app_origins`: the shared sandbox origin the app origins are made from, and
    the control page's origins, the only ones that may frame a proxy page on an app origin."""

    sandbox_origin: str
    framers: str

    @classmethod
    def of(cls, config: Config) -> AppOrigins | None:
        sandbox = config.sandbox
        if not (sandbox.app_origins and sandbox.origin):
            return None
        return cls(sandbox.origin, framers(control_origins(config)))


def _app_origin_refusal(scope: dict[str, Any], origins: AppOrigins, app_id: str) -> str | None:
    """Why a proxy page on an app origin is not served: the origin is not that app's (a page
    gets another app's allowances on that app's origin only), or it is not a frame the control
    page asked for (a view, same-origin with its proxy page, could otherwise load another one
    with a policy of its choosing). The browser sets the `Sec-Fetch-*` headers; one that sends
    none is held by `frame-ancestors` alone."""
    if not is_app_host(_header(scope, b"host"), origins.sandbox_origin, app_id):
        return "this origin is not the sandbox origin of the app the page names\n"
    site, dest = _header(scope, b"sec-fetch-site"), _header(scope, b"sec-fetch-dest")
    if site == "same-origin" or (dest and dest != "iframe"):
        return "the app sandbox is only served as a frame of the control page\n"
    return None


def _policy(header: str, origins: AppOrigins | None) -> str:
    """The CSP, and on an app origin who may frame the proxy page: the control page only."""
    return f"{header}; frame-ancestors {origins.framers}" if origins is not None else header


def _header(scope: dict[str, Any], name: bytes) -> str:
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            return str(value.decode("latin-1"))
    return ""


def _app_id(query: bytes) -> str:
    if len(query) > CSP_QUERY_MAX:
        return ""
    values = parse_qs(query.decode("latin-1")).get("app")
    return values[0] if values else ""


def _declared_csp(query: bytes) -> Any:
    """The `csp` query parameter as JSON; anything unreadable counts as nothing declared,
    which is the most restrictive policy."""
    if len(query) > CSP_QUERY_MAX:
        return None
    values = parse_qs(query.decode("latin-1")).get("csp")
    if not values:
        return None
    try:
        return json.loads(values[0])
    except ValueError:
        return None


async def _send(
    send: Any,
    status: int,
    body: bytes,
    headers: list[tuple[bytes, bytes]],
    *,
    length: int | None = None,
) -> None:
    size = str(len(body) if length is None else length).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [*headers, (b"content-length", size)],
        }
    )
    await send({"type": "http.response.body", "body": body})


async def serve_sandbox(
    config: Config,
    shutdown: trio.Event,
    task_status: trio.TaskStatus[list[str]] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve the sandbox port until `shutdown` is set. It holds no state and no long requests,
    so it stops at once."""
    hyper = HypercornConfig()
    where = f"{url_host(config.server.host)}:{config.sandbox.port}"
    hyper.bind = [where]
    hyper.accesslog = None
    hyper.graceful_timeout = 1.0
    hyper.errorlog = logging.getLogger("mcpapps.web.hypercorn")
    hyper.include_server_header = False  # as on the front door (web/serve.py)
    isolate_connections()  # a connection Hypercorn fails on ends alone (web/connections.py)
    origins = AppOrigins.of(config)

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        await sandbox_app(scope, receive, send, config.apps.csp_allow, origins)

    try:
        await hypercorn.trio.serve(
            app,  # type: ignore[arg-type]  # hypercorn types the scope narrower than dict
            hyper,
            shutdown_trigger=shutdown.wait,
            task_status=task_status,
        )
    except (OSError, BaseExceptionGroup) as error:
        leaf = _bind_error(error)
        if leaf is None:
            raise
        raise SandboxUnavailable(
            leaf.errno,
            f"cannot serve the app sandbox on {where}: {leaf.strerror or leaf}"
            " (set [sandbox] port to a free port, or [sandbox] enabled = false)",
        ) from None


def _bind_error(error: BaseException) -> OSError | None:
    if isinstance(error, BaseExceptionGroup):
        found = (_bind_error(inner) for inner in error.exceptions)
        return next((leaf for leaf in found if leaf is not None), None)
    return error if isinstance(error, OSError) and error.errno in _BIND_ERRORS else None
