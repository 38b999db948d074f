"""A 2026-07-28 client, and an app that asks it something in the middle of a request.

An app reached over the handshake asks its questions (sampling, elicitation) as requests of
its own while the client's request is still open. A handshake-era client is asked on that
request's stream (`ClientCaller.ask`). A 2026-07-28 client has no such channel: it is asked by
the result of its request, `input_required`, and answers by sending the request again with
`inputResponses` and the `requestState` it was given.

So a 2026-07-28 client's request becomes an `Exchange` that outlives the HTTP request: it runs
at the app all along; a question from the app ends the client's request with `input_required`;
the client's retry hands the answer to the app's waiting question and waits again, for the
result or the next question. The app sees one request and one answer to each question, as it
would from a client of its own era.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import secrets
from collections.abc import Awaitable, Callable
from typing import Any

import trio
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError

from actors.apps.upstream import ServerRequestRefused
from actors.catalog import Wire
from actors.runtime import Abandonment, Reply
from supervisor.model.errors import ClientGone, InvalidParams
from web.mcpdoor.relay import ClientCaller, mcp_error, owner_of

logger = logging.getLogger("mcpapps.web")

# `requestState` values of ours start with this; any other value is the app's own and passes
# through to it (an app of 2026-07-28 keeps its own state in it).
STATE_PREFIX = "mcpapps-exchange:"
_CAPABILITY = {"sampling/createMessage": "sampling", "elicitation/create": "elicitation"}


class Exchange:
    """One request of a 2026-07-28 client as it runs at the app, across the client's retries.
    The app actor answers it (it is the request's reply) and asks it (it is the request's
    `Caller`); the endpoint reads what happened with `next()`."""

    def __init__(
        self, owner: str, method: str, name: str | None, capabilities: Any, progress: bool
    ) -> None:
        self.owner = owner
        self.method = method
        self.name = name  # a retry must name the same tool or prompt
        self.abandoned = Abandonment()  # set when the client gives up: the request is cancelled
        self.client: Any = None  # the client's request waiting now (its `Caller`), if any
        self.state: str | None = None  # while parked: the requestState the client was given
        self.question: tuple[str, Reply[Wire]] | None = None  # its key, where the answer goes
        self.on_forget: Callable[[Exchange], None] = lambda _: None
        self._capabilities = capabilities  # the client's, as the SDK types them (or None)
        # The app is asked for progress only when the request that starts the exchange asks
        # for it (the app's request carries a token then, chosen when it is sent). Asking for
        # none lets a stdio app's call pass by the SDK session (actors/apps/direct.py).
        self.on_progress = self._relay_progress if progress else None
        # What happened and is not read yet. A deque and a wake-up, not a memory channel: one
        # reader, one waiter at a time, and a channel cost about 10 µs to make per request.
        self._events: collections.deque[tuple[Any, ...]] = collections.deque()
        self._wake: Callable[[], None] | None = None  # wakes the reader waiting now, if any
        self._asked = 0

    # The reply of the request (the app actor answers here once).
    def send(self, value: Any) -> None:
        self._event(("done", value))

    def fail(self, error: BaseException) -> None:
        self._event(("failed", error))

    def _event(self, event: tuple[Any, ...]) -> None:
        self._events.append(event)
        if self._wake is not None:
            self._wake()

    # The caller of the request (the app actor asks here, under its own deadline).
    async def ask(self, method: str, params: Wire) -> Wire:
        capability = _CAPABILITY.get(method)
        if capability and getattr(self._capabilities, capability, None) is None:
            raise ServerRequestRefused(
                f"the client did not declare the {capability} capability, so it is not asked"
                f" {method}"
            )
        answer: Reply[Wire] = Reply()
        self._asked += 1
        self._event(("question", f"mcpapps-{self._asked}", method, params, answer))
        answered = False
        try:
            result = await answer.wait()
            answered = True
            return result
        finally:
            # Answered, or the app stopped waiting (requestTimeoutSeconds): a retry that comes
            # later finds nothing to answer.
            self.on_forget(self)
            if not answered:
                logger.info(
                    "a 2026-07-28 client was asked %s for %s and did not answer in time",
                    method,
                    self.name or self.method,
                )

    async def _relay_progress(
        self, progress: float, total: float | None, message: str | None
    ) -> None:
        """The app's progress goes to the client's request waiting now; between requests there
        is nowhere to send it."""
        client = self.client
        if client is not None and client.on_progress is not None:
            # A client gone between rounds misses a progress notice, nothing more.
            with contextlib.suppress(Exception):
                await client.on_progress(progress, total, message)

    async def next(self) -> tuple[Any, ...]:
        if self._events:
            await trio.lowlevel.checkpoint()
        else:
            arrived = trio.Event()
            self._wake = arrived.set
            try:
                await arrived.wait()
            finally:
                self._wake = None
        return self._events.popleft()

    async def next_unless(self, gone: Callable[[], Awaitable[None]]) -> tuple[Any, ...] | None:
        """The next event, or None if `gone()` returns first (the client went away). The task
        waits in `gone()` itself, which the event cancels: no second task watches the client."""
        if self._events:
            return self._events.popleft()
        with trio.CancelScope() as waiting:
            self._wake = waiting.cancel
            try:
                await gone()
            finally:
                self._wake = None
        if not waiting.cancelled_caught:
            return None
        return self._events.popleft()


class RoundTrips:
    """The exchanges of one endpoint that wait for a client's answer, by `requestState`."""

    def __init__(self) -> None:
        self._parked: dict[str, Exchange] = {}

    async def run(
        self,
        ctx: ServerRequestContext[Any, Any],
        caller: ClientCaller,
        params: Wire | None,
        start: Callable[[Wire | None, Exchange], None],
        finish: Callable[[Any], Awaitable[Wire]],
        errors: Callable[[Exception], MCPError] = mcp_error,
    ) -> Wire:
        """Serve one request of a 2026-07-28 client: a new request is given to `start` (which
        sends it to the app with the exchange as its reply and caller); a retry with a
        `requestState` of ours answers the question its exchange waits on. Then wait for the
        app: its result goes through `finish`; its next question becomes `input_required`."""
        capabilities = getattr(ctx.session, "client_capabilities", None)
        return await self.serve(
            owner_of(ctx), ctx.method, capabilities, caller, params, start, finish, errors
        )

    async def serve(
        self,
        owner: str,
        method: str,
        capabilities: Any,
        caller: Any,
        params: Wire | None,
        start: Callable[[Wire | None, Exchange], None],
        finish: Callable[[Any], Awaitable[Wire]],
        errors: Callable[[Exception], MCPError] = mcp_error,
        gone: Callable[[], Awaitable[None]] | None = None,
    ) -> Wire:
        """`run` for a request known by its client session (`owner`), its method and the
        capabilities its client declared (what the lean path has instead of a context).
        `gone`: returns when the client has gone away (which abandons the request and raises
        `ClientGone`), for a caller whose cancellation is not how it learns that."""
        name = (params or {}).get("name")
        state = (params or {}).get("requestState")
        if isinstance(state, str) and state.startswith(STATE_PREFIX):
            exchange = self._resume(state, name, (params or {}).get("inputResponses"))
        else:
            named = name if isinstance(name, str) else None
            exchange = Exchange(owner, method, named, capabilities, caller.on_progress is not None)
            exchange.on_forget = self._forget
            start(params, exchange)
        exchange.client = caller
        try:
            event = await (exchange.next() if gone is None else exchange.next_unless(gone))
        except trio.Cancelled:
            exchange.abandoned.set()  # the client cancelled or went away: so does the request
            raise
        finally:
            exchange.client = None
        if event is None:
            exchange.abandoned.set()
            raise ClientGone("the client went away before its answer")
        match event:
            case ("done", value):
                return await finish(value)
            case ("failed", error):
                raise errors(error) from None
            case ("question", key, method, question, answer):
                exchange.question = (key, answer)
                exchange.state = STATE_PREFIX + secrets.token_urlsafe(24)
                self._parked[exchange.state] = exchange
                return {
                    "resultType": "input_required",
                    "inputRequests": {key: {"method": method, "params": question}},
                    "requestState": exchange.state,
                }
        raise AssertionError(f"unexpected exchange event {event!r}")

    def _resume(self, state: str, name: Any, responses: Any) -> Exchange:
        exchange = self._parked.get(state)
        if exchange is None or exchange.question is None:
            raise mcp_error(
                InvalidParams(
                    "this requestState is not awaited (any more): its question was answered, or"
                    " the app stopped waiting for the answer (requestTimeoutSeconds); send the"
                    " request again without requestState"
                )
            )
        if exchange.name is not None and name != exchange.name:
            raise mcp_error(
                InvalidParams(
                    f"this requestState belongs to a request for '{exchange.name}', not '{name}'"
                )
            )
        key, answer = exchange.question
        if not isinstance(responses, dict) or key not in responses:
            raise mcp_error(InvalidParams(f"the retry has no answer under inputResponses['{key}']"))
        del self._parked[state]
        exchange.question = exchange.state = None
        answer.send(responses[key])
        return exchange

    def _forget(self, exchange: Exchange) -> None:
        if exchange.state is not None and self._parked.get(exchange.state) is exchange:
            del self._parked[exchange.state]
        exchange.question = exchange.state = None

    def __len__(self) -> int:
        return len(self._parked)
