"""The one family of errors mcpapps raises on purpose. Every one of them is a `McpappsError` whose
message is a sentence for a person: it names the app, file or field, and says what to do. Errors of
the SDK and the transport are turned into these where they enter (`actors/apps/upstream.py` for the
app's session); the front door maps them to HTTP and JSON-RPC answers by one table per protocol
(`web/errors.py`).

`Refusal` and its kinds are what a route raises to refuse a request: the kind says why (a bad
request, nothing there, a conflict, not now ...), which each protocol's table turns into its
status or code; the error carries only what the answer needs besides (a more precise machine
code, data a client may read, when to try again)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class McpappsError(Exception):
    """Anything mcpapps refuses or cannot do, said for a person."""


class ActorUnavailable(McpappsError):
    """An actor could not take a request (its mailbox is full, or it has stopped) or did not
    answer it in time."""


class ProtocolViolation(McpappsError):
    """An app broke the MCP protocol: the message says what it sent."""


class UpstreamError(McpappsError):
    """A request to an app's session failed. The SDK's and the transport's errors are turned
    into these where they enter (`actors/apps/upstream.py`), so the app actor reads one family."""


class UpstreamLost(UpstreamError):
    """The connection to the app is broken: the app is restarted as its policy says, not
    asked again on the same connection."""


class UpstreamTimeout(UpstreamError):
    """The app did not answer in time; the request was cancelled on the app's side."""


class UpstreamRejected(UpstreamError):
    """The app answered the request with a JSON-RPC error, kept in `rpc_error` (the SDK's
    `ErrorData`) so that the front door can pass it on as it is."""

    def __init__(self, message: str, rpc_error: object) -> None:
        super().__init__(message)
        self.rpc_error = rpc_error


class Refusal(McpappsError):
    """A request refused, said for the person who sent it. `code` is a machine code more
    precise than its kind's (None: the kind's own), `data` what a client may read besides the
    message (fields of the HTTP error body, a JSON-RPC error's `data`), `retry_at` when to ask
    again (epoch seconds: HTTP's `Retry-After`)."""

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        data: Mapping[str, Any] | None = None,
        retry_at: float | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.data = dict(data) if data else None
        self.retry_at = retry_at


class BadRequest(Refusal):
    """The request is malformed; the message says what to send instead."""


class InvalidParams(BadRequest):
    """A JSON-RPC request whose params its method does not take (an unknown name, a cursor
    never given out)."""


class Unparsable(BadRequest):
    """The body is not JSON that can be read as it was meant."""


class UnsupportedVersion(BadRequest):
    """The client speaks a protocol version no era of ours has."""


class Unauthorized(Refusal):
    """The request lacks the server's token, or has a wrong one."""


class Forbidden(Refusal):
    """The request is understood and refused: whoever sent it may not do this."""


class WrongHost(Refusal):
    """The request names a host this server does not answer for."""


class NotFound(Refusal):
    """What the request names does not exist (any more)."""


class ResourceNotFound(NotFound):
    """An MCP resource no app serves."""


class Conflict(Refusal):
    """The request cannot be done in the state things are in now."""


class WrongMediaType(Refusal):
    """The body is not of the type the route reads."""


class BodyTooLarge(Refusal):
    """The body is larger than the one limit every route has."""


class BodyTooSlow(Refusal):
    """The body was not finished in time."""


class ClientGone(Refusal):
    """The client closed the connection before its request was read: nobody to answer."""


class NotSupported(Refusal):
    """This server cannot do what is asked at all (not now, not later)."""


class UnusableAnswer(Refusal):
    """The app answered, but not with what the request needs (an error, or an answer that
    breaks what it declared): the app's fault, not the client's."""


class Unavailable(Refusal):
    """The request cannot be served now; `retry_at`, when set, says when to try again."""
