"""`POST /apps/chat/<sessionId>/answers`: the person answers a question an app asked during the
session's turn (an `elicitation` event). The session checks the answer against the app's schema
(actors.asking); this route only reads the body and says what became of it.

`POST /apps/sampling/<appId>`: a sampling request an app's view made through the page's MCP
client, answered by the agent's model under the same rule as in a chat turn (the app must be
allowed, the engine must have a model); a refusal is a 403 that says why."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from quart import Blueprint, request

from actors.apps.upstream import ServerRequestRefused
from actors.asking import AnswerRefused
from actors.chat.sessionstore import StoreError
from actors.messages import (
    AnswerQuestion,
    HubMessage,
    RegistryMessage,
    SampleForView,
    SamplingAllowed,
    UnknownApp,
)
from actors.runtime import AskTimeout, Mailbox, ask
from supervisor.model import jsonin
from web.chat.stream import CHAT_ASK_TIMEOUT_S, SESSION_ID, SESSION_ID_RULE
from web.errors import json_error

_BODY = '{"requestId": "...", "action": "accept" | "decline" | "cancel", "content"?: {...}}'
SAMPLING_TIMEOUT_S = 600.0  # a local model may be slow; the view's own request waits as long
_KINDS = {400: "bad_request", 404: "not_found", 409: "conflict"}


def answers_blueprint(chats: Mailbox[HubMessage], registry: Mailbox[RegistryMessage]) -> Blueprint:
    answers = Blueprint("answers", __name__)

    @answers.post("/apps/sampling/<app_id>")
    async def post_sampling(app_id: str) -> Any:
        try:
            params = jsonin.loads(await request.get_data())
        except jsonin.JSONInputError as error:
            return json_error(400, "bad_request", str(error))
        if not isinstance(params, Mapping):
            return json_error(400, "bad_request", "the body must be the sampling request's params")
        try:
            allowed: bool = await ask(
                registry, lambda r: SamplingAllowed(app_id, r), CHAT_ASK_TIMEOUT_S
            )
            return await ask(
                chats, lambda r: SampleForView(app_id, allowed, dict(params), r), SAMPLING_TIMEOUT_S
            )
        except UnknownApp as unknown:
            return json_error(404, "unknown_app", str(unknown))
        except ServerRequestRefused as refused:
            return json_error(403, "refused", str(refused))
        except AskTimeout as error:
            return json_error(503, "unavailable", f"the sampling request was not answered: {error}")

    @answers.post("/apps/chat/<session_id>/answers")
    async def post_answer(session_id: str) -> Any:
        if not SESSION_ID.fullmatch(session_id):
            return json_error(400, "bad_request", SESSION_ID_RULE)
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
                CHAT_ASK_TIMEOUT_S,
            )
        except AnswerRefused as refused:
            return json_error(refused.status, _KINDS[refused.status], refused.message)
        except (AskTimeout, StoreError) as error:
            return json_error(503, "unavailable", f"the chat could not answer: {error}")
        return {"requestId": request_id, "action": body.get("action")}

    return answers
