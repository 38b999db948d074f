"""What a view is refused, as errors of the one family: each kind says why. A kind refused on
the view's JSON-RPC endpoint has its error code here, since the code is what the kind means to
the page (and the refusal counter's label); the front door's table (web/views/answers.py) says
how each reads over HTTP. A refused request never reaches the app."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from supervisor.model.errors import McpappsError


class ViewRefusal(McpappsError):
    """A view's request the server does not pass on, said for a person; `data` is what the
    page may read besides (a limit's kind and when to retry)."""

    rpc_code: ClassVar[int] = -32000  # JSON-RPC's "server error": the request was not served

    def __init__(self, message: str, data: Mapping[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.data = dict(data) if data else None


class UnknownView(ViewRefusal):
    """No such view: it was never opened here, or its lease expired or was ended."""

    rpc_code = -32001


class NotAllowed(ViewRefusal):
    """Not the view's to call: another app's tool, or a tool for the model only."""

    rpc_code = -32002


class Limited(ViewRefusal):
    """A per-view limit was reached; `data` says which, and when to retry."""

    rpc_code = -32003


class Denied(ViewRefusal):
    """The person denied the call, or did not answer in time."""

    rpc_code = -32004


class UnknownMethod(ViewRefusal):
    """A JSON-RPC method a view may not ask."""

    rpc_code = -32601  # JSON-RPC's "method not found"


class BadParams(ViewRefusal):
    """A request's params its method does not take."""

    rpc_code = -32602  # JSON-RPC's "invalid params"


class NotRun(ViewRefusal):
    """The call could not be served: its app is not running, the supervisor is stopping or
    stopped, or the app's question could not be put to anyone."""


class CallLost(ViewRefusal):
    """The call ended without an answer (a bug of ours, not the app's)."""

    rpc_code = -32603  # JSON-RPC's "internal error"


class TooManyViews(ViewRefusal):
    """As many views are open as there may be: no other opens until one closes or expires
    (one unused expires within `retry_after_s`)."""

    def __init__(self, message: str, retry_after_s: float) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class UnknownApproval(ViewRefusal):
    """No call of this view waits for the person's approval under that id."""


class UnknownQuestion(ViewRefusal):
    """This view's app asked no question under that id."""


class BadDecision(ViewRefusal):
    """An approval's decision that is none of the person's choices."""


class Unreadable(ViewRefusal):
    """A view's request that is not JSON."""

    rpc_code = -32700  # JSON-RPC's "parse error"


class NotARequest(ViewRefusal):
    """JSON that is not one JSON-RPC request with a method."""

    rpc_code = -32600  # JSON-RPC's "invalid request"


class Inactive(ViewRefusal):
    """The view was rebuilt from a saved chat (a page reload, a supervisor restart): it shows
    what it showed and asks its app nothing until the person runs it again."""

    rpc_code = -32005


class UnknownCall(ViewRefusal):
    """No call of the model to this view's tools waits for an answer under that id."""
