"""The one family of errors mcpapps raises on purpose. Every one of them is a `McpappsError` whose
message is a sentence for a person: it names the app, file or field, and says what to do. Errors of
the SDK and the transport are turned into these where they enter (`actors/apps/upstream.py` for the
app's session); the front door maps them to HTTP and JSON-RPC answers in its own two tables
(`web/errors.py`, `web/mcpdoor/relay.py`)."""

from __future__ import annotations


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
