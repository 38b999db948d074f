"""The routes of the tools a view registers (actors/views/viewtools.py), by the view's id:

    PUT  /apps/views/<viewId>/tools                   the view's tools, as it listed them:
                                                      {tools: [...]} → {offered: n}
    POST /apps/views/<viewId>/tools/next              wait (at most `NEXT_WAIT_S`) for the next
                                                      call of the model: {call: {id, name,
                                                      arguments} | null}
    POST /apps/views/<viewId>/tools/calls/<callId>    the view's answer: {result}

The page that shows the view lists its tools once it is initialized, then asks for the calls in
a loop while the view is open, performs each in the view and posts its answer. Each route is
one message to the view hub; its refusals are kinds of the one family (actors/views/refusals.py),
which web/errors.py words."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from quart import Blueprint, request

from actors.runtime import ASK_TIMEOUT_S, Mailbox, ask
from actors.views.messages import (
    AnswerViewToolCall,
    NextViewToolCall,
    SetViewTools,
    ViewMessage,
    ViewToolCall,
)
from supervisor.model import jsonin
from supervisor.model.errors import BadRequest

NEXT_WAIT_S = 20.0  # a page's wait for the model's next call; it asks again after


async def _body() -> Mapping[str, Any]:
    try:
        body = jsonin.loads(await request.get_data())
    except jsonin.JSONInputError as error:
        raise BadRequest(str(error)) from None
    if not isinstance(body, Mapping):
        raise BadRequest("the body must be a JSON object")
    return body


def view_tools_blueprint(views: Mailbox[ViewMessage]) -> Blueprint:
    blueprint = Blueprint("view_tools", __name__)

    @blueprint.put("/apps/views/<view_id>/tools")
    async def set_tools(view_id: str) -> Any:
        tools = (await _body()).get("tools")
        offered: int = await ask(views, lambda r: SetViewTools(view_id, tools, r), ASK_TIMEOUT_S)
        return {"offered": offered}

    @blueprint.post("/apps/views/<view_id>/tools/next")
    async def next_call(view_id: str) -> Any:
        call: ViewToolCall | None = await ask(
            views, lambda r: NextViewToolCall(view_id, NEXT_WAIT_S, r), NEXT_WAIT_S + 5
        )
        if call is None:
            return {"call": None}
        return {"call": {"id": call.call_id, "name": call.name, "arguments": call.arguments}}

    @blueprint.post("/apps/views/<view_id>/tools/calls/<call_id>")
    async def answer_call(view_id: str, call_id: str) -> Any:
        result = (await _body()).get("result")
        await ask(views, lambda r: AnswerViewToolCall(view_id, call_id, result, r), ASK_TIMEOUT_S)
        return {"answered": True}

    return blueprint
