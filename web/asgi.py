"""The front door as one ASGI application: the checks every request passes (Host, Origin,
token, CORS; SPEC §7.1), then the MCP endpoints beside the Quart-Trio routes."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping
from typing import Any

from actors.messages import Lookup, UnknownApp
from actors.runtime import Mailbox, ask
from supervisor.lifecycle import AppState
from web.aggregate import AggregateEndpoint
from web.endpoints import AppEndpoint
from web.events import serve_events
from web.routes import ASK_TIMEOUT_S
from web.security import (
    AccessPolicy,
    authorized,
    cors_headers,
    header_map,
    host_allowed,
    needs_token,
    origin_allowed,
    plain_path,
    preflight_headers,
)

logger = logging.getLogger("mcpapps.web")

APP_PREFIX = "/apps/mcp/"
EVENTS_PATH = "/admin/events"


async def send_json_error(
    send: Any,
    status: int,
    code: str,
    message: str,
    *,
    headers: list[tuple[bytes, bytes]] = (),  # type: ignore[assignment]
    **extra: Any,
) -> None:
    body = json.dumps({"error": {"code": code, "message": message, **extra}}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class FrontDoor:
    def __init__(
        self,
        policy: AccessPolicy,
        registry: Mailbox[Any],
        routes: Any,
        apps: Mapping[str, AppEndpoint],
        aggregate: AggregateEndpoint,
    ) -> None:
        self._policy = policy
        self._registry = registry
        self._routes = routes
        self._apps = apps
        self._aggregate = aggregate
        # Requests being answered now: at shutdown, once none is left, the connections still
        # open are idle (Hypercorn under Quart-Trio does not close idle ones by itself).
        self.open_requests = 0

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self._routes(scope, receive, send)  # lifespan
            return
        # The events WebSocket stays open as long as the page does: it is not a request that
        # shutdown waits for (it is cancelled with the front door).
        if scope["type"] == "websocket" and scope["path"] == EVENTS_PATH:
            await self._serve(scope, receive, send)
            return
        self.open_requests += 1
        try:
            await self._serve(scope, receive, send)
        finally:
            self.open_requests -= 1

    async def _serve(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        headers = header_map(scope["headers"])
        host, origin = headers.get("host"), headers.get("origin")
        is_http = scope["type"] == "http"
        if not host_allowed(self._policy, host):
            if is_http:
                await send_json_error(
                    send,
                    421,
                    "host_not_allowed",
                    f"the Host header '{host}' is not accepted: use localhost, 127.0.0.1 or"
                    " [::1], or add the name to server.public_hosts",
                )
            return
        if not origin_allowed(self._policy, origin, host):
            if is_http:
                await send_json_error(
                    send,
                    403,
                    "origin_not_allowed",
                    f"requests from the origin '{origin}' are not accepted: add it to"
                    " server.allowed_origins",
                )
            return
        if is_http and origin is not None:
            if scope["method"] == "OPTIONS" and "access-control-request-method" in headers:
                await _preflight(send, origin)
                return
            send = _with_cors(send, origin)
        path: str = scope["path"]
        if not plain_path(path):
            if is_http:
                await send_json_error(
                    send, 400, "bad_path", "the request path must start with a single '/'"
                )
            return
        if needs_token(self._policy, path) and not authorized(self._policy, headers):
            if is_http:
                await send_json_error(
                    send,
                    401,
                    "unauthorized",
                    "this server needs its token: send 'Authorization: Bearer <token>' or"
                    " open /login?token=<token> in the browser",
                    headers=[(b"www-authenticate", b"Bearer")],
                )
            return
        is_mcp = is_http and (path.rstrip("/") == "/mcp" or path.startswith(APP_PREFIX))
        if is_mcp and scope["method"] == "POST" and not _is_json(headers.get("content-type")):
            await send_json_error(
                send,
                415,
                "unsupported_media_type",
                "MCP requests are JSON-RPC: send them with 'Content-Type: application/json'",
            )
            return
        if is_http and path.rstrip("/") == "/mcp":
            await self._aggregate.manager.handle_request(scope, receive, send)
        elif is_http and path.startswith(APP_PREFIX):
            await self._app(path[len(APP_PREFIX) :].rstrip("/"), scope, receive, send)
        elif not is_http and path == EVENTS_PATH:
            await serve_events(self._registry, scope, receive, send)
        else:
            await self._routes(scope, receive, send)

    async def _app(self, app_id: str, scope: dict[str, Any], receive: Any, send: Any) -> None:
        endpoint = self._apps.get(app_id)
        try:
            status = await ask(self._registry, lambda r: Lookup(app_id, r), ASK_TIMEOUT_S)
        except UnknownApp:
            status = None
        if status is None or endpoint is None:
            await send_json_error(send, 404, "unknown_app", f"there is no app '{app_id}'")
            return
        # DELETE ends the client's own session with us, which needs no running app.
        if status.state is not AppState.RUNNING and scope["method"] != "DELETE":
            why = status.last_error or status.disabled_reason
            message = f"app '{app_id}' is not running (state {status.state})"
            headers = []
            if status.next_retry_at is not None:
                wait = max(1, round(status.next_retry_at - time.time()))
                headers.append((b"retry-after", str(wait).encode()))
                message += f"; next restart in {wait} s"
            await send_json_error(
                send,
                503,
                "app_unavailable",
                message + (f": {why}" if why else ""),
                headers=headers,
                state=status.state.value,
                lastError=status.last_error,
            )
            return
        await endpoint.manager.handle_request(scope, receive, send)


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
