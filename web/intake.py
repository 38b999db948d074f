"""What the front door does with a request's body before any route sees it: read it whole,
under one size limit and one deadline for every route, and hand the routes a `receive` that
replays it.

Reading it here, once, is what makes the limits the same everywhere (the MCP endpoints, Quart's
routes), and it leaves no body unread on a kept-alive connection whatever a route answers (a 405
or a 404 that never looks at the body): the next request on that connection is served as usual.
`finishing` sees the last message of the answer through whatever cancels the route's task;
`bodies_closed` closes the answer's body when the request is over, whether or not it was sent.
"""

from __future__ import annotations

import codecs
import contextlib
import json
import re
from collections.abc import AsyncIterator, Mapping
from typing import Any, Protocol

import trio

from supervisor.model import jsonin
from supervisor.model.errors import BadRequest, BodyTooLarge, BodyTooSlow, ClientGone, Unparsable

# On an answer given before the body was read whole: the rest of the body is never read, so the
# connection ends with the answer, and the client must know not to send another on it.
CLOSE = (b"connection", b"close")


def unread_body(headers: dict[str, str]) -> bool:
    """Whether the request says a body follows its head."""
    return "transfer-encoding" in headers or headers.get("content-length", "0").strip() != "0"


async def read_body(
    receive: Any, max_bytes: int, timeout_s: float, declared: str | None = None
) -> bytes:
    """The whole body, or why not raised: larger than `max_bytes` (`BodyTooLarge`; at once when
    its declared `Content-Length` says so, without waiting for it), not finished within
    `timeout_s` (`BodyTooSlow`), or gone with the client (`ClientGone`: nobody left to answer)."""
    too_large = BodyTooLarge(
        f"the request body is larger than {max_bytes} bytes (limits.max_body_bytes)"
    )
    if declared is not None and declared.strip().isdigit() and int(declared) > max_bytes:
        raise too_large
    parts: list[bytes] = []
    size = 0
    with trio.move_on_after(timeout_s):
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise ClientGone("the client closed the connection")
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > max_bytes:
                raise too_large
            parts.append(chunk)
            if not message.get("more_body", False):
                return b"".join(parts)
    raise BodyTooSlow(
        f"the request body was not finished within {timeout_s:g} s (limits.body_timeout_s)"
    )


class Replaying:
    """A `receive` that gives the body read already, then passes on what comes next (the
    client's disconnect); once `release`d (the request answered), it says the client has gone.

    The SDK keeps a session's requests in what it hands their handlers for as long as the
    session lives (its opening request, its last one): released, such a `receive` keeps none
    of the request's HTTP plumbing (Hypercorn's channel to the request) alive with it."""

    __slots__ = ("_body", "_receive")

    def __init__(self, body: bytes, receive: Any) -> None:
        self._body: bytes | None = body
        self._receive: Any = receive

    async def __call__(self) -> dict[str, Any]:
        if (body := self._body) is not None:
            self._body = None
            return {"type": "http.request", "body": body, "more_body": False}
        if self._receive is None:
            return {"type": "http.disconnect"}
        return await self._receive()

    def release(self) -> None:
        self._body = self._receive = None


def mcp_body_problem(body: bytes) -> BadRequest | None:
    """Why an MCP request body is refused before the SDK reads it: it nests deeper than the one
    limit every route has (`BadRequest`), or it holds what JSON has not (`Unparsable`, as the
    SDK answers any text that is not JSON), above all
    NaN, Infinity or a number too large for a float: the SDK's parser reads those as floats and
    passes them on as null. Only a body that may hold one of these is parsed here; any other
    malformed JSON is left to the SDK."""
    if body.startswith(codecs.BOM_UTF8):
        # The handshake era's parser refuses it, the 2026-07-28 era's reads past it: one rule.
        return Unparsable(
            "Parse error: the body starts with a byte-order mark: send UTF-8 without one"
        )
    if not jsonin.may_nest_too_deep(body) and not _may_hold_a_non_finite_number(body):
        return None
    try:
        jsonin.loads(body)
    except jsonin.JSONInputError as error:
        if "nests more than" in str(error):
            return BadRequest(str(error))
        return Unparsable(f"Parse error: {error}")
    return None


def _may_hold_a_non_finite_number(body: bytes) -> bool:
    """Whether the body holds a word or a number JSON has not, or text that looks like one (the
    parse then says which): the words NaN and Infinity, an exponent of three digits, or a run
    of 210 digits (a float's limit is about 1.8e308, so a finite mantissa overflows with a
    two-digit exponent from 210 integer digits on; an integer that long is checked too)."""
    return b"NaN" in body or b"Infinity" in body or _BIG_NUMBER.search(body) is not None


# Every branch starts with a digit, so the regex engine skips to the next digit instead of
# trying each position (with the words in the same pattern, a 2026-07-28 request's body took
# 15 µs here, now 4). A run is matched from its first digit only (the look-behind), so a body
# of long runs costs one pass, not one per digit.
_BIG_NUMBER = re.compile(rb"[0-9](?:[eE]\+?[0-9]{3}|(?<![0-9]{2})[0-9]{209})")


def request_ids(body: bytes) -> list[str]:
    """The ids of the JSON-RPC requests in a body, as the SDK keys its streams (`str(id)`);
    none if the body is not JSON-RPC (the SDK answers that)."""
    try:
        message = json.loads(body)
    except (ValueError, RecursionError):
        return []
    return request_ids_of(message)


def request_ids_of(message: Any) -> list[str]:
    """`request_ids` of a body parsed already."""
    messages = message if isinstance(message, list) else [message]
    return [
        str(m["id"])
        for m in messages
        if isinstance(m, dict)
        and isinstance(m.get("method"), str)
        and isinstance(m.get("id"), str | int)
        and not isinstance(m.get("id"), bool)
    ]


def finishing(send: Any) -> Any:
    """A `send` whose last message of a response is not cut short by cancellation.

    Hypercorn finishes the connection's business (closing it when the request's body was not
    read, or starting its idle timer to keep it alive) inside that last `send`, and Quart-Trio
    cancels its own request task as soon as that send has told it the exchange is over: the
    business is left half done, and the connection is never closed, or never answers again.
    Hypercorn writes the bytes themselves under a shield already; this shields the rest.

    When that business is closing a connection whose body was not read, and the client sends
    more meanwhile, Hypercorn's reading task closes it too at the same moment, and trio refuses
    the second close as a busy stream: the answer has been written, the connection is closed
    either way, so that is no error of the request's."""

    async def send_to_the_end(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.body" and not message.get("more_body", False):
            with trio.CancelScope(shield=True), contextlib.suppress(trio.BusyResourceError):
                await send(message)
        else:
            await send(message)

    return send_to_the_end


class Closable(Protocol):
    async def aclose(self) -> None: ...


_BODIES = "mcpapps.bodies"  # the scope's key: the bodies a route made for the request's answer


def close_with_request(scope: Mapping[str, Any], body: Closable) -> None:
    """`body`, a route's answer that holds something until it ends, is closed when the request
    is over (by `bodies_closed`), whether or not it was sent."""
    bodies = scope.get(_BODIES)
    if bodies is not None:
        bodies.append(body)


@contextlib.asynccontextmanager
async def bodies_closed(scope: dict[str, Any]) -> AsyncIterator[None]:
    """Close the bodies a route made for this request once it is over, sent or not.

    Quart-Trio closes a streamed body once it has sent it, but a client that leaves between the
    route's return and the first send cancels the request before Quart has taken the body up:
    then nothing closes it, and what it holds (a view's call slot, the call itself) would be
    held for ever. Closing what was closed already does nothing."""
    bodies: list[Closable] = []
    scope[_BODIES] = bodies
    try:
        yield
    finally:
        # Shielded: it is run when the request was cancelled; a body's close gives back what
        # it holds without waiting on anything.
        with trio.CancelScope(shield=True):
            for body in bodies:
                await body.aclose()


class InFlightIds:
    """The JSON-RPC ids of the requests being answered on each MCP session of one endpoint.

    The SDK keys a session's response streams by request id: a second request with the id of
    one still in flight takes that key over, and the first request's stream then waits for an
    answer that can never come. So a reused id is refused while its first request is open
    (JSON-RPC lets a server refuse it; the client learns at once instead of timing out)."""

    def __init__(self) -> None:
        self._open: dict[str, set[str]] = {}

    def taken(self, session_id: str, ids: list[str]) -> str | None:
        """The first of `ids` already in flight on the session (or repeated in `ids`)."""
        open_ids = self._open.get(session_id, set())
        seen: set[str] = set()
        for request_id in ids:
            if request_id in open_ids or request_id in seen:
                return request_id
            seen.add(request_id)
        return None

    def hold(self, session_id: str, ids: list[str]) -> None:
        self._open.setdefault(session_id, set()).update(ids)

    def release(self, session_id: str, ids: list[str]) -> None:
        open_ids = self._open.get(session_id)
        if open_ids is not None:
            open_ids.difference_update(ids)
            if not open_ids:
                del self._open[session_id]
