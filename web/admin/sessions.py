"""The admin API's chat sessions: `GET /admin/sessions` lists the saved ones, `DELETE
/admin/sessions/<id>` deletes one (`mcpapps sessions`). Each request is a message to the chat
hub, which owns the sessions; access is checked before a request gets here (`web.asgi`)."""

from __future__ import annotations

from typing import Any

from quart import Blueprint

from actors.chat.chatstore import StoreError
from actors.chat.hub import SessionBusy
from actors.messages import DeleteSession, HubMessage, ListSessions, SessionListing
from actors.runtime import ASK_TIMEOUT_S, AskTimeout, Mailbox, Overloaded, ask
from web.chat.stream import SESSION_ID, SESSION_ID_RULE
from web.errors import json_error


def sessions_blueprint(chats: Mailbox[HubMessage]) -> Blueprint:
    sessions = Blueprint("sessions", __name__)

    @sessions.get("/admin/sessions")
    async def list_sessions() -> Any:
        listing: SessionListing = await ask(chats, ListSessions, ASK_TIMEOUT_S)
        return {"sessions": listing_json(listing)}

    @sessions.delete("/admin/sessions/<session_id>")
    async def delete_session(session_id: str) -> Any:
        if not SESSION_ID.fullmatch(session_id):
            return json_error(400, "bad_request", SESSION_ID_RULE)
        try:
            deleted: bool = await ask(chats, lambda r: DeleteSession(session_id, r), ASK_TIMEOUT_S)
        except SessionBusy as busy:
            return json_error(409, "session_busy", str(busy))
        if not deleted:
            return json_error(404, "not_found", f"there is no saved session '{session_id}'")
        return {"deleted": session_id}

    @sessions.errorhandler(StoreError)
    async def unreadable(error: StoreError) -> Any:
        return json_error(503, "unavailable", f"the sessions cannot be read: {error}")

    @sessions.errorhandler(AskTimeout)
    @sessions.errorhandler(Overloaded)
    async def busy(error: Exception) -> Any:
        return json_error(503, "busy", f"the supervisor could not answer: {error}")

    return sessions


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
