"""The view endpoint's routes: what an app view open in the control page may ask the server,
by its view id, whatever the page does (the state behind them is web/viewdoor.py's).

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

import json
from collections.abc import Mapping
from typing import Any

import mcp_types as types
from quart import Blueprint, request

from actors.asking import AnswerRefused
from actors.chat.sessionstore import SavedSession, StoreError
from actors.messages import ActorOf, GetSession, GetToolTable, HubMessage, UnknownApp
from actors.runtime import ASK_TIMEOUT_S, AskTimeout, Mailbox, ask
from supervisor.model import jsonin
from web.chat.stream import SESSION_ID
from web.errors import json_error
from web.viewapprovals import held_for_approval, not_run_while_stopping
from web.viewcalls import (
    PASSED_ON,
    allowed_tool,
    app_catalog,
    asking_stream,
    event_stream,
    first_event,
    forward,
    rpc_answer,
    sse_event,
    with_session,
)
from web.viewdoor import ViewDoor
from web.viewhistory import opened_views
from web.views import (
    DECISIONS,
    Lease,
    Refused,
    TooManyViews,
    is_visible_to_app,
    model_context_text,
    needs_approval,
)

_ANSWER = '{"requestId": "...", "action": "accept" | "decline" | "cancel", "content"?: {...}}'
_KINDS = {400: "bad_request", 404: "not_found", 409: "conflict"}
TOOL_CALL_MAX = 1_000  # characters of a tool call descriptor kept with a view


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
            not isinstance(tool_call, Mapping)
            or len(json.dumps(tool_call, ensure_ascii=False).encode()) > TOOL_CALL_MAX
        ):
            return json_error(
                400, "bad_request", f"'toolCall' must be an object of at most {TOOL_CALL_MAX} bytes"
            )
        try:
            actor: int | None = await ask(
                door.registry, lambda r: ActorOf(app_id, r), ASK_TIMEOUT_S
            )
        except UnknownApp:
            return json_error(404, "unknown_app", f"there is no app '{app_id}'")
        try:
            lease = table.open(app_id, session or None, tool_call)
            lease.actor = actor
        except TooManyViews as full:
            response = json_error(503, "too_many_views", str(full))
            response.headers["Retry-After"] = str(round(table.config.lease_s))
            return response
        if body.get("run") is True and tool_call is not None:
            lease.opening = {
                "name": tool_call.get("toolName"),
                "arguments": tool_call.get("arguments") or {},
            }
        return {
            **lease.descriptor(),
            "leaseS": table.config.lease_s,
            "approval": door.approval(app_id),
            "ui": door.ui_settings(app_id),
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
        # Ending the lease ends what waits on it: a held call is answered, a question cancelled.
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
        if not saved.turns:  # as GET /apps/chat/<id> says: no such session
            return json_error(404, "not_found", f"there is no saved session '{session_id}'")
        return {"views": opened_views(saved.messages, table_)}

    @views.post("/apps/views/<view_id>/mcp")
    async def view_request(view_id: str) -> Any:
        try:
            message = jsonin.loads(await request.get_data())
        except jsonin.JSONInputError as error:
            return rpc_answer(None, error=Refused(types.PARSE_ERROR, str(error)).error())
        if not isinstance(message, Mapping) or not isinstance(message.get("method"), str):
            invalid = Refused(types.INVALID_REQUEST, "send one JSON-RPC request with a 'method'")
            return rpc_answer(None, error=invalid.error())
        rpc_id, method = message.get("id"), message["method"]
        raw_params = message.get("params")
        params: Mapping[str, Any] = raw_params if isinstance(raw_params, Mapping) else {}
        lease: Lease | None = None
        try:
            lease = table.get(view_id)
            if method == "ui/update-model-context":
                lease.model_context = model_context_text(params) or None
                return rpc_answer(rpc_id, result={})
            if method not in PASSED_ON and method not in ("tools/call", "tools/list"):
                raise Refused(types.METHOD_NOT_FOUND, f"a view cannot ask '{method}'")
            table.admit(lease, tool_call=method == "tools/call")
        except Refused as refused:
            door.refusals.labels(lease.app_id if lease else "", str(refused.code)).inc()
            return rpc_answer(rpc_id, error=refused.error())
        admitted = lease
        release = True  # this request releases the lease, unless a held call takes it over
        try:
            if method == "tools/list":
                catalog = await app_catalog(door, admitted.app_id)
                tools = [t for t in catalog.tools if is_visible_to_app(t)]
                return rpc_answer(rpc_id, result={"tools": tools})
            if method in PASSED_ON:
                return rpc_answer(rpc_id, **await forward(door, admitted, method, dict(params)))
            tool = await allowed_tool(door, admitted, params)
            call = with_session(admitted, params)
            needs = needs_approval(door.approval(admitted.app_id), tool)
            if admitted.opening == {"name": call["name"], "arguments": call["arguments"]}:
                admitted.opening = None  # used up by exactly that call, and by no other
                needs = False
            if needs and tool["name"] not in admitted.grants:
                table.hold(admitted)
                held = held_for_approval(door, admitted, rpc_id, tool["name"], call)
                release = False  # released when the held call ends
                return await event_stream(held)
            if door.stopping:  # held calls are answered so too (web/viewapprovals.py)
                raise not_run_while_stopping(tool["name"])
            events, scope = door.start_call(admitted, call)
            kind, first = await first_event(events, scope)
            if kind == "message":
                return rpc_answer(rpc_id, **first)
            # The app asked the person: the rest of the answer is a stream.
            streamed = asking_stream(door, admitted, rpc_id, events, scope, sse_event(kind, first))
            release = False  # released when the stream ends
            return await event_stream(streamed)
        except Refused as refused:
            door.refusals.labels(lease.app_id, str(refused.code)).inc()
            return rpc_answer(rpc_id, error=refused.error())
        finally:
            if release:
                table.release(admitted)

    return views
