"""A POST of an MCP session that is closed while it is being served gets one clean answer, and
nothing escapes to Hypercorn (which would log it as "Error in ASGI Framework", with a traceback).

Seen once as a soak's load stopped: the SDK's handshake-era transport answers a notification 202
and then hands it to the session; closed in between (its client's DELETE, its idle expiry), the
hand-over fails, and the SDK sends a second answer, a 500, on a request already answered, which
Hypercorn refuses (`UnexpectedMessageError`).

The moment is made exactly, through the front door's ASGI interface as Hypercorn calls it: the
session's DELETE is served as the notification's 202 goes out, and `send` refuses anything after
an answer's last body, as Hypercorn's does."""

from __future__ import annotations

import json
from typing import Any

import pytest
import trio

from actors.metrics import Metrics
from actors.runtime import Mailbox
from supervisor.model.lifecycle import AppState
from tests.support.helpers import Project
from tests.support.running import GUARD_S, fixture_manifest, running, status, wait_for
from web.appstates import AppStates
from web.asgi import FrontDoor
from web.mcpdoor.aggregate import AggregateEndpoint
from web.mcpdoor.endpoints import AppEndpoint
from web.routes import create_app
from web.security import AccessPolicy

POLICY = AccessPolicy(
    require_auth=False,
    token=None,
    hosts=frozenset({"127.0.0.1"}),
    origins=frozenset(),
    sandbox_origin=None,
)
VERSION = "2025-11-25"  # a handshake-era session
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": VERSION,
        "capabilities": {},
        "clientInfo": {"name": "closing", "version": "0"},
    },
}


class ConnectionGone(Exception):
    """What Hypercorn raises for a message sent after the answer's last body."""


async def exchange(
    front_door: FrontDoor,
    path: str,
    method: str,
    message: Any,
    session: str | None = None,
    on_head: Any = None,
) -> list[dict[str, Any]]:
    """One request to `path`; the answer's ASGI messages. `on_head` runs as its head is sent."""
    headers = [
        (b"host", b"127.0.0.1:1"),
        (b"content-type", b"application/json"),
        (b"accept", b"application/json, text/event-stream"),
    ]
    if session is not None:
        headers += [
            (b"mcp-session-id", session.encode()),
            (b"mcp-protocol-version", VERSION.encode()),
        ]
    scope = {
        "type": "http",
        "method": method,
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "scheme": "http",
        "http_version": "1.1",
        "root_path": "",
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 1),
        "headers": headers,
    }
    body = json.dumps(message).encode() if message is not None else b""
    incoming = [{"type": "http.request", "body": body, "more_body": False}]
    answered = trio.Event()
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        if incoming:
            return incoming.pop()
        await answered.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        if answered.is_set():
            raise ConnectionGone(f"{message['type']} after the answer")
        sent.append(message)
        if message["type"] == "http.response.start" and on_head is not None:
            await on_head()
        if message["type"] == "http.response.body" and not message.get("more_body", False):
            answered.set()

    await front_door(scope, receive, send)
    return sent


@pytest.mark.parametrize("path", ["/mcp", "/apps/mcp/fx"])
async def test_a_notification_whose_session_closes_as_it_is_answered_gets_one_answer(
    project: Project, path: str
) -> None:
    project.manifest("apps/fx", fixture_manifest("fx"))
    async with running(project) as registry:
        await wait_for(registry, "fx", AppState.RUNNING)
        states = AppStates()
        states.record(await status(registry, "fx"))
        endpoint = AppEndpoint("fx", registry.mailbox)
        aggregate = AggregateEndpoint(registry.mailbox)
        routes = create_app(registry.mailbox, POLICY, None, chats=Mailbox(), metrics=Metrics())
        front_door = FrontDoor(
            POLICY, registry.mailbox, routes, {"fx": endpoint}, aggregate, states=states
        )
        with trio.fail_after(GUARD_S):
            async with aggregate.manager.run(), endpoint.manager.run():
                await closed_as_answered(front_door, path)


async def closed_as_answered(front_door: FrontDoor, path: str) -> None:
    opened = await exchange(front_door, path, "POST", INITIALIZE)
    assert opened[0]["status"] == 200
    session = dict(opened[0]["headers"])[b"mcp-session-id"].decode()
    closed: list[int] = []

    async def close_the_session() -> None:
        [head, *_] = await exchange(front_door, path, "DELETE", None, session)
        closed.append(head["status"])

    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    answer = await exchange(front_door, path, "POST", note, session, on_head=close_the_session)
    assert closed == [200]
    assert [m["type"] for m in answer] == ["http.response.start", "http.response.body"]
    assert answer[0]["status"] == 202
    # The session is gone: a POST of it now is told so.
    [head, body] = await exchange(front_door, path, "POST", note, session)
    assert head["status"] == 404, body
