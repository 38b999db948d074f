"""The view endpoint: what an app view open in the control page may ask the server, by its view
id, whatever the page does.

    POST   /apps/views                          open a view: {appId, sessionId?, toolCall?, run?}
    POST   /apps/views/<viewId>/keepalive       the page still shows it (the lease is renewed)
    DELETE /apps/views/<viewId>                 the page tore it down
    POST   /apps/views/<viewId>/mcp             one JSON-RPC request of the view
    POST   /apps/views/<viewId>/approvals/<id>  the person's answer: {decision}
    POST   /apps/views/<viewId>/answers         the person's answer to an app's question:
                                                {requestId, action, content?}
    GET    /apps/chat/<sessionId>/views         what the chat opened, to relaunch after a reload

A view's requests go to its own app only; a tool call must name a tool whose visibility
includes "app", within the view's limits, and, when the app's approval policy asks for it,
with the person's approval. A refused request is a JSON-RPC error and never reaches the app.
A call waiting for approval is answered as server-sent events: `approval` first (what the page
asks the person), then `message` with the JSON-RPC answer. So is a call whose app asks the
person (elicitation) as it runs: an `elicitation` event for each question, then `message`.
"""

from __future__ import annotations

import contextlib
import json
import logging
import secrets
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import mcp_types as types
import trio
from prometheus_client import CollectorRegistry, Counter
from quart import Blueprint, Response, request

from actors.asking import AnswerRefused, Questions
from actors.catalog import Catalog, Wire
from actors.chatstore import SavedSession, StoreError
from actors.messages import (
    GetCatalog,
    GetSession,
    GetToolTable,
    HubMessage,
    Lookup,
    RegistryMessage,
    Reloaded,
    SampleForView,
    SamplingAllowed,
    ToApp,
    UnknownApp,
    UpstreamRequest,
    Watch,
)
from actors.metrics import Metrics
from actors.runtime import ASK_TIMEOUT_S, AskTimeout, Mailbox, ask
from actors.upstream import ServerRequestRefused
from supervisor.model import jsonin
from web.chat import SESSION_ID
from web.errors import json_error
from web.relay import mcp_error
from web.views import (
    DECISIONS,
    DENIED,
    NOT_ALLOWED,
    Approval,
    Lease,
    Refused,
    ViewsConfig,
    ViewTable,
    is_visible_to_app,
    model_context_text,
    needs_approval,
)

logger = logging.getLogger("mcpapps.views")

# What a view may ask. Subscriptions are left out: a view's requests are one-shot HTTP, with no
# stream for the updates to come back on.
PASSED_ON = frozenset({"resources/read", "resources/list", "resources/templates/list"})
_ANSWER = '{"requestId": "...", "action": "accept" | "decline" | "cancel", "content"?: {...}}'
_KINDS = {400: "bad_request", 404: "not_found", 409: "conflict"}
SAMPLING_TIMEOUT_S = 600.0  # a local model may be slow; the app's own timeout bounds it too
TOOL_CALL_MAX = 1_000  # characters of a tool call descriptor kept with a view


class _ViewCaller:
    """The `Caller` of a view's tool call: the app's questions go to the page that made the
    call. An elicitation is an `elicitation` event on the call's stream and waits in the door's
    `Questions` for `POST /apps/views/<viewId>/answers`; a sampling request is answered by the
    agent's model under the same rule as in a chat turn (the app allowed, a model to ask)."""

    on_progress = None

    def __init__(
        self,
        door: ViewDoor,
        lease: Lease,
        events: trio.MemorySendChannel[Any] | None = None,
        tool: Any = "",
        sampling: bool = False,
    ) -> None:
        self.owner = f"view-{lease.id}"
        self._door = door
        self._lease = lease
        self._events = events
        self.tool = str(tool)
        self.sampling = sampling
        # The person has as long to answer as an approval gives them; the app's own request
        # timeout still bounds the call.
        self.deadline = trio.current_time() + door.table.config.approval_timeout_s

    async def ask(self, method: str, params: Wire) -> Wire:
        if method == "sampling/createMessage":
            if self._door.chats is None:
                raise ServerRequestRefused("this server has no agent to answer sampling")
            app_id, allowed = self._lease.app_id, self.sampling
            return await ask(
                self._door.chats,
                lambda r: SampleForView(app_id, allowed, dict(params), r),
                SAMPLING_TIMEOUT_S,
            )
        if method != "elicitation/create" or self._events is None:
            raise ServerRequestRefused(f"an app view cannot answer {method}")
        url = params.get("url") if params.get("mode") == "url" else None
        schema = None if url is not None else (params.get("requestedSchema") or {})
        request_id = "q-" + secrets.token_urlsafe(12)
        question: Wire = {
            "requestId": request_id,
            "app": self._lease.app_id,
            "tool": self.tool,
            "message": str(params.get("message", "")),
        }
        question.update({"url": url} if url is not None else {"requestedSchema": schema})
        self._door.asked[request_id] = self._lease.id
        try:
            await self._events.send(("elicitation", question))
            return await self._door.questions.ask(request_id, schema, self.deadline)
        finally:
            self._door.asked.pop(request_id, None)


class _Pending:
    def __init__(self, lease: Lease, tool: str) -> None:
        self.id = secrets.token_urlsafe(16)
        self.lease = lease
        self.tool = tool
        self.answered = trio.Event()
        self.decision = "deny"


class ViewDoor:
    """The views of this front door and the calls waiting for the person's answer."""

    def __init__(
        self,
        registry: Mailbox[RegistryMessage],
        config: ViewsConfig | None = None,
        approvals: Mapping[str, Approval] | None = None,
        metrics: Metrics | None = None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.registry = registry
        self.table = ViewTable(config, clock) if clock else ViewTable(config)
        self.approvals = dict(approvals or {})
        self.pending: dict[str, _Pending] = {}
        self.questions = Questions()  # the apps' questions to the views' pages
        self.asked: dict[str, str] = {}  # a waiting question's request id → its view's id
        self.chats: Mailbox[HubMessage] | None = (
            None  # the agent, for sampling (set with the routes)
        )
        self.nursery: trio.Nursery | None = None  # where the views' tool calls run
        # Without the supervisor's metrics (a test), counters of their own: never the global
        # registry, where a second door would clash with the first.
        registry_ = metrics.registry if metrics is not None else CollectorRegistry()
        self.decisions = Counter(
            "mcpapps_view_approvals",
            "Approvals of a view's tool calls, by app and decision (once, while-open, deny,"
            " timeout).",
            ["app", "decision"],
            registry=registry_,
        )
        self.refusals = Counter(
            "mcpapps_view_refusals",
            "Requests of a view the server refused, by app and JSON-RPC error code.",
            ["app", "code"],
            registry=registry_,
        )

    def approval(self, app_id: str) -> Approval:
        return self.approvals.get(app_id, "writes")

    async def watch(self) -> None:
        """Views of an app that a reload restarts (its definition changed) or stops end."""
        facts_in, facts = trio.open_memory_channel[Any](256)
        self.registry.tell(Watch(facts_in))
        async with facts, trio.open_nursery() as nursery:
            self.nursery = nursery
            async for fact in facts:
                if isinstance(fact, Reloaded):
                    for app_id in (*fact.diff.restarted, *fact.diff.stopped):
                        if dropped := self.table.drop_app(app_id):
                            logger.info("app %s changed: %d of its views ended", app_id, dropped)

    def start_call(self, lease: Lease, call: Wire) -> tuple[trio.MemoryReceiveChannel[Any], Any]:
        """Run a view's tool call on its own: what comes out is `("elicitation", question)` for
        each question the app asks, then `("message", outcome)`. The call is the door's (not the
        request's) so that a question can turn the answer into a stream; closing the returned
        scope (the page went away) cancels the call and its questions."""
        events_in, events = trio.open_memory_channel[Any](8)
        scope = trio.CancelScope()

        async def run() -> None:
            async with events_in:
                with scope:
                    app_id = lease.app_id
                    try:
                        sampling: bool = await ask(
                            self.registry, lambda r: SamplingAllowed(app_id, r), ASK_TIMEOUT_S
                        )
                    except Exception:
                        sampling = False
                    caller = _ViewCaller(self, lease, events_in, call.get("name"), sampling)
                    outcome = await _forward(self, lease, "tools/call", call, caller)
                    with contextlib.suppress(trio.BrokenResourceError):
                        await events_in.send(("message", outcome))

        if self.nursery is None:
            raise Refused(types.INTERNAL_ERROR, "the view door is not running")
        self.nursery.start_soon(run)
        return events, scope

    def cancel_questions(self, view_id: str, why: str) -> None:
        for request_id, owner in list(self.asked.items()):
            if owner == view_id:
                self.questions.cancel(request_id, why)

    def session_contexts(self, chat_session: str) -> list[dict[str, Any]]:
        """The latest model context of each view of the session, taken (each is given once),
        as marked app events of the session's next turn."""
        events = []
        for lease in self.table.of_session(chat_session):
            if lease.model_context:
                events.append(
                    {
                        "tool": f"{lease.app_id}/ui/update-model-context",
                        "args": {},
                        "resultText": lease.model_context,
                    }
                )
                lease.model_context = None
        return events


def views_blueprint(door: ViewDoor, chats: Mailbox[HubMessage]) -> Blueprint:
    views = Blueprint("views", __name__)
    table = door.table
    door.chats = chats

    @views.post("/apps/views")
    async def open_view() -> Any:
        try:
            body = jsonin.loads(await request.get_data())
        except jsonin.JSONInputError as error:
            return json_error(400, "bad_request", str(error))
        if not isinstance(body, Mapping) or not isinstance(body.get("appId"), str):
            return json_error(
                400,
                "bad_request",
                'the body must be {"appId": "...", "sessionId"?: "...", "toolCall"?: {...}}',
            )
        app_id, session = body["appId"], body.get("sessionId")
        if session is not None and not (isinstance(session, str) and SESSION_ID.fullmatch(session)):
            return json_error(400, "bad_request", "'sessionId' is not a chat session id")
        tool_call = body.get("toolCall")
        if tool_call is not None and (
            not isinstance(tool_call, Mapping) or len(json.dumps(tool_call)) > TOOL_CALL_MAX
        ):
            return json_error(
                400, "bad_request", f"'toolCall' must be an object of at most {TOOL_CALL_MAX} bytes"
            )
        try:
            await ask(door.registry, lambda r: Lookup(app_id, r), ASK_TIMEOUT_S)
        except UnknownApp:
            return json_error(404, "unknown_app", f"there is no app '{app_id}'")
        lease = table.open(app_id, session or None, tool_call)
        if body.get("run") is True and tool_call is not None:
            lease.opening = {
                "name": tool_call.get("toolName"),
                "arguments": tool_call.get("arguments") or {},
            }
        return {
            **lease.descriptor(),
            "leaseS": table.config.lease_s,
            "approval": door.approval(app_id),
        }, 201

    @views.post("/apps/views/<view_id>/keepalive")
    async def keep_alive(view_id: str) -> Any:
        try:
            table.get(view_id)
        except Refused as refused:
            return json_error(404, "unknown_view", refused.message)
        return {"leaseS": table.config.lease_s}

    @views.delete("/apps/views/<view_id>")
    async def close_view(view_id: str) -> Any:
        for pending in [p for p in door.pending.values() if p.lease.id == view_id]:
            pending.answered.set()  # a call still waiting is denied
        door.cancel_questions(view_id, "its view was closed, so it was cancelled")
        return {"closed": table.close(view_id)}

    @views.post("/apps/views/<view_id>/approvals/<approval_id>")
    async def answer(view_id: str, approval_id: str) -> Any:
        pending = door.pending.get(approval_id)
        if pending is None or pending.lease.id != view_id:
            return json_error(404, "unknown_approval", "no call of this view waits for approval")
        try:
            body = jsonin.loads(await request.get_data())
        except jsonin.JSONInputError as error:
            return json_error(400, "bad_request", str(error))
        decision = body.get("decision") if isinstance(body, Mapping) else None
        if decision not in DECISIONS:
            return json_error(400, "bad_request", f"'decision' must be one of {list(DECISIONS)}")
        pending.decision = decision
        pending.answered.set()
        return {"decision": decision}

    @views.post("/apps/views/<view_id>/answers")
    async def answer_question(view_id: str) -> Any:
        try:
            body = jsonin.loads(await request.get_data())
        except jsonin.JSONInputError as error:
            return json_error(400, "bad_request", str(error))
        if not isinstance(body, Mapping) or not isinstance(body.get("requestId"), str):
            return json_error(400, "bad_request", f"the body must be a JSON object: {_ANSWER}")
        request_id = body["requestId"]
        if door.asked.get(request_id, view_id) != view_id:
            return json_error(404, "not_found", f"this view asked no question '{request_id}'")
        try:
            door.questions.answer(request_id, body.get("action"), body.get("content"))
        except AnswerRefused as refused:
            return json_error(refused.status, _KINDS[refused.status], refused.message)
        return {"requestId": request_id, "action": body.get("action")}

    @views.get("/apps/chat/<session_id>/views")
    async def chat_views(session_id: str) -> Any:
        if not SESSION_ID.fullmatch(session_id):
            return json_error(400, "bad_request", "not a chat session id")
        try:
            saved: SavedSession = await ask(
                chats, lambda r: GetSession(session_id, r), ASK_TIMEOUT_S
            )
            table_ = await ask(door.registry, GetToolTable, ASK_TIMEOUT_S)
        except (StoreError, AskTimeout) as error:
            return json_error(503, "unavailable", f"the session cannot be read: {error}")
        return {"views": opened_views(saved.messages, table_)}

    @views.post("/apps/views/<view_id>/mcp")
    async def view_request(view_id: str) -> Any:
        try:
            message = jsonin.loads(await request.get_data())
        except jsonin.JSONInputError as error:
            return _answer(None, error=Refused(types.PARSE_ERROR, str(error)).error())
        if not isinstance(message, Mapping) or not isinstance(message.get("method"), str):
            invalid = Refused(types.INVALID_REQUEST, "send one JSON-RPC request with a 'method'")
            return _answer(None, error=invalid.error())
        rpc_id, method = message.get("id"), message["method"]
        raw_params = message.get("params")
        params: Mapping[str, Any] = raw_params if isinstance(raw_params, Mapping) else {}
        lease: Lease | None = None
        try:
            lease = table.get(view_id)
            if method == "ui/update-model-context":
                lease.model_context = model_context_text(params) or None
                return _answer(rpc_id, result={})
            if method not in PASSED_ON and method not in ("tools/call", "tools/list"):
                raise Refused(types.METHOD_NOT_FOUND, f"a view cannot ask '{method}'")
            table.admit(lease, tool_call=method == "tools/call")
        except Refused as refused:
            door.refusals.labels(lease.app_id if lease else "", str(refused.code)).inc()
            return _answer(rpc_id, error=refused.error())
        admitted = lease
        release = True  # this request releases the lease, unless a held call takes it over
        try:
            if method == "tools/list":
                catalog = await _catalog(door, admitted.app_id)
                tools = [t for t in catalog.tools if is_visible_to_app(t)]
                return _answer(rpc_id, result={"tools": tools})
            if method in PASSED_ON:
                return _answer(rpc_id, **await _forward(door, admitted, method, dict(params)))
            tool = await _allowed_tool(door, admitted, params)
            call = _with_session(admitted, params)
            needs = needs_approval(door.approval(admitted.app_id), tool)
            if admitted.opening is not None:
                opening, admitted.opening = admitted.opening, None
                needs = needs and opening != {"name": call["name"], "arguments": call["arguments"]}
            if needs and tool["name"] not in admitted.grants:
                held = _held(door, admitted, rpc_id, tool["name"], call)
                release = False  # released when the held call ends
                return _stream(held)
            events, scope = door.start_call(admitted, call)
            kind, first = await _first(events, scope)
            if kind == "message":
                return _answer(rpc_id, **first)
            # The app asked the person: the rest of the answer is a stream.
            streamed = _asking(door, admitted, rpc_id, events, scope, _event(kind, first))
            release = False  # released when the stream ends
            return _stream(streamed)
        except Refused as refused:
            door.refusals.labels(lease.app_id, str(refused.code)).inc()
            return _answer(rpc_id, error=refused.error())
        finally:
            if release:
                table.release(admitted)

    return views


def _stream(events: AsyncIterator[bytes]) -> Response:
    response = Response(events, mimetype="text/event-stream")
    response.headers["Cache-Control"] = "no-store"
    response.timeout = None  # the person may take a while (bounded by the door)
    return response


async def _first(events: trio.MemoryReceiveChannel[Any], scope: Any) -> tuple[str, Any]:
    try:
        return await events.receive()
    except BaseException:
        scope.cancel()
        events.close()
        raise


async def _asking(
    door: ViewDoor,
    lease: Lease,
    rpc_id: Any,
    events: trio.MemoryReceiveChannel[Any],
    scope: Any,
    first: bytes,
) -> AsyncIterator[bytes]:
    """A call whose app asks the person: each question as an `elicitation` event, then the
    answer as `message`. The page going away cancels the call (and so its questions)."""
    try:
        yield first
        async with events:
            async for kind, data in events:
                yield _event(kind, _answer(rpc_id, **data) if kind == "message" else data)
    finally:
        scope.cancel()
        door.table.release(lease)


def _answer(rpc_id: Any, **outcome: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rpc_id, **outcome}


async def _catalog(door: ViewDoor, app_id: str) -> Catalog:
    try:
        return await ask(door.registry, lambda r: ToApp(app_id, GetCatalog(r)), ASK_TIMEOUT_S)
    except Exception as error:
        failed = mcp_error(error).error
        raise Refused(failed.code, failed.message) from None


async def _allowed_tool(door: ViewDoor, lease: Lease, params: Mapping[str, Any]) -> Wire:
    name = params.get("name")
    catalog = await _catalog(door, lease.app_id)
    tool = next((t for t in catalog.tools if t.get("name") == name), None)
    if tool is None:
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


def _with_session(lease: Lease, params: Mapping[str, Any]) -> Wire:
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


async def _forward(
    door: ViewDoor, lease: Lease, method: str, params: Wire, caller: _ViewCaller | None = None
) -> dict[str, Any]:
    abandoned = trio.Event()
    caller = caller or _ViewCaller(door, lease)
    try:
        result: Wire = await ask(
            door.registry,
            lambda reply: ToApp(
                lease.app_id, UpstreamRequest(method, params, reply, caller, abandoned)
            ),
        )
    except trio.Cancelled:
        abandoned.set()
        raise
    except Exception as error:
        failed = mcp_error(error).error
        return {"error": failed.model_dump(mode="json", exclude_none=True)}
    return {"result": result}


async def _held(
    door: ViewDoor, lease: Lease, rpc_id: Any, tool: str, call: Wire
) -> AsyncIterator[bytes]:
    """A call that waits for the person: `approval` is sent at once; the call goes to the app
    only if they allow it in time."""
    pending = _Pending(lease, tool)
    door.pending[pending.id] = pending
    timeout = door.table.config.approval_timeout_s
    try:
        yield _event(
            "approval",
            {
                "approvalId": pending.id,
                "appId": lease.app_id,
                "tool": tool,
                "arguments": call.get("arguments"),
                "timeoutS": timeout,
            },
        )
        with trio.move_on_after(timeout) as waited:
            await pending.answered.wait()
        decision = "timeout" if waited.cancelled_caught else pending.decision
        door.decisions.labels(lease.app_id, decision).inc()
        logger.info(
            "view %s… of app %s: tools/call %s: %s", lease.id[:6], lease.app_id, tool, decision
        )
        if decision == "while-open":
            lease.grants.add(tool)
        if decision in ("once", "while-open"):
            events, scope = door.start_call(lease, call)
            try:
                async with events:
                    async for kind, data in events:
                        if kind == "message":
                            outcome = data
                            break
                        yield _event(kind, data)  # the app asks the person
                    else:
                        outcome = {"error": Refused(types.INTERNAL_ERROR, "the call ended").error()}
            finally:
                scope.cancel()
        else:
            why = (
                f"no answer within {timeout:g} s"
                if decision == "timeout"
                else "the person denied it"
            )
            outcome = {"error": Refused(DENIED, f"the call of '{tool}' was not run: {why}").error()}
        yield _event("message", _answer(rpc_id, **outcome))
    finally:
        door.pending.pop(pending.id, None)
        door.table.release(lease)


def _event(name: str, data: Any) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()


def opened_views(messages: Any, table: Any) -> list[dict[str, Any]]:
    """The views a chat opened, from its saved tool calls: each a small descriptor (app, tool,
    resource URI, arguments, tool call id). No result is kept: a relaunched view runs its tool
    again."""
    found = []
    for message in messages:
        if not isinstance(message, Mapping) or message.get("role") != "assistant":
            continue
        for call in message.get("tool_calls") or ():
            function = call.get("function") or {}
            tool = table.find(function.get("name") or "")
            if tool is None or tool.ui_resource_uri is None:
                continue
            try:
                arguments = json.loads(function.get("arguments") or "{}")
            except ValueError:
                arguments = {}
            found.append(
                {
                    "appId": tool.app_id,
                    "tool": tool.name,
                    "publicName": tool.public_name,
                    "resourceUri": tool.ui_resource_uri,
                    "arguments": arguments if isinstance(arguments, dict) else {},
                    "toolCallId": call.get("id"),
                }
            )
    return found
