"""`POST /apps/chat`: a chat turn as a stream of server-sent events, and
`GET /apps/chat/<sessionId>`: what is saved of a session, a page of turns at a time (the
latest first: a long session is megabytes, and a page shows its end).

The route only checks the request and turns the session actor's events into SSE frames; the
turn itself runs in the session actor (`actors.chat.hub`), so it goes on, and is saved, whatever
happens to this connection.
"""

from __future__ import annotations

import contextlib
import math
import re
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

import attrs
import trio
from quart import Blueprint, Response, request

from actors.asking import Elicitation, Sampled
from actors.chat.mentions import BadMention, mentions
from actors.chat.sessionstore import SessionPage, StoreError
from actors.chat.turns import (
    Event,
    TextPiece,
    ToolFinished,
    ToolInputPartial,
    ToolStarted,
    TurnFailed,
    TurnWaiting,
    UserTurn,
)
from actors.messages import CancelTurn, GetSessionPage, HubMessage, Turn
from actors.runtime import AskTimeout, Mailbox, ask
from supervisor.model import jsonin, jsonout
from supervisor.model.errors import BadRequest, NotFound, Unavailable
from web.chat.attached import attachments, update_ids
from web.intake import close_with_request
from web.keepalives import KEEP_ALIVE, with_keep_alives

CHAT_ASK_TIMEOUT_S = 30.0
MESSAGE_MAX = 100_000  # characters: a chat message, not a document upload
SESSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}")
# Turns per page of `GET /apps/chat/<id>`: a page shows the end of a conversation at once;
# the most a client may ask for keeps one answer to a few megabytes even with large results.
PAGE_TURNS = 20
PAGE_TURNS_MAX = 200
_COUNT = re.compile(r"[0-9]{1,9}", re.ASCII)


def chat_blueprint(
    chats: Mailbox[HubMessage],
    view_contexts: Callable[[str, tuple[str, ...]], Awaitable[list[dict[str, Any]]]] | None = None,
) -> Blueprint:
    """`view_contexts(session, update_ids)` takes the model context the session's views
    attached, and that of the views outside a chat the request names, for its next turn (the
    view hub's, web/views/routes.py)."""
    chat = Blueprint("chat", __name__)

    @chat.post("/apps/chat")
    async def post_chat() -> Any:
        try:
            body = jsonin.loads(await request.get_data())
            session_id, user = parse_chat_request(body)
        except jsonin.JSONInputError as error:
            raise BadRequest(str(error)) from None
        named = update_ids(body)
        if view_contexts is not None and (contexts := await view_contexts(session_id, named)):
            user = attrs.evolve(user, model_context=(*contexts, *user.model_context))
        events_in, events = trio.open_memory_channel[Event](math.inf)
        # Closed by the front door once the request is over, sent or not: a client that leaves
        # before the first send leaves `sse_stream` unbegun, and its `async with` never runs;
        # closed, the session actor's events fail at once instead of piling up for nobody.
        close_with_request(request.scope, events)
        await chats.send(Turn(session_id, user, events_in))
        response = Response(
            sse_stream(session_id, events),
            mimetype="text/event-stream",
            headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
        )
        # A turn with a model may take minutes, longer than Quart's default response timeout.
        response.timeout = None
        return response

    @chat.get("/apps/chat/<session_id>")
    async def get_chat(session_id: str) -> Any:
        session_id_checked(session_id)
        before, limit = page_query(request.args)
        try:
            page: SessionPage = await ask(
                chats,
                lambda r: GetSessionPage(session_id, before, limit, r),
                CHAT_ASK_TIMEOUT_S,
            )
        except (StoreError, AskTimeout) as error:
            raise Unavailable(f"the session cannot be read: {error}") from None
        if not page.turns:
            raise NotFound(f"there is no saved session '{session_id}'")
        body, previous = page_json(page, limit)
        # The same, as a link relative to this URL (RFC 8288), for clients that follow links.
        headers = {"Link": f'<?before={previous}&limit={limit}>; rel="prev"'} if previous else {}
        return body, 200, headers

    @chat.post("/apps/chat/<session_id>/cancel")
    async def cancel_turn(session_id: str) -> Any:
        """Cut short the session's running turn: `{"cancelled": false}` when none was running."""
        session_id_checked(session_id)
        try:
            cancelled: bool = await ask(
                chats, lambda r: CancelTurn(session_id, r), CHAT_ASK_TIMEOUT_S
            )
        except (AskTimeout, StoreError) as error:
            raise Unavailable(f"the chat could not answer: {error}") from None
        return {"cancelled": cancelled}

    return chat


SESSION_ID_RULE = (
    "'sessionId' must be 1 to 128 characters: letters, digits and '_.:-', starting with a"
    " letter or digit"
)


def session_id_checked(session_id: str) -> str:
    """`session_id` if it is one a chat session may have; else `BadRequest` with the rule."""
    if not SESSION_ID.fullmatch(session_id):
        raise BadRequest(SESSION_ID_RULE)
    return session_id


def page_query(args: Mapping[str, str]) -> tuple[int | None, int]:
    """`?before=<turn>&limit=<turns>` of `GET /apps/chat/<id>`: the turn the page ends
    before (None: the latest turns) and how many turns at most; `BadRequest` says what is
    wrong."""
    before = args.get("before")
    limit = args.get("limit")
    if before is not None and not (_COUNT.fullmatch(before) and int(before) >= 1):
        raise BadRequest(
            f"'before' must be a turn number (1 or more), as the answer's 'previous' gives it,"
            f" got {before!r}"
        )
    if limit is not None and not (_COUNT.fullmatch(limit) and 1 <= int(limit) <= PAGE_TURNS_MAX):
        raise BadRequest(
            f"'limit' must be a number of turns from 1 to {PAGE_TURNS_MAX}, got {limit!r}"
        )
    return (int(before) if before else None), (int(limit) if limit else PAGE_TURNS)


def page_json(page: SessionPage, limit: int) -> tuple[dict[str, Any], int | None]:
    """The answer to `GET /apps/chat/<id>`, and the `before` of the page before it (None when
    this page starts at the first turn)."""
    previous = page.first_turn if page.first_turn > 1 else None
    return {
        "sessionId": page.id,
        "turns": page.turns,
        "firstTurn": page.first_turn,
        "lastTurn": page.last_turn,
        "messages": list(page.messages),
        # How to ask for the turns before these: the same URL with these query parameters.
        "previous": {"before": previous, "limit": limit} if previous else None,
    }, previous


def parse_chat_request(body: Any) -> tuple[str, UserTurn]:
    """The session id (a new one if none is given) and the turn, or `BadRequest`."""
    if not isinstance(body, Mapping):
        raise BadRequest(
            'the body must be a JSON object: {"message": "...", "sessionId"?: "...",'
            ' "appEvents"?: [...], "mentions"?: [<resource link>, ...], "modelContext"?:'
            ' [<update id>, ...], "attachments"?: [{"app", "content"}, ...]}'
        )
    message = body.get("message", "")
    if not isinstance(message, str):
        raise BadRequest("'message' must be a string")
    if len(message) > MESSAGE_MAX:
        raise BadRequest(f"'message' is longer than {MESSAGE_MAX} characters")
    session_id = body.get("sessionId")
    if session_id is None or session_id == "":
        session_id = f"apps-{uuid.uuid4()}"
    elif not isinstance(session_id, str) or not SESSION_ID.fullmatch(session_id):
        raise BadRequest(SESSION_ID_RULE)
    app_events = _app_events(body.get("appEvents"))
    try:
        mentioned = mentions(body.get("mentions"))
    except BadMention as error:
        raise BadRequest(str(error)) from None
    attached = attachments(body)
    if not message.strip() and not (app_events or mentioned or attached or update_ids(body)):
        raise BadRequest(
            "'message' is missing or empty, and there are no 'appEvents', 'mentions',"
            " 'modelContext' or 'attachments'"
        )
    return session_id, UserTurn(message, app_events, mentioned, attached)


def _app_events(raw: Any) -> tuple[Mapping[str, Any], ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise BadRequest("'appEvents' must be a list of {tool, args, resultText} objects")
    for index, event in enumerate(raw):
        if not isinstance(event, Mapping) or not isinstance(event.get("tool"), str):
            raise BadRequest(f"appEvents[{index}] must be an object with a 'tool' string")
        if not isinstance(event.get("args", {}), Mapping | None):
            raise BadRequest(f"appEvents[{index}].args must be an object")
        if not isinstance(event.get("resultText", ""), str | None):
            raise BadRequest(f"appEvents[{index}].resultText must be a string")
    return tuple(raw)


async def sse_stream(
    session_id: str, events: trio.MemoryReceiveChannel[Event]
) -> AsyncIterator[bytes]:
    """`session` first, the turn's events as they happen (with a keep-alive comment when
    nothing happened for a while), `done` last once the turn is over and saved."""
    frames = _Frames()
    yield frames.frame("session", {"sessionId": session_id})
    async with events, contextlib.aclosing(with_keep_alives(events)) as items:
        async for event in items:
            yield KEEP_ALIVE if event is None else frames.frame(*event_data(event))
    yield frames.frame("done", {})


def event_data(event: Event) -> tuple[str, dict[str, Any]]:
    match event:
        case TextPiece(text):
            return "text", {"text": text}
        case ToolInputPartial(call_id, name, arguments):
            return "tool-partial", {"id": call_id, "name": name, "input": arguments}
        case ToolStarted(call_id, name, arguments):
            return "tool", {"id": call_id, "name": name, "input": arguments}
        case ToolFinished(call_id, text, is_error, view):
            data = {"id": call_id, "text": text, "isError": is_error}
            return "result", {**data, "view": view} if view is not None else data
        case TurnFailed(message):
            return "error", {"message": message}
        case TurnWaiting(replica):
            return "waiting", {"replica": replica}
        case Elicitation(request_id, app, tool, message, schema, url, rich):
            asked = {"requestId": request_id, "app": app, "tool": tool, "message": message}
            if url:
                return "elicitation", {**asked, "url": url}
            rich_form = {"richForm": True} if rich else {}
            return "elicitation", {**asked, "requestedSchema": schema, **rich_form}
        case Sampled(app, tool, max_tokens, text):
            return "sampling", {"app": app, "tool": tool, "maxTokens": max_tokens, "text": text}
    raise TypeError(f"not a chat event: {event!r}")


class _Frames:
    def __init__(self) -> None:
        self._next_id = 0

    def frame(self, kind: str, data: dict[str, Any]) -> bytes:
        self._next_id += 1
        # ASCII JSON: text from a model or an app may hold a lone surrogate, which has no
        # UTF-8 form; as an escape it reaches the browser's JSON.parse intact.
        payload = jsonout.dumps({"type": kind, **data})
        return f"event: {kind}\nid: {self._next_id}\ndata: {payload}\n\n".encode()
