"""What a view is refused, as errors of the one family: each kind says why. The front door's
tables (web/errors.py) say how each reads over HTTP and as a JSON-RPC error; the refusal counter
labels each by its `reason`. A refused request never reaches the app."""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from typing import Any

from supervisor.model.errors import Refusal


class ViewRefusal(Refusal):
    """A view's request the server does not pass on, said for a person; `data` is what the
    page may read besides (a limit's kind and when to retry)."""

    def __init__(
        self, message: str, data: Mapping[str, Any] | None = None, *, retry_at: float | None = None
    ) -> None:
        super().__init__(message, data=data, retry_at=retry_at)

    @property
    def reason(self) -> str:
        """The kind's name in snake case (`Limited`: "limited"), a label for metrics."""
        return re.sub(r"(?<!^)(?=[A-Z])", "_", type(self).__name__).lower()


class UnknownView(ViewRefusal):
    """No such view: it was never opened here, or its lease expired or was ended."""


class NotAllowed(ViewRefusal):
    """Not the view's to call: another app's tool, or a tool for the model only."""


class Limited(ViewRefusal):
    """A per-view limit was reached; `data` says which, and when to retry."""


class Denied(ViewRefusal):
    """The person denied the call, or did not answer in time."""


class UnknownMethod(ViewRefusal):
    """A JSON-RPC method a view may not ask."""


class BadParams(ViewRefusal):
    """A request's params its method does not take."""


class NotRun(ViewRefusal):
    """The call could not be served: its app is not running, the supervisor is stopping or
    stopped, or the app's question could not be put to anyone."""


class CallLost(ViewRefusal):
    """The call ended without an answer (a bug of ours, not the app's)."""


class TooManyViews(ViewRefusal):
    """As many views are open as there may be: no other opens until one closes or expires
    (one unused expires within `retry_after_s`)."""

    def __init__(self, message: str, retry_after_s: float) -> None:
        super().__init__(message, retry_at=time.time() + retry_after_s)
        self.retry_after_s = retry_after_s


class UnknownApproval(ViewRefusal):
    """No call of this view waits for the person's approval under that id."""


class UnknownQuestion(ViewRefusal):
    """This view's app asked no question under that id."""


class BadDecision(ViewRefusal):
    """An approval's decision that is none of the person's choices."""


class Unreadable(ViewRefusal):
    """A view's request that is not JSON."""


class NotARequest(ViewRefusal):
    """JSON that is not one JSON-RPC request with a method."""
