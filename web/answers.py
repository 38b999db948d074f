"""`POST /apps/chat/<sessionId>/answers`: the person answers a question an app asked during the
session's turn (an `elicitation` event). The session checks the answer against the app's schema
(actors.asking); this route only reads the body and says what became of it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from quart import Blueprint, request

from actors.asking import AnswerRefused
from actors.chat import AnswerQuestion
from actors.runtime import AskTimeout, Mailbox, ask
from supervisor import jsonin
from web.chat import _SESSION_ID_RULE, ASK_TIMEOUT_S, SESSION_ID
from web.errors import json_error

_BODY = '{"requestId": "...", "action": "accept" | "decline" | "cancel", "content"?: {...}}'
_KINDS = {400: "bad_request", 404: "not_found", 409: "conflict"}


def answers_blueprint(chats: Mailbox[Any]) -> Blueprint:
    answers = Blueprint("answers", __name__)

    @answers.post("/apps/chat/<session_id>/answers")
    async def post_answer(session_id: str) -> Any:
        if not SESSION_ID.fullmatch(session_id):
            return json_error(400, "bad_request", _SESSION_ID_RULE)
        try:
            body = jsonin.loads(await request.get_data())
        except jsonin.JSONInputError as error:
            return json_error(400, "bad_request", str(error))
        if not isinstance(body, Mapping) or not isinstance(body.get("requestId"), str):
            return json_error(400, "bad_request", f"the body must be a JSON object: {_BODY}")
        request_id = body["requestId"]
        try:
            await ask(
                chats,
                lambda r: AnswerQuestion(
                    session_id, request_id, body.get("action"), body.get("content"), r
                ),
                ASK_TIMEOUT_S,
            )
        except AnswerRefused as refused:
            return json_error(refused.status, _KINDS[refused.status], refused.message)
        except AskTimeout as error:
            return json_error(503, "unavailable", f"the chat could not answer: {error}")
        return {"requestId": request_id, "action": body.get("action")}

    return answers
