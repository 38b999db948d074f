"""`POST /apps/onboarding/<appId>`: the person asked to set an app up ("Set up" on its card):
a chat turn whose message carries the app's setup skill (its manifest's `onboardingSkill`),
answered as `POST /apps/chat` answers, as server-sent events. Nothing runs a skill unasked:
this route is the only way one reaches a chat.

The body may name the chat (`{"sessionId": ...}`); without one, a new chat is started.
"""

from __future__ import annotations

import math
import os
import uuid
from collections.abc import Mapping
from typing import Any

import trio
from quart import Blueprint, Response, request

from actors.chat.turns import Event, UserTurn
from actors.messages import AppStatus, HubMessage, Lookup, RegistryMessage, Turn
from actors.runtime import ASK_TIMEOUT_S, Mailbox, ask
from supervisor.model import jsonin
from supervisor.model.errors import BadRequest, Conflict, NotFound
from supervisor.model.manifest import SKILL_MAX_BYTES
from web.chat.stream import SESSION_ID, SESSION_ID_RULE, sse_stream
from web.intake import close_with_request


class SkillUnusable(Conflict):
    """The app's setup skill cannot be read now (gone, too large, not text)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, code="skill_unusable")


def onboarding_blueprint(
    registry: Mailbox[RegistryMessage], chats: Mailbox[HubMessage]
) -> Blueprint:
    routes = Blueprint("onboarding", __name__)

    @routes.post("/apps/onboarding/<app_id>")
    async def set_up(app_id: str) -> Any:
        raw = await request.get_data()
        try:
            body = jsonin.loads(raw) if raw.strip() else {}
        except jsonin.JSONInputError as error:
            raise BadRequest(str(error)) from None
        if not isinstance(body, Mapping) or set(body) - {"sessionId"}:
            raise BadRequest('the body must be {"sessionId"?: "..."}')
        session_id = body.get("sessionId") or f"apps-{uuid.uuid4()}"
        if not isinstance(session_id, str) or not SESSION_ID.fullmatch(session_id):
            raise BadRequest(SESSION_ID_RULE)
        status: AppStatus = await ask(registry, lambda r: Lookup(app_id, r), ASK_TIMEOUT_S)
        if status.onboarding_skill is None:
            raise NotFound(
                f"app '{app_id}' has no setup skill (its manifest names no 'onboardingSkill')",
                code="no_onboarding",
            )
        skill = await read_skill(app_id, status.onboarding_skill)
        events_in, events = trio.open_memory_channel[Event](math.inf)
        close_with_request(request.scope, events)
        await chats.send(Turn(session_id, UserTurn(setup_message(app_id, skill)), events_in))
        response = Response(
            sse_stream(session_id, events),
            mimetype="text/event-stream",
            headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
        )
        response.timeout = None
        return response

    return routes


def setup_message(app_id: str, skill: str) -> str:
    return (
        f"Set up the app '{app_id}': follow its setup skill below, asking me whatever it needs."
        f'\n\n<setup-skill app="{app_id}">\n{skill}\n</setup-skill>'
    )


async def read_skill(app_id: str, path: str) -> str:
    """The skill's text; `SkillUnusable` says why it cannot be read. A symlink is refused: the
    manifest's rules keep the path inside the app's folder, and a link could lead out of it."""
    where = f"app '{app_id}' names the setup skill {path}"
    skill = trio.Path(path)
    try:
        if await skill.is_symlink():
            raise SkillUnusable(f"{where}, which is a symbolic link: make it the file itself")
        if not await skill.is_file():
            raise SkillUnusable(f"{where}, but there is no such file")
        size = (await skill.stat()).st_size
        if size > SKILL_MAX_BYTES:
            raise SkillUnusable(f"{where}, which is {size} bytes: at most {SKILL_MAX_BYTES}")
        data = await skill.read_bytes()
    except OSError as error:
        raise SkillUnusable(
            f"{where}, which cannot be read: {os.strerror(error.errno or 0)}"
        ) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise SkillUnusable(f"{where}, which is not UTF-8 text") from None
