"""A view's answer that never went out gives back what it held. A view route that answers with
an event stream (a call held for the person's approval, a call whose app asks the page) hands
its view's slot and its call over to the stream; a client that leaves between the route's
return and the first send used to leave the stream unbegun, so its slot and its call were held
for ever (a lease with a request in flight never expires).

The moment is made exactly, through the front door's ASGI interface as Hypercorn calls it, with
a real app under a real registry: the client's disconnect comes as the answer's head is sent,
so Quart-Trio cancels the request before it has taken up the body."""

from __future__ import annotations

import json
from typing import Any

import pytest
import trio

from actors.metrics import Metrics
from actors.runtime import Mailbox, ask
from actors.views.hub import ViewHub
from actors.views.messages import OpenView
from supervisor.model.lifecycle import AppState
from tests.support import forkserver
from tests.support.frontdoor import HANDSHAKE_APP
from tests.support.helpers import Project
from tests.support.running import GUARD_S, running, wait_for
from web.asgi import FrontDoor
from web.mcpdoor.aggregate import AggregateEndpoint
from web.routes import create_app
from web.security import AccessPolicy

POLICY = AccessPolicy(
    require_auth=False,
    token=None,
    hosts=frozenset({"127.0.0.1"}),
    origins=frozenset(),
    sandbox_origin=None,
)
# What the view calls, and the app's approval policy: held for the person, or run at once and
# asking the page (the handshake-era app's elicitation comes back as the first event).
CASES = {
    "held for approval": ("test_simple_text", {}, "always"),
    "asking the page": ("test_elicitation", {"message": "who are you?"}, "never"),
}


async def leave_before_the_first_send(front_door: FrontDoor, view_id: str, call: Any) -> str:
    """POST the view's call; the client goes away as the answer's head is sent. Returns the
    head's content type (the route did answer with a stream)."""
    message = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": call}
    scope = {
        "type": "http",
        "method": "POST",
        "path": f"/apps/views/{view_id}/mcp",
        "raw_path": f"/apps/views/{view_id}/mcp".encode(),
        "query_string": b"",
        "scheme": "http",
        "http_version": "1.1",
        "root_path": "",
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 1),
        "headers": [(b"host", b"127.0.0.1:1"), (b"content-type", b"application/json")],
    }
    incoming = [{"type": "http.request", "body": json.dumps(message).encode(), "more_body": False}]
    gone = trio.Event()
    heads: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        if incoming:
            return incoming.pop()
        await gone.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        assert message["type"] == "http.response.start", message  # nothing after: it left
        heads.append(message)
        gone.set()
        await trio.sleep_forever()  # the write of a client that has gone; cancelled

    await front_door(scope, receive, send)
    [head] = heads
    return dict(head["headers"])[b"content-type"].decode()


@pytest.mark.parametrize("case", CASES)
async def test_a_stream_never_sent_gives_back_its_view_s_slot_and_call(
    project: Project, case: str
) -> None:
    tool, arguments, approval = CASES[case]
    project.manifest(
        "apps/hs", {"id": "hs", "command": forkserver.python(), "arguments": [str(HANDSHAKE_APP)]}
    )
    async with running(project) as registry, trio.open_nursery() as nursery:
        await wait_for(registry, "hs", AppState.RUNNING)
        hub = ViewHub(registry.mailbox, approvals={"hs": approval})
        await nursery.start(hub.run)
        routes = create_app(
            registry.mailbox,
            POLICY,
            None,
            chats=Mailbox(1),
            metrics=Metrics(),
            views=hub.mailbox,
        )
        aggregate = AggregateEndpoint(registry.mailbox)
        front_door = FrontDoor(POLICY, registry.mailbox, routes, {}, aggregate)
        state = hub.state
        with trio.fail_after(GUARD_S):
            opened = await ask(hub.mailbox, lambda r: OpenView("hs", None, None, False, r))
            answered = await leave_before_the_first_send(
                front_door, opened.view_id, {"name": tool, "arguments": arguments}
            )
            assert answered.startswith("text/event-stream")
            # The call, cancelled, ends; the app's question is given up in a task of its own
            # (the app's request to us), which may end a moment after the call's scope.
            while state.running or state.questions.asked or state.held:
                await trio.sleep(0.01)
        lease = state.table.get(opened.view_id)
        assert (lease.in_flight, lease.held) == (0, 0)
        assert len(state.held) == 0
        assert state.questions.asked == {}
        nursery.cancel_scope.cancel()
