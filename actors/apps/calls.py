"""The requests an app actor passes to its app: each runs as a task of the incarnation it was
sent on, waits for one of the app's call slots, and is answered exactly once (by the app, by its
deadline, or by the incarnation's death); which are in flight and who is waiting for each; what
may be put on the wire at all, and how failures read.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import pydantic_core
import trio

from actors.apps.upstream import ServerRequestRefused, Upstream, error_text
from actors.cancellation import split_cancelled
from actors.catalog import Wire
from actors.messages import AppUnavailable, CallFailed, CallTimeout, UpstreamRequest
from actors.metrics import Metrics
from actors.runtime import Answer
from supervisor.model import jsonin
from supervisor.model.errors import UpstreamLost, UpstreamTimeout


class InFlight:
    """The requests in flight on one app: each caller's answer, and the client behind it when
    that client can be asked something (sampling, elicitation) during the request."""

    def __init__(self, app_id: str) -> None:
        self.app_id = app_id
        self._replies: dict[object, Answer[Any]] = {}
        self._callers: dict[object, Any] = {}

    def __len__(self) -> int:
        return len(self._replies)

    def add(self, message: UpstreamRequest) -> object:
        """List a request; the token that names it."""
        token = object()
        self._replies[token] = message.reply
        if message.caller is not None:
            self._callers[token] = message.caller
        return token

    def caller(self, token: object) -> Any:
        return self._callers.get(token)

    def settle(self, token: object) -> Answer[Any] | None:
        """Unlist a request; its answer, or None if it was answered already (failed with its
        incarnation)."""
        self._callers.pop(token, None)
        return self._replies.pop(token, None)

    def take_all(self) -> Iterator[Answer[Any]]:
        """Unlist every request; their answers, to fail them (never replayed: a tool call may
        not be idempotent)."""
        replies = list(self._replies.values())
        self._replies.clear()
        self._callers.clear()
        return iter(replies)

    async def ask_client(self, method: str, params: Wire, timeout: float) -> Wire:
        """The app asks its client something (sampling, elicitation) during a request. In the
        handshake era nothing on the wire says which of our requests caused it, so a client is
        asked only when its request is the one in flight: with two, the question could reach
        the wrong person, and is refused instead. (On 2026-07-28 the question is the result of
        the very request, and the front door asks that request's client.)"""
        callers = list(self._callers.values())
        if len(self._replies) == 1 and len(callers) == 1:
            with trio.move_on_after(timeout):
                return await callers[0].ask(method, params)
            raise ServerRequestRefused(
                f"the client did not answer {method} within {timeout:g} s (requestTimeoutSeconds)"
            )
        if not callers:
            why = "no client of its requests in flight can be asked"
        else:
            why = (
                f"{len(self._replies)} requests were in flight and nothing says which one"
                " asked (handshake era), so no client is asked"
            )
        raise ServerRequestRefused(f"app '{self.app_id}' asked for {method}, but {why}")


class Calls:
    """The calls of one app: its call slots (`max_concurrent_calls`) and its calls in flight.
    The actor's hooks: `on_answer(message)` when the app answered (it is alive; a subscribe
    it agreed to counts), `on_done(message)` when a request sent ends, whichever way,
    `on_settled()` when a call leaves the table, `stopped_text()` for a call a stop cut
    short."""

    def __init__(
        self,
        app_id: str,
        *,
        timeout_s: float,
        slots: int,
        metrics: Metrics | None,
        on_answer: Callable[[UpstreamRequest | None], None],
        on_done: Callable[[UpstreamRequest], None],
        on_settled: Callable[[], None],
        stopped_text: Callable[[], str],
    ) -> None:
        self.app_id = app_id
        self.in_flight = InFlight(app_id)
        self._timeout = timeout_s
        self._slots = slots
        self._limiter = trio.CapacityLimiter(slots)
        self._metrics = metrics
        self._on_answer = on_answer
        self._on_done = on_done
        self._on_settled = on_settled
        self._stopped_text = stopped_text

    def start(
        self,
        message: UpstreamRequest,
        upstream: Upstream,
        nursery: trio.Nursery,
        lost: Callable[[UpstreamLost], Awaitable[str]],
    ) -> None:
        """Send `message` on `upstream` as a task in `nursery` (its incarnation's); `lost`
        declares the incarnation dead when the call finds the connection broken, and says
        why."""
        token = self.in_flight.add(message)
        nursery.start_soon(self._run, message, upstream, lost, token)

    def fail_all(self, text: str) -> None:
        """Every call still waiting fails now with `text`, which names the app and the cause
        (never replayed: a tool call may not be idempotent)."""
        for reply in self.in_flight.take_all():
            reply.fail(AppUnavailable(self.app_id, text))
        self._on_settled()

    async def _run(
        self,
        message: UpstreamRequest,
        upstream: Upstream,
        lost: Callable[[UpstreamLost], Awaitable[str]],
        token: object,
    ) -> None:
        app, timeout = self.app_id, self._timeout
        began = trio.current_time()
        deadline = began + timeout
        method, params, what = request_of(message)
        caller = self.in_flight.caller(token)
        answer: Any = None  # what the caller gets: a result, or an error
        try:
            try:
                # A free call slot is taken without a scheduling round (the call itself waits).
                self._limiter.acquire_on_behalf_of_nowait(token)
            except trio.WouldBlock:
                with trio.move_on_at(deadline) as waiting:
                    await self._limiter.acquire_on_behalf_of(token)
                if waiting.cancelled_caught:
                    text = timeout_text(app, what, timeout, sent=False, slots=self._slots)
                    answer = CallTimeout(app, text)
                    return
            abandoned = message.abandoned
            try:
                # A caller that gives up (its client cancelled or went away) cancels the
                # request: the SDK tells the app, and the call slot is free again.
                with abandoned.cancels() if abandoned is not None else contextlib.nullcontext():
                    result = await upstream.send(
                        method,
                        params,
                        timeout=max(deadline - trio.current_time(), 0.001),
                        on_progress=getattr(caller, "on_progress", None),
                    )
            finally:
                self._limiter.release_on_behalf_of(token)
            if abandoned is not None and abandoned.is_set():
                answer = CallFailed(app, f"{what} of app '{app}' was cancelled by its caller")
                return
            self._on_answer(message)
            answer = result
        except BaseException as caught:
            cancelled, error = split_cancelled(caught)
            if not isinstance(error, Exception):
                raise
            if cancelled:
                # Failed as the incarnation went down: the caller is told why below (or was
                # told already by the death), and the cancellation has done its work.
                return
            if isinstance(error, UpstreamTimeout):
                text = timeout_text(app, what, timeout, sent=True, slots=self._slots)
                answer = CallTimeout(app, text)
            elif isinstance(error, UpstreamLost):
                reason = await lost(error)
                answer = AppUnavailable(app, f"app '{app}' died during the call: {reason}")
            else:
                self._on_answer(None)
                answer = CallFailed(
                    app,
                    f"{what} of app '{app}' failed: {error_text(error)}",
                    rpc_error=getattr(error, "rpc_error", None),
                )
        finally:
            self._on_done(message)
            # Not listed any more: the death of the incarnation has already answered it.
            if (reply := self.in_flight.settle(token)) is not None:
                self._on_settled()
                if answer is None:  # cancelled (a stop or a restart) before any answer
                    answer = AppUnavailable(app, self._stopped_text())
                if isinstance(answer, BaseException):
                    reply.fail(answer)
                else:
                    reply.send(answer)
            self._observe(method, began, answer)

    def _observe(self, method: str, began: float, answer: Any) -> None:
        """Count the request in /metrics. Its time includes any wait for a call slot: that is
        what the caller waited, and a queue there is worth seeing. A tool result that is an
        error counts as one, like an error answer or no answer at all."""
        if self._metrics is None:
            return
        ok = isinstance(answer, dict) and not answer.get("isError")
        self._metrics.observe_request(self.app_id, method, trio.current_time() - began, ok)


def request_of(message: UpstreamRequest) -> tuple[str, Wire | None, str]:
    """The method and params to send upstream, and how errors name the request."""
    if message.method == "tools/call" and message.params is not None:
        return message.method, message.params, f"tool '{message.params.get('name')}'"
    return message.method, message.params, f"request {message.method}"


def unsendable(message: UpstreamRequest) -> str | None:
    """Why the request cannot be put on the wire, if it cannot. Checked with the serializer the
    session's writer uses (pydantic's), whose limits are its own: a lone surrogate (which a JSON
    `\\ud800` escape makes) has no UTF-8 form, and nesting has a maximum depth."""
    _, params, what = request_of(message)
    if jsonin.depth(params) > jsonin.MAX_DEPTH:
        return f"{what} cannot be sent to the app: {jsonin.too_deep('its params')}"
    try:
        pydantic_core.to_json(params)
    except (ValueError, RecursionError) as error:
        why = str(error).removeprefix("Error serializing to JSON: ")
        if "UnicodeEncodeError" in why:
            return f"{what} cannot be sent to the app: it holds text that is not valid Unicode"
        return f"{what} cannot be sent to the app as JSON: {why}"
    return None


def timeout_text(app_id: str, what: str, timeout: float, *, sent: bool, slots: int) -> str:
    """Why a request timed out: on the app, or waiting for one of its `slots` call slots."""
    if sent:
        return (
            f"{what} of app '{app_id}' timed out after {timeout:g} s"
            " (requestTimeoutSeconds); the request was cancelled upstream"
        )
    return (
        f"{what} of app '{app_id}' timed out after {timeout:g} s"
        f" (requestTimeoutSeconds) waiting for one of its {slots} call slots"
        " (max_concurrent_calls)"
    )
