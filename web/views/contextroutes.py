"""The model context the views attached, as the composer shows it (the view hub holds it):

    GET    /apps/model-context?sessionId=<id>&viewId=<id>…  the contexts of a chat session and
                                                           of the named views outside a chat,
                                                           oldest first: {"contexts": [chip…]}
    DELETE /apps/model-context/<updateId>                  the person removed one (a chip):
                                                           {"removed": chip}, or 404 when it
                                                           is not held (taken, replaced)

A chip is `{updateId, appId, sessionId, viewId, content, hidden, structuredContent}`: the
blocks the person may see (`content`), how many only the model reads (`hidden`), and whether
structured content came with them. The page tells the view whose context was removed
(`ui/notifications/host-context-changed` with `"openai/modelContext": null`).
"""

from __future__ import annotations

from typing import Any

from quart import Blueprint, request

from actors.catalog import Wire
from actors.runtime import ASK_TIMEOUT_S, Mailbox, ask
from actors.views.messages import ListModelContexts, RemoveModelContext, ViewMessage
from supervisor.model.errors import BadRequest, NotFound
from web.chat.attached import UPDATE_ID
from web.chat.stream import session_id_checked

VIEW_IDS_MAX = 20


def model_context_blueprint(views: Mailbox[ViewMessage]) -> Blueprint:
    blueprint = Blueprint("model_context", __name__)

    @blueprint.get("/apps/model-context")
    async def listed() -> Any:
        session = request.args.get("sessionId") or None
        if session is not None:
            session_id_checked(session)
        view_ids = tuple(request.args.getlist("viewId"))
        if len(view_ids) > VIEW_IDS_MAX:
            raise BadRequest(f"at most {VIEW_IDS_MAX} 'viewId' may be named")
        chips: tuple[Wire, ...] = await ask(
            views, lambda r: ListModelContexts(session, view_ids, r), ASK_TIMEOUT_S
        )
        return {"contexts": list(chips)}

    @blueprint.delete("/apps/model-context/<update_id>")
    async def removed(update_id: str) -> Any:
        if not UPDATE_ID.fullmatch(update_id):
            raise BadRequest("that is not an update id: ui/update-model-context gives 'update-…'")
        chip: Wire | None = await ask(
            views, lambda r: RemoveModelContext(update_id, r), ASK_TIMEOUT_S
        )
        if chip is None:
            raise NotFound(
                f"no model context '{update_id}' is attached: a turn took it, or its view"
                " replaced or closed it"
            )
        return {"removed": chip}

    return blueprint
