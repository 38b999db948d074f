"""The view hub's answers as the page reads them: an outcome as one JSON-RPC answer, and a
request whose person is asked something (an approval, an app's question) as server-sent events:
`approval` or `elicitation` for each, then `message` with the JSON-RPC answer, with keep-alive
comments while nothing else is sent."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator
from typing import Any

import trio
from quart import Response, request

from actors.runtime import Abandonment
from actors.views.messages import (
    Answered,
    ApprovalAsked,
    Failed,
    Outcome,
    QuestionAsked,
    Succeeded,
    ViewEvent,
)
from actors.views.refusals import CallLost
from supervisor.model import jsonout
from web.errors import mcp_error
from web.intake import close_with_request
from web.keepalives import KEEP_ALIVE, with_keep_alives


def rpc_error(error: BaseException) -> dict[str, Any]:
    """The JSON-RPC error of a request not served, as the one table says (an app's own error as
    it sent it)."""
    assert isinstance(error, Exception)
    return mcp_error(error).error.model_dump(mode="json", exclude_none=True)


def rpc_answer(rpc_id: Any, outcome: Outcome) -> dict[str, Any]:
    match outcome:
        case Succeeded(result):
            return {"jsonrpc": "2.0", "id": rpc_id, "result": result}
        case Failed(error):
            return {"jsonrpc": "2.0", "id": rpc_id, "error": rpc_error(error)}


def sse_event(rpc_id: Any, event: ViewEvent) -> bytes:
    match event:
        case ApprovalAsked(approval_id, app_id, tool, arguments, timeout_s):
            name = "approval"
            data: Any = {
                "approvalId": approval_id,
                "appId": app_id,
                "tool": tool,
                "arguments": arguments,
                "timeoutS": timeout_s,
            }
        case QuestionAsked(question):
            name, data = "elicitation", question
        case Answered(outcome):
            name, data = "message", rpc_answer(rpc_id, outcome)
    return f"event: {name}\ndata: {jsonout.dumps(data)}\n\n".encode()


async def answer(
    rpc_id: Any, events: trio.MemoryReceiveChannel[ViewEvent], abandoned: Abandonment
) -> Any:
    """The answer to a view's request: one JSON-RPC object if the hub's first event is the
    answer, else a stream of them. The page going away (the request cancelled, or the stream
    closed, sent or not) gives the request up: the hub ends its work and gives back its slot."""
    try:
        first = await events.receive()
    except trio.EndOfChannel:
        first = Answered(Failed(CallLost("the call ended")))
    except BaseException:
        abandoned.set()
        events.close()
        raise
    if isinstance(first, Answered):
        events.close()
        return rpc_answer(rpc_id, first.outcome)
    body = _EventStream(rpc_id, sse_event(rpc_id, first), events, abandoned)
    close_with_request(request.scope, body)  # closed once the request is over, sent or not
    response = Response(body, mimetype="text/event-stream")
    response.headers["Cache-Control"] = "no-store"
    response.timeout = None  # the person may take a while (bounded by the hub)
    return response


class _EventStream:
    """A response body of server-sent events: the first, then the rest as the hub sends them.
    Closing it, whether any of it was sent or not, gives the request up."""

    def __init__(
        self,
        rpc_id: Any,
        first: bytes,
        events: trio.MemoryReceiveChannel[ViewEvent],
        abandoned: Abandonment,
    ) -> None:
        self._rpc_id = rpc_id
        self._first: bytes | None = first
        self._events = events
        self._abandoned = abandoned
        self._rest = self._frames()

    def __aiter__(self) -> _EventStream:
        return self

    async def __anext__(self) -> bytes:
        if self._first is not None:
            first, self._first = self._first, None
            return first
        return await anext(self._rest)

    async def _frames(self) -> AsyncGenerator[bytes]:
        async with contextlib.aclosing(with_keep_alives(self._events)) as items:
            async for item in items:
                if item is None:
                    yield KEEP_ALIVE
                    continue
                yield sse_event(self._rpc_id, item)
                if isinstance(item, Answered):
                    return
        yield sse_event(self._rpc_id, Answered(Failed(CallLost("the call ended"))))

    async def aclose(self) -> None:
        self._first = None
        self._abandoned.set()
        self._events.close()
        await self._rest.aclose()
