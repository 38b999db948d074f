"""The lean path of the hot request: a `tools/call` on an open handshake-era session whose
client can be told nothing but the answer, answered as one JSON body.

The SDK's server machinery answers every request POST as an event stream, through its
dispatcher, its middleware and several task groups, so that whatever the server sends while the
request runs (progress, a sampling or elicitation request) reaches the client on that stream.
When nothing can be sent, that machinery is most of what a proxied call costs. A call takes this
path only when nothing can:

- the session is a handshake-era one this endpoint opened, still open, and the request names a
  the version the session negotiated (or none, which the SDK reads as that version);
- its client declared none of sampling, elicitation and roots when it opened the session, so the
  app's requests to it are refused as they would be on the stream (a 2026-07-28 app's
  `input_required` included);
- it asks for no progress (no `progressToken`) and for no task;
- it accepts both JSON and an event stream, as the SDK requires, so a JSON answer is one it
  reads.

Everything else takes the SDK's path. The answer means what the SDK's would, byte for byte in
its JSON-RPC message: the params are checked by the SDK's own request surface, the result is
shaped by the SDK's own result surface for the session's version, errors are mapped by the
SDK's own rule, the session's idle clock stops while the call runs as for any request, and a
client's `notifications/cancelled` cancels the call as it would the SDK's handler (the client
then gets what the SDK's path answers then, error -32800 "Request cancelled"). Only the
framing differs (`application/json` instead of one `message` event), which the client chose
by accepting both.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qsl

import attrs
import pydantic_core
import trio
from mcp.server.streamable_http import REQUEST_CANCELLED
from mcp.shared.jsonrpc_dispatcher import handler_exception_to_error_data
from mcp_types import INTERNAL_ERROR, ErrorData
from mcp_types.methods import serialize_server_result, validate_client_request
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION
from pydantic import ValidationError

from actors.apps.upstream import ServerRequestRefused
from actors.catalog import Wire
from actors.runtime import Abandonment
from supervisor.model import jsonout

# The client capabilities that let a server ask its client something while a request runs.
_ASKABLE = ("sampling", "elicitation", "roots")
_NO_CAPABILITY = {
    "sampling/createMessage": "sampling",
    "elicitation/create": "elicitation",
    "roots/list": "roots",
}


@attrs.frozen
class FastCall:
    """One call taken by the lean path: what the endpoint passes to its app."""

    session_id: str
    request_id: str | int
    params: Wire  # as the client sent them (the endpoint strips the envelope)
    query: str  # the request's query string (`?sessionId=` on `/apps/mcp/<appId>`)


class QuietCaller:
    """The client of a lean call as the app's actor sees it: it cannot be asked anything (it
    declared no capability for it) and asked for no progress."""

    on_progress = None

    def __init__(self, session_id: str) -> None:
        self.owner = f"client-{session_id}"

    async def ask(self, method: str, params: Wire) -> Wire:
        capability = _NO_CAPABILITY.get(method, method)
        raise ServerRequestRefused(
            f"the client did not declare the {capability} capability, so it is not asked {method}"
        )


# Pass a lean call to the app: the result as the app gave it, or an MCPError.
Pass = Callable[[FastCall, QuietCaller, Abandonment], Awaitable[Wire]]


class FastPath:
    """The lean path of one endpoint: which of its sessions may take it, and the calls on it
    in flight (to cancel one the client cancels)."""

    def __init__(self, manager: Any, pass_on: Pass) -> None:
        self._manager = manager
        self._pass_on = pass_on
        # Sessions whose client can be asked nothing → the protocol version they negotiated.
        self._quiet: dict[str, str] = {}
        self._running: dict[tuple[str, str], trio.CancelScope] = {}

    # ---- sessions -----------------------------------------------------------------------------

    def watch_opening(self, message: Any, send: Any) -> Any:
        """For a POST without a session: if it opens one (`initialize`) for a client that can
        be asked nothing, the session the SDK answers with is remembered."""
        if not (
            isinstance(message, dict)
            and message.get("method") == "initialize"
            and isinstance(message.get("params"), dict)
        ):
            return send
        capabilities = message["params"].get("capabilities")
        if not isinstance(capabilities, dict) or any(
            capabilities.get(name) is not None for name in _ASKABLE
        ):
            return send
        # As the SDK negotiates it: the client's version if it is one it speaks, else its latest.
        requested = message["params"].get("protocolVersion")
        version = (
            requested if requested in HANDSHAKE_PROTOCOL_VERSIONS else LATEST_HANDSHAKE_VERSION
        )

        async def send_noting_session(event: dict[str, Any]) -> None:
            if event["type"] == "http.response.start" and event["status"] == 200:
                for name, value in event.get("headers", ()):
                    if name.lower() == b"mcp-session-id":
                        self._remember(value.decode("latin-1"), version)
            await send(event)

        return send_noting_session

    def _remember(self, session_id: str, version: str) -> None:
        # Sessions end in the SDK (DELETE, idle timeout) without telling anyone: forget the
        # ended ones now and then, so the set stays as large as the open sessions.
        if len(self._quiet) > 2 * len(self._sessions()) + 16:
            open_now = self._sessions()
            self._quiet = {s: v for s, v in self._quiet.items() if s in open_now}
        self._quiet[session_id] = version

    def _sessions(self) -> dict[str, Any]:
        # The session manager's transports by session id (private to the pinned SDK,
        # mcp==2.3.0; the manager offers no other way to tell an open session).
        return self._manager._server_instances

    def _transport(self, session_id: str) -> Any:
        if session_id not in self._quiet:
            return None
        transport = self._sessions().get(session_id)
        if transport is None or transport.is_terminated or transport.idle_scope is None:
            self._quiet.pop(session_id, None)
            return None
        if transport.idle_scope.cancel_called or self._manager._session_owners.get(session_id):
            return None
        return transport

    # ---- calls --------------------------------------------------------------------------------

    def take(self, message: Any, headers: dict[str, str], scope: dict[str, Any]) -> Any:
        """The call and the session's transport if the lean path may answer `message`, else
        None (the SDK answers it)."""
        session_id = headers.get("mcp-session-id")
        if session_id is None or not isinstance(message, dict):
            return None
        negotiated = self._quiet.get(session_id)
        # Requests and results are shaped by the version the session negotiated (a request
        # without the header is read under it, as the SDK does); one naming another version
        # is the SDK's to judge.
        version = headers.get("mcp-protocol-version", negotiated)
        params = message.get("params")
        request_id = message.get("id")
        if (
            message.get("method") != "tools/call"
            or message.get("jsonrpc") != "2.0"
            or not isinstance(request_id, str | int)
            or isinstance(request_id, bool)
            or not isinstance(params, dict)
            or "task" in params
            or negotiated is None
            or version != negotiated
            or not accepts_both(headers.get("accept", ""))
            or len(message) != 4
        ):
            return None
        meta = params.get("_meta")
        if meta is not None and (not isinstance(meta, dict) or "progressToken" in meta):
            return None
        try:
            validate_client_request("tools/call", version, params)
        except (ValidationError, KeyError, ValueError):
            return None  # the SDK says what is wrong with it
        transport = self._transport(session_id)
        if transport is None:
            return None
        query = scope.get("query_string", b"").decode("latin-1")
        return FastCall(session_id, request_id, params, query), transport, version

    async def answer(self, taken: Any, send: Any) -> None:
        """Answer a call `take` accepted."""
        call, transport, version = taken
        key = (call.session_id, str(call.request_id))
        abandoned = Abandonment()
        body: bytes | None = None
        # A request in flight holds the session open, as the SDK's own requests do (its
        # transport's idle clock: private to the pinned SDK, mcp==2.3.0).
        idle = transport.idle_scope if transport._idle_timeout is not None else None
        transport._requests_in_flight += 1
        if idle is not None:
            idle.deadline = math.inf
        try:
            with trio.CancelScope() as scope:
                self._running[key] = scope
                try:
                    result = await self._pass_on(call, QuietCaller(call.session_id), abandoned)
                    shaped = serialize_server_result("tools/call", version, result)
                    body = response(call.request_id, {"result": shaped})
                except trio.Cancelled:
                    abandoned.set()  # the client cancelled it: so does the app's request
                    # The SDK's handshake-era transport answers it so, for the stream's sake.
                    error = ErrorData(code=REQUEST_CANCELLED, message="Request cancelled")
                    body = response(call.request_id, {"error": error_wire(error)})
                    raise
                except ValidationError:
                    # What the SDK answers for a result its surface refuses.
                    error = ErrorData(
                        code=INTERNAL_ERROR, message="Handler returned an invalid result"
                    )
                    body = response(call.request_id, {"error": error_wire(error)})
                except Exception as caught:
                    # The SDK's rule: an MCPError says its own error, anything else is code 0.
                    error = handler_exception_to_error_data(caught) or ErrorData(
                        code=0, message=str(caught)
                    )
                    body = response(call.request_id, {"error": error_wire(error)})
        finally:
            self._running.pop(key, None)
            transport._requests_in_flight -= 1
            if idle is not None and not transport._requests_in_flight:
                idle.deadline = trio.current_time() + transport._idle_timeout
        session = (b"mcp-session-id", call.session_id.encode("latin-1"))
        assert body is not None  # an answer, an error, or that the client cancelled it
        await _send(send, b"application/json", body, session)

    def cancel(self, message: Any, session_id: str | None) -> None:
        """A client's `notifications/cancelled` for a lean call cancels it (the SDK, which
        gets the notification too, knows no such request and ignores it)."""
        if session_id is None or not isinstance(message, dict):
            return
        if message.get("method") != "notifications/cancelled":
            return
        params = message.get("params")
        request_id = params.get("requestId") if isinstance(params, dict) else None
        scope = self._running.get((session_id, str(request_id)))
        if scope is not None:
            scope.cancel()


def accepts_both(accept: str) -> bool:
    """The SDK's reading of `Accept` (`check_accept_headers`): JSON and an event stream, or
    wildcards that cover them."""
    kinds = {part.split(";")[0].strip().lower() for part in accept.split(",")}
    json_ok = bool(kinds & {"application/json", "application/*", "*/*"})
    return json_ok and bool(kinds & {"text/event-stream", "text/*", "*/*"})


def error_wire(error: ErrorData) -> Wire:
    """An error as a JSON-RPC answer carries it."""
    return error.model_dump(by_alias=True, mode="json", exclude_none=True)


def response(request_id: str | int, outcome: Wire) -> bytes:
    """The JSON-RPC answer to a request, `outcome` its `result` or `error` (both lean paths)."""
    return jsonout.dumps(
        {"jsonrpc": "2.0", "id": request_id, **outcome}, separators=(",", ":"), ensure_ascii=False
    ).encode()


async def _send(send: Any, kind: bytes, body: bytes, session: tuple[bytes, bytes]) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [
                (b"content-type", kind),
                (b"content-length", str(len(body)).encode()),
                session,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def query_value(query: str, name: str) -> str | None:
    """A query parameter as the SDK's request reads it (the last one of that name)."""
    values = [v for k, v in parse_qsl(query, keep_blank_values=True) if k == name]
    return values[-1] if values else None


def parse(body: bytes) -> Any:
    """The body's JSON as the SDK's transport reads it (the same parser, which refuses what
    `json` would let through, such as a lone surrogate), or None if it refuses it (the SDK
    then answers with its parse error)."""
    try:
        return pydantic_core.from_json(body)
    except (ValueError, RecursionError):
        return None
