"""An app's requests that the SDK's client session does not know, answered beside it.

The pinned SDK (mcp==2.3.0) answers a server-to-client request outside its own table (`ping`,
sampling, elicitation, roots) with "Method not found": `ClientSession._on_request` parses the
method against that table first and has no hook for another. `openai/elicitation/create`, the
rich form a handshake-era app asks with, is such a request. Rather than override that private
method (and `Client._build_session`, to make the client build our session), the read stream we
hand the SDK client anyway is wrapped: a request for one of `methods` is taken out before the
session sees it, its handler runs as a task of this wrapper's nursery, and the answer (or the
error) is written on the write stream as the session writes its own. The wrapper relies on the
transport contract only (a pair of streams of `SessionMessage`), the same for stdio, Streamable
HTTP and HTTP+SSE, and every other message passes through it as it came, with no task between
the transport and the session.

The app may cancel such a request (`notifications/cancelled` naming it): its task is cancelled
and nothing is answered, as the spec asks. The connection's end cancels whatever still runs.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Collection
from typing import Any

import anyio
import mcp_types as types
import trio
from mcp.shared.message import SessionMessage

logger = logging.getLogger("mcpapps.app")

Handler = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]


@contextlib.asynccontextmanager
async def answering(
    transport: Any, methods: Collection[str], handler: Handler
) -> AsyncIterator[tuple[Any, Any]]:
    """`transport` (what an SDK `Client` enters), with the app's requests for `methods` handed
    to `handler(method, params)` and answered with its result. A handler's error is the
    request's JSON-RPC error: its `rpc_code` if it has one, else an internal error, with its
    text."""
    async with transport as (read, write), trio.open_nursery() as nursery:
        try:
            yield _Diverted(read, write, frozenset(methods), handler, nursery), write
        finally:
            nursery.cancel_scope.cancel()


class _Diverted:
    """The transport's read stream with the requests for `methods` taken out and answered."""

    def __init__(
        self,
        stream: Any,
        write: Any,
        methods: frozenset[str],
        handler: Handler,
        nursery: trio.Nursery,
    ) -> None:
        self._stream = stream
        self._write = write
        self._methods = methods
        self._handler = handler
        self._nursery = nursery
        self._running: dict[types.RequestId, trio.CancelScope] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)  # `last_context`, the sender's context vars

    def __aiter__(self) -> _Diverted:
        return self

    async def __anext__(self) -> Any:
        while True:
            item = await self._stream.__anext__()
            if not isinstance(item, SessionMessage):
                return item
            message = item.message
            if isinstance(message, types.JSONRPCRequest) and message.method in self._methods:
                scope = trio.CancelScope()
                self._running[message.id] = scope
                self._nursery.start_soon(self._answer, message, scope)
                continue
            if (
                isinstance(message, types.JSONRPCNotification)
                and message.method == "notifications/cancelled"
                and isinstance(cancelled := (message.params or {}).get("requestId"), str | int)
                and (running := self._running.get(cancelled)) is not None
            ):
                running.cancel()
            return item

    async def receive(self) -> Any:
        return await self.__anext__()

    async def aclose(self) -> None:
        await self._stream.aclose()

    async def __aenter__(self) -> _Diverted:
        await self._stream.__aenter__()
        return self

    async def __aexit__(self, *exc_info: Any) -> bool | None:
        result: bool | None = await self._stream.__aexit__(*exc_info)
        return result

    async def _answer(self, request: types.JSONRPCRequest, scope: trio.CancelScope) -> None:
        answer: types.JSONRPCResponse | types.JSONRPCError | None = None
        try:
            with scope:
                result = await self._handler(request.method, dict(request.params or {}))
                answer = types.JSONRPCResponse(jsonrpc="2.0", id=request.id, result=result)
        except Exception as error:
            code = getattr(error, "rpc_code", types.INTERNAL_ERROR)
            data = types.ErrorData(code=code, message=str(error) or repr(error))
            answer = types.JSONRPCError(jsonrpc="2.0", id=request.id, error=data)
        finally:
            self._running.pop(request.id, None)
        if answer is None:
            return  # the app cancelled it: nothing is answered
        try:
            await self._write.send(SessionMessage(answer))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError) as error:
            logger.debug("the answer to %s was not sent: %r", request.method, error)
