"""The client of a view's tool call, as the app may reach it while the call runs: the app's
questions go to the page that made the call (an `elicitation` event on the call's stream,
answered at `POST /apps/views/<viewId>/answers`), and its sampling requests to the agent's
model under the chat's rule."""

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING, Any

import trio

from actors.apps.upstream import ServerRequestRefused
from actors.catalog import Wire
from actors.messages import SampleForView
from actors.runtime import ask
from web.views import Lease

if TYPE_CHECKING:
    from web.viewdoor import ViewDoor

SAMPLING_TIMEOUT_S = 600.0  # a local model may be slow; the app's own timeout bounds it too


class ViewCaller:
    """The `Caller` of a view's tool call: the app's questions go to the page that made the
    call. An elicitation is an `elicitation` event on the call's stream and waits in the door's
    `Questions` for `POST /apps/views/<viewId>/answers`; a sampling request is answered by the
    agent's model under the same rule as in a chat turn (the app allowed, a model to ask)."""

    on_progress = None

    def __init__(
        self,
        door: ViewDoor,
        lease: Lease,
        events: trio.MemorySendChannel[Any] | None = None,
        tool: Any = "",
        sampling: bool = False,
    ) -> None:
        self.owner = f"view-{lease.id}"
        self._door = door
        self._lease = lease
        self._events = events
        self.tool = str(tool)
        self.sampling = sampling
        # The person has as long to answer as an approval gives them; the app's own request
        # timeout still bounds the call.
        self.deadline = trio.current_time() + door.table.config.approval_timeout_s

    async def ask(self, method: str, params: Wire) -> Wire:
        if method == "sampling/createMessage":
            if self._door.chats is None:
                raise ServerRequestRefused("this server has no agent to answer sampling")
            app_id, allowed = self._lease.app_id, self.sampling
            return await ask(
                self._door.chats,
                lambda r: SampleForView(app_id, allowed, dict(params), r),
                SAMPLING_TIMEOUT_S,
            )
        if method != "elicitation/create" or self._events is None:
            raise ServerRequestRefused(f"an app view cannot answer {method}")
        url = params.get("url") if params.get("mode") == "url" else None
        schema = None if url is not None else (params.get("requestedSchema") or {})
        request_id = "q-" + secrets.token_urlsafe(12)
        question: Wire = {
            "requestId": request_id,
            "app": self._lease.app_id,
            "tool": self.tool,
            "message": str(params.get("message", "")),
        }
        question.update({"url": url} if url is not None else {"requestedSchema": schema})
        self._door.asked[request_id] = self._lease.id
        try:
            await self._events.send(("elicitation", question))
            return await self._door.questions.ask(request_id, schema, self.deadline)
        finally:
            self._door.asked.pop(request_id, None)
