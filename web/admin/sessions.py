"""The admin API's chat sessions: `GET /admin/sessions` lists the saved ones, `DELETE
/admin/sessions/<id>` deletes one (`mcpapps sessions`). Each request is a message to the chat
hub, which owns the sessions; access is checked before a request gets here (`web.asgi`)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from quart import Blueprint

from actors.chat.chatstore import StoreError
from actors.chat.hub import SessionBusy
from actors.messages import DeleteSession, HubMessage, ListSessions, SessionListing
from actors.runtime import ASK_TIMEOUT_S, Mailbox, ask
from supervisor.model.errors import Conflict, NotFound, Unavailable
from web.chat.stream import session_id_checked


def sessions_blueprint(chats: Mailbox[HubMessage]) -> Blueprint:
    sessions = Blueprint("sessions", __name__)

    @sessions.get("/admin/sessions")
    async def list_sessions() -> Any:
        with _readable():
            listing: SessionListing = await ask(chats, ListSessions, ASK_TIMEOUT_S)
        return {"sessions": listing_json(listing)}

    @sessions.delete("/admin/sessions/<session_id>")
    async def delete_session(session_id: str) -> Any:
        session_id_checked(session_id)
        try:
            with _readable():
                deleted: bool = await ask(
                    chats, lambda r: DeleteSession(session_id, r), ASK_TIMEOUT_S
                )
        except SessionBusy as busy:
            raise Conflict(str(busy), code="session_busy") from None
        if not deleted:
            raise NotFound(f"there is no saved session '{session_id}'")
        return {"deleted": session_id}

    return sessions


@contextlib.contextmanager
def _readable() -> Iterator[None]:
    """A store that cannot be used, said as this route's refusal."""
    try:
        yield
    except StoreError as error:
        raise Unavailable(f"the sessions cannot be read: {error}") from None


def listing_json(listing: SessionListing) -> list[dict[str, Any]]:
    """Each saved session, the one with the latest turn first; times are Unix seconds."""
    return [
        {
            "id": s.id,
            "turns": s.turns,
            "createdAt": s.created_at,
            "updatedAt": s.updated_at,
            "running": s.id in listing.running,
        }
        for s in listing.sessions
    ]
