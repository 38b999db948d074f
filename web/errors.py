"""The front door's errors: one table per protocol.

Routes and endpoints raise errors of the one family (`supervisor/model/errors.py`, and the app
errors of `actors/messages.py`); this module alone says how each kind reads to a client:
- over HTTP (`HTTP_ERRORS`), a status and the body `{"error": {"code": "...", "message": "...",
  ...data}}`, with `Retry-After` when the error says when to try again. A Quart error handler is
  registered once for every kind of the table (`register`); the checks in front of Quart
  (`web.asgi`) send the same answer through `send_http_error`.
- over JSON-RPC (`RPC_ERRORS`), an error `{"code": ..., "message": "...", "data"?: ...}`: what
  the MCP endpoints raise to the SDK (`mcp_error`) or send themselves before the SDK reads a
  request (`send_rpc_error`, with the HTTP table's status for the answer around it).

A kind is looked up along its class's MRO: the most precise row wins, and a new subclass reads
as its parent does until it gets a row of its own.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import attrs
import mcp_types as types
from mcp.shared.exceptions import MCPError
from mcp_types import ErrorData
from quart import Response, jsonify
from werkzeug.exceptions import HTTPException

from actors.files.confine import (
    FileRefused,
    FileTooLarge,
    NoSuchFile,
    NotAFile,
    NotAFolder,
    OutsideWorkspace,
)
from actors.files.resources import UnknownResource
from actors.files.workspace import WriteRefused
from actors.messages import (
    AppError,
    AppUnavailable,
    CallFailed,
    CallTimeout,
    SignInRefused,
    UnknownApp,
    UnknownTool,
)
from actors.views.refusals import (
    BadDecision,
    BadParams,
    CallLost,
    Denied,
    Limited,
    NotAllowed,
    NotARequest,
    TooManyViews,
    UnknownApproval,
    UnknownMethod,
    UnknownQuestion,
    UnknownView,
    Unreadable,
    ViewRefusal,
)
from supervisor.model.errors import (
    ActorUnavailable,
    BadRequest,
    BodyTooLarge,
    BodyTooSlow,
    ClientGone,
    Conflict,
    Forbidden,
    InvalidParams,
    NotFound,
    NotSupported,
    Refusal,
    ResourceNotFound,
    Unauthorized,
    Unavailable,
    Unparsable,
    UnsupportedVersion,
    UnusableAnswer,
    WrongHost,
    WrongMediaType,
)

APP_ERROR = -32000  # JSON-RPC "server error": the request could not be served
RESOURCE_NOT_FOUND = -32002  # MCP's code for a resource no one serves


def _said(error: BaseException) -> str:
    return getattr(error, "message", None) or str(error)


@attrs.frozen
class HttpRow:
    status: int
    code: str  # the machine code, unless the error carries a more precise one
    words: Callable[[BaseException], str] = _said  # the message, from the error
    headers: tuple[tuple[bytes, bytes], ...] = ()


@attrs.frozen
class RpcRow:
    code: int
    words: Callable[[BaseException], str] = _said


# A client that is not let in is told how to authenticate (RFC 9110: every 401 says so).
_BEARER = ((b"www-authenticate", b"Bearer"),)

HTTP_ERRORS: Mapping[type[BaseException], HttpRow] = {
    BadRequest: HttpRow(400, "bad_request"),
    Unauthorized: HttpRow(401, "unauthorized", headers=_BEARER),
    Forbidden: HttpRow(403, "refused"),
    NotFound: HttpRow(404, "not_found"),
    BodyTooSlow: HttpRow(408, "body_timeout"),
    Conflict: HttpRow(409, "conflict"),
    BodyTooLarge: HttpRow(413, "body_too_large"),
    WrongMediaType: HttpRow(415, "unsupported_media_type"),
    WrongHost: HttpRow(421, "host_not_allowed"),
    ClientGone: HttpRow(499, "client_closed"),
    NotSupported: HttpRow(501, "not_implemented"),
    Unavailable: HttpRow(503, "unavailable"),
    UnusableAnswer: HttpRow(502, "unusable_answer"),
    UnknownApp: HttpRow(404, "unknown_app"),
    UnknownTool: HttpRow(404, "unknown_tool"),
    SignInRefused: HttpRow(409, "no_sign_in"),
    AppError: HttpRow(500, "app_error"),
    CallFailed: HttpRow(502, "call_failed"),
    AppUnavailable: HttpRow(503, "app_unavailable"),
    CallTimeout: HttpRow(504, "timeout"),
    ActorUnavailable: HttpRow(503, "busy", lambda e: f"the supervisor could not answer: {e}"),
    # What a view is refused: most only on its JSON-RPC endpoint, these few over HTTP too.
    ViewRefusal: HttpRow(403, "refused"),
    UnknownView: HttpRow(404, "unknown_view"),
    UnknownApproval: HttpRow(404, "unknown_approval"),
    UnknownQuestion: HttpRow(404, "not_found"),
    BadDecision: HttpRow(400, "bad_request"),
    TooManyViews: HttpRow(503, "too_many_views"),
    # What the workspace will not serve.
    FileRefused: HttpRow(400, "file_refused"),
    OutsideWorkspace: HttpRow(403, "outside_workspace"),
    UnknownResource: HttpRow(404, "unknown_resource"),
    NoSuchFile: HttpRow(404, "not_found"),
    NotAFile: HttpRow(400, "not_a_file"),
    NotAFolder: HttpRow(400, "not_a_folder"),
    FileTooLarge: HttpRow(413, "too_large"),
    WriteRefused: HttpRow(403, "read_only"),
}

RPC_ERRORS: Mapping[type[BaseException], RpcRow] = {
    Refusal: RpcRow(APP_ERROR),
    BadRequest: RpcRow(types.INVALID_REQUEST),
    InvalidParams: RpcRow(types.INVALID_PARAMS),
    Unparsable: RpcRow(types.PARSE_ERROR),
    UnsupportedVersion: RpcRow(types.UNSUPPORTED_PROTOCOL_VERSION),
    # A session that is not (or no longer) there: what the SDK answers for one it does not know.
    NotFound: RpcRow(types.INVALID_REQUEST),
    ResourceNotFound: RpcRow(RESOURCE_NOT_FOUND),
    AppError: RpcRow(APP_ERROR),
    UnknownTool: RpcRow(types.INVALID_PARAMS),
    CallTimeout: RpcRow(types.REQUEST_TIMEOUT),
    ActorUnavailable: RpcRow(APP_ERROR, lambda e: f"mcpapps could not pass the request on: {e}"),
    # A view's refusals: the page reads each kind by its code (codes of ours for the view's own
    # rules, JSON-RPC's for what JSON-RPC names).
    ViewRefusal: RpcRow(APP_ERROR),
    UnknownView: RpcRow(-32001),
    NotAllowed: RpcRow(-32002),
    Limited: RpcRow(-32003),
    Denied: RpcRow(-32004),
    UnknownMethod: RpcRow(types.METHOD_NOT_FOUND),
    BadParams: RpcRow(types.INVALID_PARAMS),
    CallLost: RpcRow(types.INTERNAL_ERROR),
    Unreadable: RpcRow(types.PARSE_ERROR),
    NotARequest: RpcRow(types.INVALID_REQUEST),
}

Row = TypeVar("Row")


def row_of(table: Mapping[type[BaseException], Row], error: BaseException) -> Row | None:
    """The row of the most precise kind of `error` the table has."""
    return next((table[kind] for kind in type(error).__mro__ if kind in table), None)


@attrs.frozen
class HttpAnswer:
    status: int
    body: dict[str, Any]
    headers: tuple[tuple[bytes, bytes], ...]


def http_answer(error: BaseException) -> HttpAnswer:
    """How `error` reads over HTTP; a LookupError if the table has no row for it."""
    row = row_of(HTTP_ERRORS, error)
    if row is None:
        raise LookupError(f"no HTTP answer for {type(error).__name__}")
    code = getattr(error, "code", None) if isinstance(error, Refusal) else None
    data = getattr(error, "data", None) or {}
    headers = (*row.headers, *retry_after(getattr(error, "retry_at", None)))
    return HttpAnswer(row.status, error_body(code or row.code, row.words(error), **data), headers)


def rpc_error(error: BaseException) -> ErrorData:
    """How `error` reads over JSON-RPC; a LookupError if the table has no row for it. An error
    the app answered with passes through as it is."""
    if isinstance(error, CallFailed) and error.rpc_error is not None:
        return error.rpc_error
    row = row_of(RPC_ERRORS, error)
    if row is None:
        raise LookupError(f"no JSON-RPC error for {type(error).__name__}")
    return ErrorData(code=row.code, message=row.words(error), data=getattr(error, "data", None))


def mcp_error(error: Exception) -> MCPError:
    """`rpc_error` as the SDK's server raises it; an error the table has no row for is raised
    again as it is (a bug, which the SDK answers as an internal error)."""
    try:
        return MCPError.from_error_data(rpc_error(error))
    except LookupError:
        raise error from None


def error_body(code: str, message: str, **extra: Any) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, **extra}}


def json_error(status: int, code: str, message: str, **extra: Any) -> Response:
    """An error body with its status: Quart's own refusals, which are not of the family."""
    response = jsonify(error_body(code, message, **extra))
    response.status_code = status
    return response


def error_response(error: BaseException) -> Response:
    answer = http_answer(error)
    response = jsonify(answer.body)
    response.status_code = answer.status
    for name, value in answer.headers:
        response.headers[name.decode()] = value.decode()
    return response


def register(app: Any) -> None:
    """The one error handler of the Quart app: each kind of the HTTP table answered as the
    table says, and Quart's own refusals (405, 404 of an unknown route ...) in the same body."""

    async def family(error: Exception) -> Response:
        return error_response(error)

    for kind in HTTP_ERRORS:
        app.register_error_handler(kind, family)

    @app.errorhandler(HTTPException)
    async def http_error(error: HTTPException) -> Any:
        code = (error.name or "error").lower().replace(" ", "_")
        return json_error(error.code or 500, code, error.description or error.name)


def retry_after_s(at: float | None) -> int | None:
    """Whole seconds until `at` (epoch seconds), at least 1 (a client told 0 would ask again at
    once, before the restart); None when nothing is due."""
    return None if at is None else max(1, round(at - time.time()))


def retry_after(at: float | None) -> list[tuple[bytes, bytes]]:
    """The `Retry-After` header for a restart due at `at`, if one is due."""
    seconds = retry_after_s(at)
    return [] if seconds is None else [(b"retry-after", str(seconds).encode())]


async def _send_json(
    send: Any, status: int, body: bytes, headers: tuple[tuple[bytes, bytes], ...], kind: str
) -> None:
    await send(
        {
            "type": f"{kind}.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": f"{kind}.body", "body": body})


async def send_http_error(
    send: Any,
    error: BaseException,
    *,
    headers: tuple[tuple[bytes, bytes], ...] = (),
    websocket: bool = False,
) -> None:
    """`http_answer` sent on an ASGI `send`. A WebSocket upgrade is refused with the same status
    and body, as the HTTP answer to its handshake (ASGI's `websocket.http.response`)."""
    answer = http_answer(error)
    kind = "websocket.http.response" if websocket else "http.response"
    body = json.dumps(answer.body).encode()
    await _send_json(send, answer.status, body, (*answer.headers, *headers), kind)


def rpc_body(error: ErrorData, request_id: Any = None) -> bytes:
    """A JSON-RPC error response answering `request_id` (None: a request with no id known)."""
    wire: dict[str, Any] = {"code": error.code, "message": error.message}
    if error.data is not None:
        wire["data"] = error.data
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "error": wire}).encode()


async def send_rpc_error(send: Any, error: BaseException, *, request_id: Any = None) -> None:
    """An MCP request refused before the SDK reads it: the JSON-RPC error `rpc_error` gives,
    in an HTTP answer with the status (and `Retry-After`) the HTTP table gives. MCP clients read
    a JSON-RPC error from the body of any status."""
    answer = http_answer(error)
    body = rpc_body(rpc_error(error), request_id)
    await _send_json(send, answer.status, body, answer.headers, "http.response")
