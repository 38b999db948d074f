"""A view's admitted request on its way to its app and back: the view's own app and its
app-visible tools only, the chat session's id added to a call, the request passed on, and the
answer framed as one JSON-RPC object or, when the person is asked something while it runs, as
server-sent events."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, Mapping
from typing import TYPE_CHECKING, Any

import trio
from quart import Response, request

from actors.apps.upstream import ServerRequestRefused
from actors.asking import until_complete
from actors.catalog import Catalog, Wire
from actors.messages import AppStatus, GetCatalog, Lookup, ToApp, UpstreamRequest
from actors.runtime import ASK_TIMEOUT_S, Abandonment, ask
from supervisor.model import jsonout
from supervisor.model.errors import McpappsError
from supervisor.model.lifecycle import AppState
from web.intake import close_with_request
from web.keepalives import KEEP_ALIVE, with_keep_alives
from web.mcpdoor.relay import APP_ERROR, mcp_error
from web.viewcaller import ViewCaller
from web.views import NOT_ALLOWED, Lease, Refused, is_visible_to_app

if TYPE_CHECKING:
    from web.viewdoor import ViewDoor

# What a view may ask besides tools/list and tools/call. Subscriptions are left out: a view's
# requests are one-shot HTTP, with no stream for the updates to come back on.
PASSED_ON = frozenset({"resources/read", "resources/list", "resources/templates/list"})


async def app_catalog(door: ViewDoor, app_id: str) -> Catalog:
    try:
        return await ask(door.registry, lambda r: ToApp(app_id, GetCatalog(r)), ASK_TIMEOUT_S)
    except Exception as error:
        failed = mcp_error(error).error
        raise Refused(failed.code, failed.message) from None


async def allowed_tool(door: ViewDoor, lease: Lease, params: Mapping[str, Any]) -> Wire:
    name = params.get("name")
    catalog = await app_catalog(door, lease.app_id)
    tool = next((t for t in catalog.tools if t.get("name") == name), None)
    if tool is None:
        await _refuse_unless_running(door, lease.app_id, name)
        raise Refused(
            NOT_ALLOWED,
            f"app '{lease.app_id}' has no tool '{name}': a view may call only the tools of its"
            " own app",
        )
    if not is_visible_to_app(tool):
        raise Refused(
            NOT_ALLOWED,
            f"tool '{name}' of app '{lease.app_id}' is for the model only (its"
            ' _meta.ui.visibility does not include "app"): a view may not call it',
        )
    return tool


async def _refuse_unless_running(door: ViewDoor, app_id: str, name: Any) -> None:
    """An app that is not Running has no tools to offer: the view is told that, and the app's
    state, rather than that the tool does not exist."""
    try:
        status: AppStatus = await ask(door.registry, lambda r: Lookup(app_id, r), ASK_TIMEOUT_S)
    except Exception:
        return  # no status to tell (the app is gone): the call is refused as unknown
    if status.state is AppState.RUNNING:
        return
    why = f"app '{app_id}' is not running (it is {status.state}"
    if status.last_error:
        why += f": {status.last_error}"
    why += f"), so its tool '{name}' cannot be called: call it again once the app is Running"
    raise Refused(APP_ERROR, why)


def with_session(lease: Lease, params: Mapping[str, Any]) -> Wire:
    """The call as the app gets it: with the id of the chat session that opened the view as
    `_meta.sessionId`, the same the agent's calls for that session carry."""
    call: Wire = {"name": params.get("name"), "arguments": params.get("arguments") or {}}
    meta = dict(params.get("_meta") or {}) if isinstance(params.get("_meta"), Mapping) else {}
    meta.pop("sessionId", None)  # a view does not choose its session
    if lease.chat_session:
        meta["sessionId"] = lease.chat_session
    if meta:
        call["_meta"] = meta
    return call


async def forward(
    door: ViewDoor, lease: Lease, method: str, params: Wire, caller: ViewCaller | None = None
) -> dict[str, Any]:
    abandoned = Abandonment()
    caller = caller or ViewCaller(door, lease)
    try:
        result: Wire = await ask(
            door.registry,
            lambda reply: ToApp(
                lease.app_id,
                UpstreamRequest(method, params, reply, caller, abandoned),
                lease.actor,
            ),
        )
    except trio.Cancelled:
        abandoned.set()
        raise
    except Exception as error:
        failed = mcp_error(error).error
        return {"error": failed.model_dump(mode="json", exclude_none=True)}
    return {"result": result}


async def call_until_complete(
    door: ViewDoor, lease: Lease, call: Wire, caller: ViewCaller
) -> dict[str, Any]:
    """A view's tool call, answered in full: a 2026-07-28 app that asks by answering
    `input_required` has its questions put to the page (or the model) the way a handshake-era
    app's are, and the call sent again with the answers, as a chat turn does. The outcome is
    `{"result": ...}` or `{"error": ...}`."""
    outcome = await forward(door, lease, "tools/call", call, caller)
    result = outcome.get("result")
    if not isinstance(result, dict) or result.get("resultType") != "input_required":
        return outcome

    async def again(resumed: Wire) -> Wire:
        answer = await forward(door, lease, "tools/call", resumed, caller)
        if "error" in answer:
            raise _RetryFailed(answer)
        result: Wire = answer["result"]
        return result

    try:
        return {"result": await until_complete(caller.ask, call, result, again)}
    except _RetryFailed as failed:
        return failed.outcome
    except ServerRequestRefused as refused:
        why = f"tool '{call.get('name')}' of app '{lease.app_id}' asked for input: {refused}"
        return {"error": {"code": APP_ERROR, "message": why}}


class _RetryFailed(McpappsError):
    """A view's call sent again with the person's answers got an error: that is the outcome."""

    def __init__(self, outcome: dict[str, Any]) -> None:
        super().__init__(str(outcome.get("error")))
        self.outcome = outcome


def rpc_answer(rpc_id: Any, **outcome: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rpc_id, **outcome}


def sse_event(name: str, data: Any) -> bytes:
    return f"event: {name}\ndata: {jsonout.dumps(data)}\n\n".encode()


class EventStream:
    """A response body of server-sent events whose generator has begun: run to its first event,
    it is inside its `try`, so its `finally` (which gives back what the view's call holds: its
    slot, its call) runs whenever it is closed. A generator never begun would never run it,
    and one whose client left before the first send is never begun by Quart."""

    def __init__(self, first: bytes, rest: AsyncGenerator[bytes]) -> None:
        self._first: bytes | None = first
        self._rest = rest

    def __aiter__(self) -> EventStream:
        return self

    async def __anext__(self) -> bytes:
        if self._first is not None:
            first, self._first = self._first, None
            return first
        return await anext(self._rest)

    async def aclose(self) -> None:
        self._first = None
        await self._rest.aclose()


async def event_stream(events: AsyncGenerator[bytes]) -> Response:
    """The answer that streams `events`, closed by the front door once the request is over
    even if none of it was sent (web/intake.py). The generator must reach its first event with
    no checkpoint, so that no cancellation falls between what it was given to hold and its
    `try`."""
    body = EventStream(await anext(events), events)
    close_with_request(request.scope, body)
    response = Response(body, mimetype="text/event-stream")
    response.headers["Cache-Control"] = "no-store"
    response.timeout = None  # the person may take a while (bounded by the door)
    return response


async def first_event(events: trio.MemoryReceiveChannel[Any], scope: Any) -> tuple[str, Any]:
    try:
        return await events.receive()
    except BaseException:
        scope.cancel()
        events.close()
        raise


async def asking_stream(
    door: ViewDoor,
    lease: Lease,
    rpc_id: Any,
    events: trio.MemoryReceiveChannel[Any],
    scope: Any,
    first: bytes,
) -> AsyncGenerator[bytes]:
    """A call whose app asks the person: each question as an `elicitation` event, then the
    answer as `message`. The page going away cancels the call (and so its questions)."""
    try:
        yield first
        async with events, contextlib.aclosing(with_keep_alives(events)) as items:
            async for item in items:
                if item is None:
                    yield KEEP_ALIVE
                    continue
                kind, data = item
                yield sse_event(kind, rpc_answer(rpc_id, **data) if kind == "message" else data)
    finally:
        scope.cancel()
        door.table.release(lease)
