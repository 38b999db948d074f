"""Handing a request to an MCP endpoint (the SDK's session manager): a request id already in
flight on the session is refused, and a session refused for want of room says when to try
again."""

from __future__ import annotations

import json
import logging
from collections.abc import MutableMapping
from typing import TYPE_CHECKING, Any

import anyio
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, KNOWN_PROTOCOL_VERSIONS

from supervisor.model.errors import BadRequest, NotFound, Unavailable, UnsupportedVersion
from web.errors import rpc_body, rpc_error, send_rpc_error
from web.intake import request_ids_of
from web.mcpdoor.affinity import SessionTags, untag_scope
from web.mcpdoor.fastpath import parse
from web.mcpdoor.standing import Standing, StandingStreams

if TYPE_CHECKING:
    from web.mcpdoor.aggregate import AggregateEndpoint
    from web.mcpdoor.endpoints import AppEndpoint

logger = logging.getLogger("mcpapps.web")


async def serve_mcp(
    endpoint: AppEndpoint | AggregateEndpoint,
    scope: dict[str, Any],
    receive: Any,
    send: Any,
    headers: dict[str, str],
    body: bytes,
    tags: SessionTags,
    standing: StandingStreams | None = None,
) -> Standing | None:
    """Hand the request to the endpoint's SDK session manager, refusing a protocol version no
    era has, a batch, a session id another supervisor gave out, and a request id that is
    already in flight on the session, and saying when to try again if no session can open.
    A session's standing stream (its GET) is opened by `standing` when it can be
    (web/mcpdoor/standing.py), and returned for the caller to hold."""
    message = parse(body) if scope["method"] == "POST" else None
    # The lean 2026-07-28 path answers through this one: its answer always has a content type
    # and never a session id, which is all the wrappers below change.
    lean_send = send
    version = headers.get("mcp-protocol-version")
    if version is not None and version not in KNOWN_PROTOCOL_VERSIONS:
        # The SDK hands a version it does not know to the 2026-07-28 transport, whose first
        # check is the envelope in `params._meta`: the client would be told about a field,
        # not that the version is the problem.
        unsupported = UnsupportedVersion(
            f"the protocol version '{version}' (the MCP-Protocol-Version header) is not"
            f" supported: this server speaks {', '.join(KNOWN_PROTOCOL_VERSIONS)}",
            data={"supported": list(KNOWN_PROTOCOL_VERSIONS), "requested": version},
        )
        await send_rpc_error(send, unsupported, request_id=_single_id(message))
        return None
    if version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS:
        send = _json_refusals(send, version)
    if scope["method"] == "GET" and "last-event-id" in headers:
        scope = _without_last_event_id(scope)
    session = headers.get("mcp-session-id")
    if session is not None:
        untagged = tags.strip(session)
        if untagged is None:
            unknown = NotFound(
                f"Session not found: the session id {session[:80]!r} was not given out by this"
                f" supervisor (its ids start with {tags.tag!r}): it is another supervisor's, or"
                " it did not come from a supervisor; initialize a new session"
            )
            await send_rpc_error(send, unknown, request_id=_single_id(message))
            return None
        session = headers["mcp-session-id"] = untagged
        untag_scope(scope, untagged)
    send = tags.tagging(send)
    if scope["method"] != "POST":
        if (
            scope["method"] == "GET"
            and standing is not None
            and session is not None
            and (version is None or version in HANDSHAKE_PROTOCOL_VERSIONS)
            and (opened := await standing.open(endpoint.manager, session, scope, send))
        ):
            return opened
        await endpoint.manager.handle_request(scope, receive, send)
        return None
    if isinstance(message, list):
        # The SDK refuses every batch too (JSON-RPC batches left MCP in 2025-06-18), with a
        # pydantic validation dump; and its ids are never in flight, so saying one is (as
        # the check below would for an id repeated in it) would be wrong.
        batch = BadRequest(
            "a batch (a JSON array of messages) is not accepted: send each JSON-RPC message"
            " in a request of its own"
        )
        await send_rpc_error(send, batch)
        return None
    if (problem := _id_problem(message)) is not None:
        # The handshake-era transport reads such a message as a notification (the id is not
        # one it takes) and answers 202: the client would wait for an answer forever.
        await send_rpc_error(send, BadRequest(problem))
        return None
    if session is None:
        if (stateless := endpoint.fast_stateless.take(message, scope, headers)) is not None:
            await endpoint.fast_stateless.answer(stateless, receive, lean_send)
            return None
        send = endpoint.fast.watch_opening(message, _retry_later_when_full(send))
        await endpoint.manager.handle_request(scope, receive, send)
        return None
    endpoint.fast.cancel(message, session)
    ids = request_ids_of(message)
    if (taken := endpoint.in_flight.taken(session, ids)) is not None:
        refusal = (
            f"the request id {taken} is already in use by a request in flight on this session:"
            " give each request of a session its own id"
        )
        await send_rpc_error(send, BadRequest(refusal))
        return None
    endpoint.in_flight.hold(session, ids)
    try:
        if (call := endpoint.fast.take(message, headers, scope)) is not None:
            await endpoint.fast.answer(call, send)
        else:
            await _to_the_session(endpoint, scope, receive, send, _single_id(message))
    finally:
        endpoint.in_flight.release(session, ids)
    return None


async def _to_the_session(
    endpoint: AppEndpoint | AggregateEndpoint,
    scope: dict[str, Any],
    receive: Any,
    send: Any,
    request_id: Any,
) -> None:
    """Hand a POST of an open session to the SDK, which may close the session meanwhile (its
    client's DELETE, its idle expiry, the endpoint stopping). The SDK's transport answers a
    notification 202 before handing it to the session: if the session's streams were closed in
    between, it sends a second answer (a 500) after the first, which Hypercorn refuses, and the
    closed stream's `ClosedResourceError` escapes too. Both would be a traceback in the log;
    the client has had its answer, or is told that the session no longer exists (404, as the
    MCP spec says for a session that has ended)."""
    answer = _OneAnswer(send)
    try:
        await endpoint.manager.handle_request(scope, receive, answer.send)
    except (anyio.ClosedResourceError, anyio.BrokenResourceError):
        logger.debug("an MCP session was closed while a POST of it was being served")
        if not answer.started:
            ended = NotFound(
                "the MCP session has ended (closed by its client or idle too long): open a new"
                " one with an initialize request"
            )
            await send_rpc_error(send, ended, request_id=request_id)


class _OneAnswer:
    """A `send` that lets one answer through: what comes after its last body is dropped."""

    def __init__(self, send: Any) -> None:
        self._send = send
        self.started = False
        self._done = False

    async def send(self, message: MutableMapping[str, Any]) -> None:
        if self._done:
            logger.debug("dropped a second answer to one request: %s", message["type"])
            return
        if message["type"] == "http.response.start":
            self.started = True
        elif message["type"] == "http.response.body" and not message.get("more_body", False):
            self._done = True
        await self._send(message)


async def send_app_unavailable(send: Any, method: str, body: bytes, down: Unavailable) -> None:
    """An app that is not running, told to an MCP client in MCP's own terms: a JSON-RPC error
    answering its request (HTTP 503, with `Retry-After` when a restart is due). MCP clients
    read a JSON-RPC error from the body of any status (the SDK's does); anything else in the
    body they replace with a bare "Server returned an error response", and the client's user
    would never learn why, nor when to try again."""
    request_id = _single_id(parse(body)) if method == "POST" else None
    await send_rpc_error(send, down, request_id=request_id)


def _single_id(message: Any) -> Any:
    """The id of a body that is one JSON-RPC request, for its error to answer it."""
    ids = request_ids_of(message) if isinstance(message, dict) else []
    return message["id"] if ids else None


def _without_last_event_id(scope: dict[str, Any]) -> dict[str, Any]:
    """The request without `Last-Event-ID`: the endpoints keep no event store, so no event they
    send has an id and nothing can be replayed. The SDK's transport, asked to replay with no
    store, returns without answering (an empty 500); without the header, the stream opens and
    carries what is sent from now on, as the TypeScript SDK's server does without a store.
    (SDK clients send the header only with an id they were sent, so they never send it here.)"""
    kept = [(k, v) for k, v in scope["headers"] if k.lower() != b"last-event-id"]
    return {**scope, "headers": kept}


# The SDK's 2026-07-28 transport refuses these without a body, where the handshake era's answers
# a JSON-RPC error: the same words here, so every error the endpoints give is JSON.
_REFUSALS = {
    406: "Not Acceptable: Client must accept both application/json and text/event-stream",
    405: "Method Not Allowed: protocol version {version} takes POST requests only",
}


def _json_refusals(send: Any, version: str) -> Any:
    """A `send` that gives an empty refusal of the 2026-07-28 transport a JSON-RPC error body."""
    held: list[dict[str, Any]] = []

    async def send_json_refusal(message: dict[str, Any]) -> None:
        if (
            message["type"] == "http.response.start"
            and message["status"] in _REFUSALS
            and not any(k.lower() == b"content-type" for k, _ in message.get("headers", ()))
        ):
            held.append(message)
            return
        if held and message["type"] == "http.response.body":
            start = held.pop()
            if not message.get("body") and not message.get("more_body", False):
                status = start["status"]
                refusal = BadRequest(_REFUSALS[status].format(version=version))
                body = rpc_body(rpc_error(refusal))
                kept = [
                    (k, v) for k, v in start.get("headers", ()) if k.lower() != b"content-length"
                ]
                json_headers = [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                ]
                await send({**start, "headers": [*kept, *json_headers]})
                await send({"type": "http.response.body", "body": body})
                return
            await send(start)
        await send(message)

    return send_json_refusal


def _id_problem(message: Any) -> str | None:
    """Why a request's `id` is no id: MCP takes a string or an integer, never null."""
    if not (isinstance(message, dict) and "id" in message and "method" in message):
        return None
    request_id = message["id"]
    if isinstance(request_id, str | int) and not isinstance(request_id, bool):
        return None
    shown = json.dumps(request_id)[:40]
    return f"the request's id {shown} is not one: MCP takes a string or an integer (never null)"


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
