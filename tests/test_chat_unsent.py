"""A chat stream that never went out closes its event channel. `POST /apps/chat` hands the
session actor the sending end of a channel and answers with a stream that reads the other; a
client that leaves between the route's return and the first send leaves the stream's generator
unbegun, so nothing closed the receiving end and the turn's events piled up in it for nobody.

The moment is made exactly, through the front door's ASGI interface as Hypercorn calls it: the
client's disconnect comes as the answer's head is sent, so Quart-Trio cancels the request before
it has taken up the body. The test takes the session actor's place at its mailbox, to hold the
channel the route handed over."""

from __future__ import annotations

import json
from typing import Any

import pytest
import trio

from actors.chat.turns import TextPiece
from actors.messages import HubMessage, Turn
from actors.metrics import Metrics
from actors.runtime import Mailbox
from tests.support.running import GUARD_S
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


async def leave_before_the_first_send(front_door: FrontDoor) -> str:
    """POST a chat turn; the client goes away as the answer's head is sent. Returns the head's
    content type (the route did answer with a stream)."""
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/apps/chat",
        "raw_path": b"/apps/chat",
        "query_string": b"",
        "scheme": "http",
        "http_version": "1.1",
        "root_path": "",
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 1),
        "headers": [(b"host", b"127.0.0.1:1"), (b"content-type", b"application/json")],
    }
    body = json.dumps({"message": "hello", "sessionId": "unsent"}).encode()
    incoming = [{"type": "http.request", "body": body, "more_body": False}]
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


async def test_a_chat_stream_never_sent_closes_its_event_channel() -> None:
    registry: Mailbox[Any] = Mailbox()
    chats: Mailbox[HubMessage] = Mailbox()
    routes = create_app(registry, POLICY, None, chats=chats, metrics=Metrics())
    front_door = FrontDoor(POLICY, registry, routes, {}, AggregateEndpoint(registry))
    with trio.fail_after(GUARD_S):
        answered = await leave_before_the_first_send(front_door)
    assert answered.startswith("text/event-stream")
    [turn] = chats.take_waiting()
    assert isinstance(turn, Turn)
    # The session actor's next event finds nobody to read it.
    with pytest.raises(trio.BrokenResourceError):
        turn.events.send_nowait(TextPiece("anyone there?"))
