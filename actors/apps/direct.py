"""Requests to a stdio app that pass by the SDK session: the hot path of a call.

The SDK's dispatcher gives every request a response stream of its own, a request clock, an
OpenTelemetry span and a hop through its receive loop; on a stdio app that is a visible share
of what a call through the gateway costs, and a call needs none of it. Here a request is one
line written with an id of its own, and the stdout reader hands its answer straight to the
waiting caller; everything else the app says (its own requests, notifications, the answers to
the SDK's requests) still goes to the SDK session.

The meaning is the SDK's, error for error: a request goes out as `send_raw_request` would put
it, byte for byte (an empty `_meta` dropped, no `params` when there are none, NaN as `null`),
a caller cancelled before it is sent never sends it, an answer correlates by the SDK's rule (an
id echoed as a string still finds its request), an error answer raises the
`MCPError` it stands for, no answer within the timeout raises `REQUEST_TIMEOUT` and tells the
app `notifications/cancelled`, a caller that gives up tells the app the same, and a closed
connection raises `CONNECTION_CLOSED` (the SDK's error values, so `actors/apps/upstream.py` maps
them as it maps the SDK's). What it leaves out is the SDK's client span (there is no tracer
here) and progress: a request that asks for progress takes the SDK's path.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping
from typing import Any

import anyio
import mcp_types as types
import pydantic_core
import trio
from mcp.shared.dispatcher import coerce_request_id
from mcp.shared.exceptions import MCPError

# Far above the ids the SDK session counts up from 1, so the two never meet on one pipe (and
# within a signed 32-bit integer, for an app that reads ids that way).
FIRST_ID = 1_000_000_000


class _Waiter:
    __slots__ = ("answered", "outcome")

    def __init__(self) -> None:
        self.answered = trio.Event()
        self.outcome: types.JSONRPCResponse | types.JSONRPCError | None = None


class DirectRequests:
    """The requests in flight past the SDK session on one stdio connection.

    `write(line)` writes a line now (or waits its turn behind a full pipe) and raises
    `anyio.BrokenResourceError` or `anyio.ClosedResourceError` when the connection is gone;
    `write_later(line)` hands a line over without waiting (a notice that must not hold up a
    caller that is leaving)."""

    def __init__(self, write: Callable[[bytes], Any], write_later: Callable[[bytes], None]) -> None:
        self._write = write
        self._write_later = write_later
        self._ids = itertools.count(FIRST_ID)
        self._waiting: dict[int, _Waiter] = {}
        self._closed = False

    async def send(
        self, method: str, params: Mapping[str, Any] | None, timeout: float | None
    ) -> dict[str, Any]:
        """Send a request and return the app's result as it is, or raise the SDK's error."""
        # A caller cancelled already never sends it (its request may not be safe to repeat).
        await trio.lowlevel.checkpoint_if_cancelled()
        if self._closed:
            raise MCPError(code=types.CONNECTION_CLOSED, message="Connection closed")
        request_id = next(self._ids)
        line = _request_line(request_id, method, params)
        waiter = self._waiting[request_id] = _Waiter()
        try:
            try:
                # From here the app may see the request (a line cut short by a cancelled
                # write is finished by the writer), so giving up tells it so.
                await self._write(line)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                raise MCPError(code=types.CONNECTION_CLOSED, message="Connection closed") from None
            with trio.move_on_after(math.inf if timeout is None else timeout):
                await waiter.answered.wait()
        except trio.Cancelled:
            # The caller gave up (its client went away, or the app is being stopped).
            if not waiter.answered.is_set():
                self._cancel(request_id, "caller cancelled")
            raise
        finally:
            del self._waiting[request_id]
        outcome = waiter.outcome
        if outcome is None:
            if not waiter.answered.is_set():
                self._cancel(request_id, f"timed out after {timeout}s")
                raise MCPError(code=types.REQUEST_TIMEOUT, message=f"Request {method!r} timed out")
            raise MCPError(code=types.CONNECTION_CLOSED, message="Connection closed")
        if isinstance(outcome, types.JSONRPCError):
            error = outcome.error
            raise MCPError(code=error.code, message=error.message, data=error.data)
        return outcome.result

    def answer(self, message: Any) -> bool:
        """Give an answer read from the app to its waiting request; whether it was one."""
        if not isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
            return False
        # "7" answers 7, as the SDK correlates them (apps that echo ids as strings exist).
        request_id = coerce_request_id(message.id) if message.id is not None else None
        waiter = self._waiting.get(request_id) if isinstance(request_id, int) else None
        if waiter is None or waiter.answered.is_set():
            return False
        waiter.outcome = message
        waiter.answered.set()
        return True

    def close(self) -> None:
        """The connection is gone: every request still waiting fails as closed."""
        self._closed = True
        for waiter in self._waiting.values():
            waiter.answered.set()

    def _cancel(self, request_id: int, reason: str) -> None:
        notice = {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": request_id, "reason": reason},
        }
        self._write_later(_json_line(notice))


def _request_line(request_id: int, method: str, params: Mapping[str, Any] | None) -> bytes:
    """The request as the SDK's `send_raw_request` writes it."""
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    fields = dict(params) if params is not None else {}
    meta = dict(fields.get("_meta") or {})
    if meta:
        fields["_meta"] = meta
    else:
        fields.pop("_meta", None)
    if fields:
        message["params"] = fields
    return _json_line(message)


def _json_line(message: dict[str, Any]) -> bytes:
    # NaN and infinities as `null`, as the SDK's models write them (a strict JSON parser on the
    # app's side would refuse the whole line otherwise).
    return pydantic_core.to_json(message, inf_nan_mode="null") + b"\n"
