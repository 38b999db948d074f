"""`GET /admin/events`: the registry's facts as a WebSocket of JSON messages, so that the control
page shows state changes, restarts and catalog changes as they happen instead of polling.

Each message is an object with a `type` (`app`, `catalog`, `toolTable`, `reloaded`) and `seq`,
counting from 1 on each connection. A new connection first gets how things stand now: an `app`
message per app, a `catalog` message per catalog, then one `toolTable` message, which ends that
picture (the control page reads the rest once it has it). The route is reached after the front
door's checks (Host, Origin, token), as for the rest of `/admin`.

A reader that falls behind is dropped, never waited for: the registry hands facts to each
watcher without blocking, and a watcher whose buffer is full, or a send that the client does
not take within `SEND_TIMEOUT_S`, ends that connection (close code 1013, "try again later"):
the page reconnects and starts again from a fresh picture. Silently losing facts instead would
leave it showing a state that is not true.
"""

from __future__ import annotations

import logging
from typing import Any

import trio

from actors.messages import (
    CatalogChanged,
    RegistryMessage,
    Reloaded,
    StateChanged,
    ToolTableChanged,
    Watch,
)
from actors.runtime import Mailbox
from supervisor.model import jsonout
from web.admin.api import diff_json, status_json
from web.uiview import catalog_has_ui

logger = logging.getLogger("mcpapps.web")

BUFFER = 256  # facts waiting for one connection before it counts as too slow
SEND_TIMEOUT_S = 10.0
TRY_AGAIN_LATER = 1013


class Inbox:
    """The watcher end the registry sends facts to. When it is full it says so and breaks,
    so that the registry forgets it at once (rather than skipping facts for it)."""

    def __init__(self, size: int = BUFFER) -> None:
        self._send, self.facts = trio.open_memory_channel[Any](size)
        self.overflowed = trio.Event()

    def send_nowait(self, fact: Any) -> None:
        try:
            self._send.send_nowait(fact)
        except trio.WouldBlock:
            self.overflowed.set()
            self._send.close()
            raise trio.BrokenResourceError("the events reader is too slow") from None

    def close(self) -> None:
        self._send.close()


def event_message(fact: Any) -> dict[str, Any] | None:
    """A registry fact as the page reads it; None for facts it does not show."""
    match fact:
        case StateChanged(status):
            return {"type": "app", "app": status_json(status)}
        case CatalogChanged(app_id, catalog):
            return {
                "type": "catalog",
                "appId": app_id,
                "counts": catalog.counts(),
                "hasUi": catalog_has_ui(catalog),
            }
        case ToolTableChanged(table):
            return {
                "type": "toolTable",
                "tools": [
                    {
                        "publicName": t.public_name,
                        "appId": t.app_id,
                        "name": t.name,
                        "resourceUri": t.ui_resource_uri,
                    }
                    for t in table.tools
                ],
                "warnings": {app: list(w) for app, w in table.warnings.items()},
            }
        case Reloaded(diff):
            # Apps may have come or gone: the page reads the list again.
            return {"type": "reloaded", "reload": diff_json(diff)}
    return None


async def serve_events(
    registry: Mailbox[RegistryMessage], scope: Any, receive: Any, send: Any
) -> None:
    """One `/admin/events` connection, as a plain ASGI WebSocket."""
    if (await receive())["type"] != "websocket.connect":
        return
    await send({"type": "websocket.accept"})
    inbox = Inbox()
    registry.tell(Watch(inbox))  # type: ignore[arg-type]  # it sends like a memory channel
    too_slow = False
    try:
        async with trio.open_nursery() as nursery:

            async def drop_when_overflowed() -> None:
                nonlocal too_slow
                await inbox.overflowed.wait()
                too_slow = True
                nursery.cancel_scope.cancel()

            async def until_disconnect() -> None:
                while (await receive())["type"] != "websocket.disconnect":
                    pass  # the page sends nothing; whatever it sends is ignored
                nursery.cancel_scope.cancel()

            async def write() -> None:
                nonlocal too_slow
                seq = 0
                async for fact in inbox.facts:
                    message = event_message(fact)
                    if message is None:
                        continue
                    seq += 1
                    text = jsonout.dumps({**message, "seq": seq})
                    with trio.move_on_after(SEND_TIMEOUT_S) as waited:
                        await send({"type": "websocket.send", "text": text})
                    if waited.cancelled_caught:
                        too_slow = True
                        break
                nursery.cancel_scope.cancel()

            nursery.start_soon(drop_when_overflowed)
            nursery.start_soon(until_disconnect)
            nursery.start_soon(write)
    finally:
        inbox.close()
    if too_slow:
        logger.warning("admin events: a reader fell behind and was dropped")
        with trio.move_on_after(1.0):
            await send({"type": "websocket.close", "code": TRY_AGAIN_LATER, "reason": "too slow"})
