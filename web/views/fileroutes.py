"""The view routes of file views (actors/views/fileviews.py):

    POST /apps/views  {"file": "<path from the root>", "tool"?: "<public name>", "sessionId"?}
                      open a view of the file in a viewer (the first that accepts it, unless
                      `tool` names one); answered as any view's open, its `toolCall` carrying
                      the viewer tool's arguments, `{"file": {"name", "resourceUri"}}`
    GET  /apps/views/<viewId>/events
                      what the server tells the view as it happens, as server-sent events:
                      `ready` once listening, then `message` with a JSON-RPC notification
                      (`notifications/resources/updated {uri}` of a subscribed file)

A refused open (no such viewer, a file it does not open, a path outside the workspace, a file
too large) says why and leaves no view behind: the app is never called.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import trio
from quart import Blueprint, Response, request

from actors.catalog import Wire
from actors.files.viewers import FileViewer
from actors.messages import RegistryMessage
from actors.runtime import ASK_TIMEOUT_S, Mailbox, ask
from actors.views.messages import ListenToView, OpenedView, OpenFileView, ViewMessage
from supervisor.model import jsonout
from supervisor.model.errors import BadRequest, NotFound
from web.chat.stream import SESSION_ID
from web.files.routes import NO_WORKSPACE, current_viewers
from web.intake import close_with_request
from web.keepalives import KEEP_ALIVE, with_keep_alives

# Notifications waiting for one listening page (more are dropped: each says only "read again").
NOTICES_BUFFER = 16
FILE_BODY = '{"file": "<path from the workspace root>", "tool"?: "<public tool name>"}'


def _no_viewer(message: str) -> NotFound:
    return NotFound(message, code="no_viewer")


def choose_viewer(viewers: tuple[FileViewer, ...], path: str, tool: str | None) -> FileViewer:
    """The viewer `tool` names, if it opens the file; else the first viewer that does."""
    name = path.rstrip("/").rsplit("/", 1)[-1]
    if tool is not None:
        named = next((v for v in viewers if v.tool == tool), None)
        if named is None:
            raise _no_viewer(
                f"there is no file viewer '{tool}': a viewer is a UI tool of a Running app with"
                ' a file entry point (_meta["openai/ui"].entrypoints)'
            )
        if not named.accepts(name):
            opens = ", ".join(named.extensions)
            raise _no_viewer(f"'{tool}' does not open '{name}': it opens {opens} files")
        return named
    accepting = [v for v in viewers if v.accepts(name)]
    if not accepting:
        raise _no_viewer(f"no Running app has a viewer for '{name}'")
    return accepting[0]


async def open_file_view(
    views: Mailbox[ViewMessage],
    registry: Mailbox[RegistryMessage],
    workspace: bool,
    body: Mapping[str, Any],
    ui_settings: Callable[[str], Mapping[str, Any]] | None = None,
) -> Any:
    """`POST /apps/views` with a `file`: the viewer chosen, the view opened by the hub, and
    the answer as a view's open is answered."""
    path, tool, session = body.get("file"), body.get("tool"), body.get("sessionId")
    if (
        not isinstance(path, str)
        or not path.strip()
        or (tool is not None and not isinstance(tool, str))
    ):
        raise BadRequest(f"the body must be {FILE_BODY}")
    if not workspace:
        raise NotFound(NO_WORKSPACE, code="no_workspace")
    viewer = choose_viewer(await current_viewers(registry), path, tool)
    if session is not None and not (isinstance(session, str) and SESSION_ID.fullmatch(session)):
        raise BadRequest("'sessionId' is not a chat session id")
    # A FileRefused (outside the workspace, not a file, too large) reads as the one table says.
    opened: OpenedView = await ask(
        views,
        lambda r: OpenFileView(viewer.app_id, viewer.name, viewer.tool, path, session or None, r),
        ASK_TIMEOUT_S,
    )
    return {
        "viewId": opened.view_id,
        "appId": opened.app_id,
        "sessionId": opened.chat_session,
        "toolCall": dict(opened.tool_call) if opened.tool_call else None,
        "leaseS": opened.lease_s,
        "approval": opened.approval,
        "ui": ui_settings(opened.app_id) if ui_settings else {},
    }, 201


def file_views_blueprint(views: Mailbox[ViewMessage]) -> Blueprint:
    blueprint = Blueprint("file_views", __name__)

    @blueprint.get("/apps/views/<view_id>/events")
    async def view_events(view_id: str) -> Any:
        notices_in, notices = trio.open_memory_channel[Wire](NOTICES_BUFFER)
        # Closed when the request is over, sent or not: the hub then forgets this page.
        close_with_request(request.scope, notices)
        await ask(views, lambda r: ListenToView(view_id, notices_in, r), ASK_TIMEOUT_S)
        response = Response(
            notice_stream(notices),
            mimetype="text/event-stream",
            headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
        )
        response.timeout = None  # as long as the view is open
        return response

    return blueprint


async def notice_stream(notices: trio.MemoryReceiveChannel[Wire]) -> AsyncIterator[bytes]:
    yield b"event: ready\ndata: {}\n\n"
    async with notices, contextlib.aclosing(with_keep_alives(notices)) as items:
        async for notice in items:
            yield (
                KEEP_ALIVE
                if notice is None
                else f"event: message\ndata: {jsonout.dumps(notice)}\n\n".encode()
            )
