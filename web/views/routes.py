"""The view endpoint's routes: what an app view open in the control page may ask the server, by
its view id, whatever the page does. Each route reads the request, sends the view hub
(actors/views/hub.py) one message, and turns its answer into HTTP; the hub holds every view's
state. A refusal is raised as a kind of the one family (the hub's kinds are in
actors/views/refusals.py), which web/errors.py words once for HTTP and once for JSON-RPC.

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
from collections.abc import Callable, Mapping
from typing import Any

import trio
from quart import Blueprint, request

from actors.catalog import Wire
from actors.chat.sessionstore import SavedSession, StoreError
from actors.messages import GetSession, GetToolTable, HubMessage, RegistryMessage, UnknownApp
from actors.runtime import ASK_TIMEOUT_S, Abandonment, AskTimeout, Mailbox, Overloaded, ask
from actors.views.messages import (
    AnswerApproval,
    AnswerPageQuestion,
    CloseView,
    Failed,
    KeepViewAlive,
    OpenedView,
    OpenView,
    TakeModelContexts,
    ViewEvent,
    ViewMessage,
    ViewRequest,
)
from actors.views.refusals import (
    NotARequest,
    Unreadable,
)
from supervisor.model import jsonin
from supervisor.model.errors import BadRequest, NotFound, Unavailable
from web.chat.stream import SESSION_ID
from web.views.framing import answer, rpc_answer
from web.views.history import opened_views

_ANSWER = '{"requestId": "...", "action": "accept" | "decline" | "cancel", "content"?: {...}}'
TOOL_CALL_MAX = 1_000  # characters of a tool call descriptor kept with a view


def json_body(raw: str | bytes) -> Any:
    try:
        return jsonin.loads(raw)
    except jsonin.JSONInputError as error:
        raise BadRequest(str(error)) from None


async def model_contexts(views: Mailbox[ViewMessage], session_id: str) -> list[Wire]:
    """The latest model context of each view the session opened, as app events of its next
    turn (none if the hub cannot say in time: the turn goes on without)."""
    try:
        taken: tuple[Wire, ...] = await ask(
            views, lambda r: TakeModelContexts(session_id, r), ASK_TIMEOUT_S
        )
    except AskTimeout:
        return []
    return list(taken)


def views_blueprint(
    views: Mailbox[ViewMessage],
    registry: Mailbox[RegistryMessage],
    chats: Mailbox[HubMessage],
    ui_settings: Callable[[str], Mapping[str, Any]] | None = None,
) -> Blueprint:
    """`ui_settings` says what the page needs to render an app's views (its `[apps.entries]`
    `max_ui_bytes` and `csp_allow`), given with each view opened."""
    blueprint = Blueprint("views", __name__)

    @blueprint.post("/apps/views")
    async def open_view() -> Any:
        body = json_body(await request.get_data())
        if not isinstance(body, Mapping) or not isinstance(body.get("appId"), str):
            raise BadRequest(
                'the body must be {"appId": "...", "sessionId"?: "...", "toolCall"?: {...}}'
            )
        app_id, session = body["appId"], body.get("sessionId")
        if session is not None and not (isinstance(session, str) and SESSION_ID.fullmatch(session)):
            raise BadRequest("'sessionId' is not a chat session id")
        tool_call = body.get("toolCall")
        if tool_call is not None and (
            not isinstance(tool_call, Mapping)
            or len(json.dumps(tool_call, ensure_ascii=False).encode()) > TOOL_CALL_MAX
        ):
            raise BadRequest(f"'toolCall' must be an object of at most {TOOL_CALL_MAX} bytes")
        run = body.get("run") is True
        try:
            opened: OpenedView = await ask(
                views, lambda r: OpenView(app_id, session or None, tool_call, run, r), ASK_TIMEOUT_S
            )
        except UnknownApp:
            raise UnknownApp(app_id, f"there is no app '{app_id}'") from None
        return {
            "viewId": opened.view_id,
            "appId": opened.app_id,
            "sessionId": opened.chat_session,
            "toolCall": dict(opened.tool_call) if opened.tool_call else None,
            "leaseS": opened.lease_s,
            "approval": opened.approval,
            "ui": ui_settings(opened.app_id) if ui_settings else {},
        }, 201

    @blueprint.post("/apps/views/<view_id>/keepalive")
    async def keep_alive(view_id: str) -> Any:
        lease_s: float = await ask(views, lambda r: KeepViewAlive(view_id, r), ASK_TIMEOUT_S)
        return {"leaseS": lease_s}

    @blueprint.delete("/apps/views/<view_id>")
    async def close_view(view_id: str) -> Any:
        closed: bool = await ask(views, lambda r: CloseView(view_id, r), ASK_TIMEOUT_S)
        return {"closed": closed}

    @blueprint.post("/apps/views/<view_id>/approvals/<approval_id>")
    async def answer_approval(view_id: str, approval_id: str) -> Any:
        body = json_body(await request.get_data())
        decision = body.get("decision") if isinstance(body, Mapping) else None
        await ask(views, lambda r: AnswerApproval(view_id, approval_id, decision, r), ASK_TIMEOUT_S)
        return {"decision": decision}

    @blueprint.post("/apps/views/<view_id>/answers")
    async def answer_question(view_id: str) -> Any:
        body = json_body(await request.get_data())
        if not isinstance(body, Mapping) or not isinstance(body.get("requestId"), str):
            raise BadRequest(f"the body must be a JSON object: {_ANSWER}")
        request_id, action, content = body["requestId"], body.get("action"), body.get("content")
        await ask(
            views,
            lambda r: AnswerPageQuestion(view_id, request_id, action, content, r),
            ASK_TIMEOUT_S,
        )
        return {"requestId": request_id, "action": action}

    @blueprint.get("/apps/chat/<session_id>/views")
    async def chat_views(session_id: str) -> Any:
        if not SESSION_ID.fullmatch(session_id):
            raise BadRequest("not a chat session id")
        try:
            saved: SavedSession = await ask(
                chats, lambda r: GetSession(session_id, r), ASK_TIMEOUT_S
            )
            table = await ask(registry, GetToolTable, ASK_TIMEOUT_S)
        except (StoreError, AskTimeout) as error:
            raise Unavailable(f"the session cannot be read: {error}") from None
        if not saved.turns:  # as GET /apps/chat/<id> says: no such session
            raise NotFound(f"there is no saved session '{session_id}'")
        return {"views": opened_views(saved.messages, table)}

    @blueprint.post("/apps/views/<view_id>/mcp")
    async def view_request(view_id: str) -> Any:
        try:
            message = jsonin.loads(await request.get_data())
        except jsonin.JSONInputError as error:
            return rpc_answer(None, Failed(Unreadable(str(error))))
        if not isinstance(message, Mapping) or not isinstance(message.get("method"), str):
            invalid = NotARequest("send one JSON-RPC request with a 'method'")
            return rpc_answer(None, Failed(invalid))
        rpc_id, method, params = message.get("id"), message["method"], message.get("params")
        events_in, events = trio.open_memory_channel[ViewEvent](8)
        abandoned = Abandonment()
        params = params if isinstance(params, Mapping) else {}
        try:
            await views.send(ViewRequest(view_id, method, params, events_in, abandoned))
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            return rpc_answer(rpc_id, Failed(Overloaded("stopped")))
        return await answer(rpc_id, events, abandoned)

    return blueprint
