"""`GET /apps/files?path=<folder>`: one folder of the workspace, folders first, hidden names
left out, each file with the app views that open it (its viewers); `GET /apps/files/events`,
the changes on disk as they happen, for a live Files pane.

A viewer is a UI tool of a Running app with a file entry point for the file's extension
(`actors/files/viewers.py`), named by its public name: what `POST /apps/views` takes to open
the file in it. The route owns nothing: the listing comes from the workspace actor, the tools
from the registry and the apps' catalogs, asked afresh each time (an app started or stopped
a moment ago is seen at once).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import trio
from quart import Blueprint, Response, request

from actors.files.messages import ListFolder, WatchWorkspace, WorkspaceChanged, WorkspaceMessage
from actors.files.viewers import FileViewer, file_viewers, viewers_of
from actors.files.workspace import Entry, Listing
from actors.messages import GetToolReport, RegistryMessage
from actors.runtime import ASK_TIMEOUT_S, Mailbox, ask
from supervisor.model import jsonout
from supervisor.model.errors import NotFound
from web.control import current_catalogs
from web.intake import close_with_request
from web.keepalives import KEEP_ALIVE, with_keep_alives

# Batches of changes waiting for one reader of `/apps/files/events` before it counts as too slow
# (and is dropped: its page reconnects and lists afresh).
EVENTS_BUFFER = 64
NO_WORKSPACE = 'no workspace is set: add a [workspace] table with root = "<folder>" to config.toml'


def files_blueprint(
    files: Mailbox[WorkspaceMessage] | None, registry: Mailbox[RegistryMessage]
) -> Blueprint:
    blueprint = Blueprint("files", __name__)

    @blueprint.get("/apps/files")
    async def listing() -> Any:
        if files is None:
            raise NotFound(NO_WORKSPACE, code="no_workspace")
        path = request.args.get("path", "")
        folder: Listing = await ask(files, lambda r: ListFolder(path, r), ASK_TIMEOUT_S)
        viewers = await current_viewers(registry)
        return {"path": folder.path, "entries": [entry_json(e, viewers) for e in folder.entries]}

    @blueprint.get("/apps/files/events")
    async def events() -> Any:
        """Server-sent events for a live Files pane: `ready` once changes are watched, then
        `changed {paths}` (relative to the root) for each batch of changes on disk."""
        if files is None:
            raise NotFound(NO_WORKSPACE, code="no_workspace")
        changes_in, changes = trio.open_memory_channel[WorkspaceChanged](EVENTS_BUFFER)
        # Closed when the request is over, sent or not: the actor then forgets this reader.
        close_with_request(request.scope, changes)
        await ask(files, lambda r: WatchWorkspace(changes_in, r), ASK_TIMEOUT_S)
        response = Response(
            change_stream(changes),
            mimetype="text/event-stream",
            headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
        )
        response.timeout = None  # a pane stays open for as long as the page does
        return response

    return blueprint


async def change_stream(
    changes: trio.MemoryReceiveChannel[WorkspaceChanged],
) -> AsyncIterator[bytes]:
    yield frame("ready", {})
    async with changes, contextlib.aclosing(with_keep_alives(changes)) as items:
        async for change in items:
            yield KEEP_ALIVE if change is None else frame("changed", {"paths": list(change.paths)})


def frame(kind: str, data: dict[str, Any]) -> bytes:
    return f"event: {kind}\ndata: {jsonout.dumps({'type': kind, **data})}\n\n".encode()


async def current_viewers(registry: Mailbox[RegistryMessage]) -> tuple[FileViewer, ...]:
    """The file viewers of the Running apps: the tool table's rows (public names) joined with
    the tools as each app lists them (their `_meta`)."""
    rows = await ask(registry, GetToolReport, ASK_TIMEOUT_S)
    app_ids = list(dict.fromkeys(row.app_id for row in rows))
    catalogs = await current_catalogs(registry, app_ids)
    listed = {
        (app_id, tool.get("name")): tool
        for app_id, catalog in catalogs.items()
        for tool in catalog.tools
    }
    return file_viewers(
        (row.app_id, row.public_name, tool)
        for row in rows
        if (tool := listed.get((row.app_id, row.name))) is not None
    )


def entry_json(entry: Entry, viewers: tuple[FileViewer, ...]) -> dict[str, Any]:
    body: dict[str, Any] = {"name": entry.name, "path": entry.path, "type": entry.kind}
    if entry.kind == "file":
        body["size"] = entry.size
        body["viewers"] = [v.json() for v in viewers_of(viewers, entry.name)]
    body["modified"] = entry.modified
    return body
