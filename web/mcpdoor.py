"""Handing a request to an MCP endpoint (the SDK's session manager): a request id already in
flight on the session is refused, and a session refused for want of room says when to try
again."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import mcp_types as types

from web.fastpath import parse
from web.intake import jsonrpc_error, request_ids_of

if TYPE_CHECKING:
    from web.aggregate import AggregateEndpoint
    from web.endpoints import AppEndpoint


async def serve_mcp(
    endpoint: AppEndpoint | AggregateEndpoint,
    scope: dict[str, Any],
    receive: Any,
    send: Any,
    headers: dict[str, str],
    body: bytes,
) -> None:
    """Hand the request to the endpoint's SDK session manager, refusing a request id that is
    already in flight on the session, and saying when to try again if no session can open."""
    session = headers.get("mcp-session-id")
    if scope["method"] != "POST":
        await endpoint.manager.handle_request(scope, receive, send)
        return
    message = parse(body)
    if session is None:
        send = endpoint.fast.watch_opening(message, _retry_later_when_full(send))
        await endpoint.manager.handle_request(scope, receive, send)
        return
    endpoint.fast.cancel(message, session)
    ids = request_ids_of(message)
    if (taken := endpoint.in_flight.taken(session, ids)) is not None:
        message = (
            f"the request id {taken} is already in use by a request in flight on this session:"
            " give each request of a session its own id"
        )
        await send_jsonrpc_error(send, 400, types.INVALID_REQUEST, message)
        return
    endpoint.in_flight.hold(session, ids)
    try:
        if (call := endpoint.fast.take(message, headers, scope)) is not None:
            await endpoint.fast.answer(call, send)
        else:
            await endpoint.manager.handle_request(scope, receive, send)
    finally:
        endpoint.in_flight.release(session, ids)


SESSIONS_RETRY_AFTER_S = 30  # sessions end as clients close them or go idle


def _retry_later_when_full(send: Any) -> Any:
    """The SDK refuses a new session with 503 when `limits.max_sessions` are open; this adds
    when to try again."""

    async def send_with_retry_after(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start" and message["status"] == 503:
            retry = (b"retry-after", str(SESSIONS_RETRY_AFTER_S).encode())
            message = {**message, "headers": [*message.get("headers", []), retry]}
        await send(message)

    return send_with_retry_after


async def send_jsonrpc_error(send: Any, status: int, code: int, message: str) -> None:
    body = jsonrpc_error(code, message)
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
