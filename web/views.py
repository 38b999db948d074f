"""The app views open in browsers, as the server keeps them: leases, the gate on what a view may
call, its limits and the person's approvals. Plain data with the clock passed in; the one
owner is the front door's view endpoint (web/viewdoor.py), whose handlers change it only
between awaits, so no two of them ever see it half changed.

A lease lives in memory only: it is gone when the page tears the view down, when it is not
used for `lease_s`, when its app restarts with a changed definition, and with the process. A
grant ("allow while this app is open") lives in its lease, so it goes with it.
"""

from __future__ import annotations

import json
import math
import secrets
import time
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any, Literal

import attrs
import mcp_types as types

from supervisor.model.errors import McpappsError
from supervisor.model.viewsconfig import Approval, ViewsConfig

Decision = Literal["once", "while-open", "deny"]
DECISIONS: tuple[Decision, ...] = ("once", "while-open", "deny")

# JSON-RPC error codes of the view endpoint (the server-error range JSON-RPC leaves to servers).
UNKNOWN_VIEW = -32001  # no such view, or its lease expired or was torn down
NOT_ALLOWED = -32002  # not the view's to call: another app's tool, a model-only tool
LIMITED = -32003  # a per-view limit was reached; `data` says which and when to retry
DENIED = -32004  # the person denied the call, or did not answer in time

MODEL_CONTEXT_MAX = 8_000  # characters of a view's latest model context that are kept
# Views open at once, over every app: each holds its lease, its opening call and its model
# context until it is closed or unused for `lease_s`, so without a cap a client could keep
# opening them (the MCP endpoints cap their sessions the same way).
MAX_OPEN_VIEWS = 1_000


class Refused(McpappsError):
    """A view's request the server does not pass on, as a JSON-RPC error."""

    def __init__(self, code: int, message: str, data: Mapping[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = dict(data) if data else None

    def error(self) -> dict[str, Any]:
        body: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data:
            body["data"] = self.data
        return body


@attrs.define
class Lease:
    id: str
    app_id: str
    chat_session: str | None  # the chat session that opened it; None from the app list
    tool_call: Mapping[str, Any] | None  # what it renders: {toolName, resourceUri, ...}
    created: float
    last_used: float
    in_flight: int = 0
    requests: deque[float] = attrs.Factory(deque)
    tool_calls: deque[float] = attrs.Factory(deque)
    grants: set[str] = attrs.Factory(set)  # tools allowed while this view is open
    model_context: str | None = None
    # The call that opens the view, which the person asked for by opening it: it alone runs
    # without approval, once, with exactly the arguments the view was opened with.
    opening: Mapping[str, Any] | None = None

    def descriptor(self) -> dict[str, Any]:
        return {
            "viewId": self.id,
            "appId": self.app_id,
            "sessionId": self.chat_session,
            "toolCall": dict(self.tool_call) if self.tool_call else None,
        }


class TooManyViews(McpappsError):
    """`MAX_OPEN_VIEWS` views are open: no other opens until one closes or expires."""


class ViewTable:
    def __init__(
        self, config: ViewsConfig | None = None, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.config = config or ViewsConfig()
        self._clock = clock
        self._leases: dict[str, Lease] = {}

    def __len__(self) -> int:
        return len(self._leases)

    def open(
        self,
        app_id: str,
        chat_session: str | None = None,
        tool_call: Mapping[str, Any] | None = None,
    ) -> Lease:
        self._expire()
        if len(self._leases) >= MAX_OPEN_VIEWS:
            raise TooManyViews(
                f"{MAX_OPEN_VIEWS} views are open, the most there may be: close one, or try again"
                f" once an unused one has expired (after {self.config.lease_s:g} s)"
            )
        now = self._clock()
        lease = Lease(secrets.token_urlsafe(24), app_id, chat_session, tool_call, now, now)
        self._leases[lease.id] = lease
        return lease

    def get(self, view_id: str) -> Lease:
        """The live lease, refreshed, or `Refused` (unknown, expired or torn down)."""
        self._expire()
        lease = self._leases.get(view_id)
        if lease is None:
            raise Refused(
                UNKNOWN_VIEW,
                "this view is unknown or has expired (views last"
                f" {self.config.lease_s:g} s unused, and end when closed or when their app"
                " restarts with a changed definition): open it again",
            )
        lease.last_used = self._clock()
        return lease

    def close(self, view_id: str) -> bool:
        return self._leases.pop(view_id, None) is not None

    def drop_app(self, app_id: str) -> int:
        gone = [v for v, lease in self._leases.items() if lease.app_id == app_id]
        for view_id in gone:
            del self._leases[view_id]
        return len(gone)

    def of_session(self, chat_session: str) -> list[Lease]:
        self._expire()
        return [lease for lease in self._leases.values() if lease.chat_session == chat_session]

    def admit(self, lease: Lease, *, tool_call: bool) -> None:
        """Count one request of the view in, or refuse it (it is then not counted)."""
        config = self.config
        now = self._clock()
        for stamps in (lease.requests, lease.tool_calls):
            while stamps and stamps[0] <= now - config.window_s:
                stamps.popleft()
        if lease.in_flight >= config.max_in_flight:
            raise Refused(
                LIMITED,
                f"this view already has {lease.in_flight} requests in flight, the most a view"
                f" may have at once ({config.max_in_flight}): wait for one to finish",
                {"limit": config.max_in_flight, "kind": "in-flight"},
            )
        if len(lease.requests) >= config.max_requests:
            raise _rate_refusal("requests", config.max_requests, lease.requests, config, now)
        if tool_call and len(lease.tool_calls) >= config.max_tool_calls:
            raise _rate_refusal("tool calls", config.max_tool_calls, lease.tool_calls, config, now)
        lease.requests.append(now)
        if tool_call:
            lease.tool_calls.append(now)
        lease.in_flight += 1

    def release(self, lease: Lease) -> None:
        lease.in_flight = max(0, lease.in_flight - 1)

    def _expire(self) -> None:
        cutoff = self._clock() - self.config.lease_s
        for view_id in [v for v, lease in self._leases.items() if lease.last_used <= cutoff]:
            del self._leases[view_id]


def _rate_refusal(
    what: str, limit: int, stamps: deque[float], config: ViewsConfig, now: float
) -> Refused:
    retry = max(0.0, stamps[0] + config.window_s - now)
    return Refused(
        LIMITED,
        f"this view made {limit} {what} in the last {config.window_s:g} s, the most a view may:"
        f" retry in {math.ceil(retry)} s",
        {"limit": limit, "kind": what.replace(" ", "-"), "retryAfterS": math.ceil(retry)},
    )


def is_visible_to_app(tool: Mapping[str, Any]) -> bool:
    """A tool a view may call: its `_meta.ui.visibility` includes "app"; absent means both."""
    ui = (tool.get("_meta") or {}).get("ui") or {}
    visibility = ui.get("visibility") if isinstance(ui, Mapping) else None
    return not isinstance(visibility, list) or "app" in visibility


def is_read_only(tool: Mapping[str, Any]) -> bool:
    annotations = tool.get("annotations") or {}
    return isinstance(annotations, Mapping) and annotations.get("readOnlyHint") is True


def needs_approval(approval: Approval, tool: Mapping[str, Any]) -> bool:
    """Whether a view's call of `tool` waits for the person: under "writes" (the default) a
    tool is a write unless its annotations say `readOnlyHint: true`."""
    if approval == "never":
        return False
    if approval == "always":
        return True
    return not is_read_only(tool)


def model_context_text(params: Mapping[str, Any]) -> str:
    """The text of a `ui/update-model-context`: its text blocks, else its structured content
    as JSON, cut to `MODEL_CONTEXT_MAX` characters."""
    content = params.get("content")
    if content is not None and not isinstance(content, list):
        message = "'content' must be a list of content blocks, such as {'type': 'text', 'text': …}"
        raise Refused(types.INVALID_PARAMS, message)
    parts = [
        str(c.get("text"))
        for c in content or ()
        if isinstance(c, Mapping) and c.get("type") == "text"
    ]
    if not parts and params.get("structuredContent") is not None:
        parts.append(json.dumps(params["structuredContent"], ensure_ascii=False))
    text = "\n".join(parts)
    if len(text) > MODEL_CONTEXT_MAX:
        text = text[:MODEL_CONTEXT_MAX] + f"… [{len(text) - MODEL_CONTEXT_MAX} characters cut]"
    return text
