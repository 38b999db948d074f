"""The front door as one ASGI application: the checks every request passes (Host, Origin,
token, CORS), then the MCP endpoints beside the Quart-Trio routes."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Mapping
from typing import Any

from actors.messages import AppStatus, AppUnavailable, Lookup, RegistryMessage, UnknownApp
from actors.runtime import ASK_TIMEOUT_S, Mailbox, ask
from supervisor.model.errors import (
    BadRequest,
    ClientGone,
    Forbidden,
    Refusal,
    Unauthorized,
    Unavailable,
    WrongHost,
    WrongMediaType,
)
from supervisor.model.lifecycle import AppState
from supervisor.model.limits import DEFAULT_LIMITS, LimitsConfig
from web.admin.api import parse_call
from web.admin.events import serve_events
from web.appstates import AppStates
from web.chat.stream import SESSION_ID, SESSION_ID_RULE
from web.connections import HandshakeAnswered, websocket_send
from web.control import PAGE_FILES
from web.errors import retry_after_s, send_http_error, send_rpc_error
from web.intake import (
    CLOSE,
    Replaying,
    bodies_closed,
    finishing,
    mcp_body_problem,
    read_body,
    unread_body,
)
from web.mcpdoor.affinity import SessionTags
from web.mcpdoor.aggregate import AggregateEndpoint
from web.mcpdoor.endpoints import AppEndpoint
from web.mcpdoor.fastpath import query_value
from web.mcpdoor.handoff import send_app_unavailable, serve_mcp
from web.mcpdoor.standing import Standing, StandingStreams
from web.mcpdoor.toolowners import ToolOwners
from web.security import (
    AccessPolicy,
    authorized,
    cors_headers,
    header_map,
    host_allowed,
    needs_token,
    origin_allowed,
    origin_refusal,
    plain_path,
    preflight_headers,
)

logger = logging.getLogger("mcpapps.web")

APP_PREFIX = "/apps/mcp/"
EVENTS_PATH = "/admin/events"
CALL_PATH = "/admin/call"


class FrontDoor:
    def __init__(
        self,
        policy: AccessPolicy,
        registry: Mailbox[RegistryMessage],
        routes: Any,
        apps: Mapping[str, AppEndpoint],
        aggregate: AggregateEndpoint,
        limits: LimitsConfig = DEFAULT_LIMITS,
        states: AppStates | None = None,
        owners: ToolOwners | None = None,
        replica: str = "",
        standing: StandingStreams | None = None,
    ) -> None:
        self._policy = policy
        # The MCP session ids this supervisor gives out name it (web/mcpdoor/affinity.py).
        self._tags = SessionTags(replica)
        self._owners = owners
        self._limits = limits
        self._states = states or AppStates()
        self._registry = registry
        self._routes = routes
        self._apps = apps
        self._aggregate = aggregate
        self._standing = standing  # the MCP sessions' standing streams (web/mcpdoor/standing.py)
        # Requests being answered now: at shutdown, once none is left, the connections still
        # open are idle (Hypercorn under Quart-Trio does not close idle ones by itself).
        self.open_requests = 0

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self._routes(scope, receive, send)  # lifespan
            return
        if scope["type"] == "websocket":
            with contextlib.suppress(HandshakeAnswered):  # the client has its answer already
                await self._serve_counted(scope, receive, websocket_send(send))
            return
        await self._serve_counted(scope, receive, send)

    async def _serve_counted(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        # The events WebSocket stays open as long as the page does: it is not a request that
        # shutdown waits for (it is cancelled with the front door).
        if scope["type"] == "websocket" and scope["path"] == EVENTS_PATH:
            await self._serve(scope, receive, send)
            return
        self.open_requests += 1
        try:
            opened = await self._serve(scope, receive, send)
            if opened is not None and self._standing is not None:
                # Held here, with the frames that checked and opened it gone.
                await self._standing.hold(opened, receive, send)
        finally:
            self.open_requests -= 1

    async def _serve(self, scope: dict[str, Any], receive: Any, send: Any) -> Standing | None:
        """Answer the request, or open the standing stream of an MCP session it asks for
        (web/mcpdoor/standing.py) and return it, to be held."""
        headers = header_map(scope["headers"])
        host, origin = headers.get("host"), headers.get("origin")
        is_http = scope["type"] == "http"

        async def deny(refusal: Refusal) -> None:
            # Not read (who may not use the server may not make it read): the connection is
            # closed after the answer, and the client is told so it does not reuse it.
            close = (CLOSE,) if is_http and unread_body(headers) else ()
            await send_http_error(send, refusal, headers=close, websocket=not is_http)

        if is_http:
            send = finishing(send)
        if not host_allowed(self._policy, host):
            await deny(WrongHost(_host_refusal(host)))
            return None
        if not origin_allowed(self._policy, origin, host):
            refusal = origin_refusal(self._policy, origin or "")
            await deny(Forbidden(refusal, code="origin_not_allowed"))
            return None
        if is_http and origin is not None:
            if scope["method"] == "OPTIONS" and "access-control-request-method" in headers:
                await _preflight(send, origin)
                return None
            send = _with_cors(send, origin)
        path: str = scope["path"]
        if not plain_path(path):
            await deny(BadRequest("the request path must start with a single '/'", code="bad_path"))
            return None
        if needs_token(self._policy, path) and not authorized(self._policy, headers):
            await deny(
                Unauthorized(
                    "this server needs its token: send 'Authorization: Bearer <token>' or"
                    " open /login?token=<token> in the browser"
                )
            )
            return None
        if not is_http:
            if path == EVENTS_PATH:
                await serve_events(self._registry, scope, receive, send)
            else:
                await self._routes(scope, receive, send)
            return None
        # The page's own files, answered here rather than by Quart (web/pagefiles.py).
        if (
            path in PAGE_FILES
            and not unread_body(headers)
            and await PAGE_FILES.serve(path, scope["method"], headers.get("if-none-match"), send)
        ):
            return None
        limits = self._limits
        declared = headers.get("content-length")
        try:
            body = await read_body(receive, limits.max_body_bytes, limits.body_timeout_s, declared)
        except ClientGone:
            return None  # nobody to answer
        except Refusal as refused:
            await send_http_error(send, refused, headers=(CLOSE,))
            return None
        replay = Replaying(body, receive)
        try:
            return await self._route(scope, replay, send, headers, body)
        finally:
            replay.release()

    async def _route(
        self, scope: dict[str, Any], receive: Any, send: Any, headers: dict[str, str], body: bytes
    ) -> Standing | None:
        """The request, its body read: an MCP endpoint, or one of Quart's routes."""
        path: str = scope["path"]
        is_mcp = path.rstrip("/") == "/mcp" or path.startswith(APP_PREFIX)
        if is_mcp and scope["method"] == "POST":
            if not _is_json(headers.get("content-type")):
                await send_http_error(
                    send,
                    WrongMediaType(
                        "MCP requests are JSON-RPC: send them with 'Content-Type: application/json'"
                    ),
                )
                return None
            if (problem := mcp_body_problem(body)) is not None:
                await send_rpc_error(send, problem)
                return None
        if path.rstrip("/") == "/mcp":
            return await serve_mcp(
                self._aggregate, scope, receive, send, headers, body, self._tags, self._standing
            )
        if path.startswith(APP_PREFIX):
            app_id = path[len(APP_PREFIX) :].rstrip("/")
            query = scope.get("query_string", b"").decode("latin-1")
            chat = query_value(query, "sessionId") if query else None
            if chat is not None and not SESSION_ID.fullmatch(chat):
                # It reaches the app as `_meta.sessionId`, as a chat's session id does: the
                # same rule, so that an app never gets what a chat could not name.
                await send_http_error(send, BadRequest(f"in the URL, {SESSION_ID_RULE}"))
                return None
            return await self._app(app_id, scope, receive, send, headers, body)
        if (down := self._down_tool(scope, headers, body)) is not None:
            await send_http_error(send, down)
        else:
            async with bodies_closed(scope):  # an answer never sent still gives back what it held
                await self._routes(scope, receive, send)
        return None

    async def _app(
        self,
        app_id: str,
        scope: dict[str, Any],
        receive: Any,
        send: Any,
        headers: dict[str, str],
        body: bytes,
    ) -> Standing | None:
        endpoint = self._apps.get(app_id)
        # The registry's published facts say how the app stands without asking it: an app known
        # to be down is refused at once, and a request to one known to be Running goes straight
        # on (its actor has the last word; asking the registry first would put every call
        # behind the registry's mailbox twice). Only an app not heard of yet is looked up.
        status = self._states.get(app_id) if endpoint is not None else None
        if status is None:
            try:
                known: AppStatus = await ask(
                    self._registry, lambda r: Lookup(app_id, r), ASK_TIMEOUT_S
                )
                status = known
            except UnknownApp:
                status = None
        if status is None or endpoint is None:
            await send_http_error(send, UnknownApp(app_id, f"there is no app '{app_id}'"))
            return None
        # DELETE ends the client's own session with us, which needs no running app.
        if status.state is not AppState.RUNNING and scope["method"] != "DELETE":
            why = status.last_error or status.disabled_reason
            if status.state is AppState.NEEDS_SIGN_IN:
                why = "a person must sign in for it: press Sign in on the control page"
            message = f"app '{app_id}' is not running (state {status.state})"
            if (seconds := retry_after_s(status.next_retry_at)) is not None:
                message += f"; next restart in {seconds} s"
            down = Unavailable(
                message + (f": {why}" if why else ""),
                code="app_unavailable",
                data={
                    "reason": "app_unavailable",
                    "state": status.state.value,
                    "lastError": status.last_error,
                },
                retry_at=status.next_retry_at,
            )
            await send_app_unavailable(send, scope["method"], body, down)
            return None
        return await serve_mcp(
            endpoint, scope, receive, send, headers, body, self._tags, self._standing
        )

    def _down_tool(
        self, scope: dict[str, Any], headers: dict[str, str], body: bytes
    ) -> AppUnavailable | None:
        """`POST /admin/call` of a tool whose app is known to be down: refused at once with
        the answer the route would give (web/mcpdoor/toolowners.py), not after the calls in
        flight."""
        if (
            self._owners is None
            or scope["path"] != CALL_PATH
            or scope["method"] != "POST"
            or not _is_json(headers.get("content-type"))
        ):
            return None
        try:
            name, _arguments = parse_call(body)
        except ValueError:
            return None  # the route says what is wrong with it
        return self._owners.refusal(name)


def _host_refusal(host: str | None) -> str:
    if host is None:  # HTTP/1.0 lets a request have none
        return (
            "the request has no Host header: send one that names this server (localhost,"
            " 127.0.0.1, [::1] or a name in server.public_hosts)"
        )
    return (
        f"the Host header '{host}' is not accepted: use localhost, 127.0.0.1 or [::1], or add"
        " the name to server.public_hosts"
    )


def _is_json(content_type: str | None) -> bool:
    return (content_type or "").split(";")[0].strip().lower() == "application/json"


async def _preflight(send: Any, origin: str) -> None:
    await send({"type": "http.response.start", "status": 204, "headers": preflight_headers(origin)})
    await send({"type": "http.response.body", "body": b""})


def _with_cors(send: Any, origin: str) -> Any:
    async def send_with_cors(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            message = {**message, "headers": [*message.get("headers", []), *cors_headers(origin)]}
        await send(message)

    return send_with_cors
