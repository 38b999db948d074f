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
from actors.chat.sessionstore import StoreError
from actors.messages import (
    AnswerQuestion,
    HubMessage,
    RegistryMessage,
    SampleForView,
    SamplingAllowed,
)
from actors.runtime import AskTimeout, Mailbox, ask
from supervisor.model import jsonin
from supervisor.model.errors import BadRequest, Forbidden, Unavailable
from web.chat.stream import CHAT_ASK_TIMEOUT_S, session_id_checked

_BODY = '{"requestId": "...", "action": "accept" | "decline" | "cancel", "content"?: {...}}'
SAMPLING_TIMEOUT_S = 600.0  # a local model may be slow; the view's own request waits as long


# What an answer the session did not take is, by the status the session gives it.
def answers_blueprint(chats: Mailbox[HubMessage], registry: Mailbox[RegistryMessage]) -> Blueprint:
    answers = Blueprint("answers", __name__)

    @answers.post("/apps/sampling/<app_id>")
    async def post_sampling(app_id: str) -> Any:
        try:
            params = jsonin.loads(await request.get_data())
        except jsonin.JSONInputError as error:
            raise BadRequest(str(error)) from None
        if not isinstance(params, Mapping):
            raise BadRequest("the body must be the sampling request's params")
        try:
            allowed: bool = await ask(
                registry, lambda r: SamplingAllowed(app_id, r), CHAT_ASK_TIMEOUT_S
            )
            return await ask(
                chats, lambda r: SampleForView(app_id, allowed, dict(params), r), SAMPLING_TIMEOUT_S
            )
        except ServerRequestRefused as refused:
            raise Forbidden(str(refused)) from None
        except AskTimeout as error:
            raise Unavailable(f"the sampling request was not answered: {error}") from None

    @answers.post("/apps/chat/<session_id>/answers")
    async def post_answer(session_id: str) -> Any:
        session_id_checked(session_id)
        try:
            body = jsonin.loads(await request.get_data())
        except jsonin.JSONInputError as error:
            raise BadRequest(str(error)) from None
        if not isinstance(body, Mapping) or not isinstance(body.get("requestId"), str):
            raise BadRequest(f"the body must be a JSON object: {_BODY}")
        request_id = body["requestId"]
        try:
            await ask(
                chats,
                lambda r: AnswerQuestion(
                    session_id, request_id, body.get("action"), body.get("content"), r
                ),
                CHAT_ASK_TIMEOUT_S,
            )
        except (AskTimeout, StoreError) as error:
            raise Unavailable(f"the chat could not answer: {error}") from None
        return {"requestId": request_id, "action": body.get("action")}

    return answers
