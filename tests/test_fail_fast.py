"""A call to an app that is down is refused at once: the front door knows the app's state from
the registry's published facts and does not queue the refusal behind the registry's mailbox,
where under load every call in flight has messages waiting."""

from __future__ import annotations

import json
import time
from typing import Any

import trio

from actors.messages import AppStatus
from actors.runtime import Mailbox
from supervisor.model.lifecycle import AppState
from web.aggregate import AggregateEndpoint
from web.appstates import AppStates
from web.asgi import FrontDoor
from web.endpoints import AppEndpoint
from web.security import AccessPolicy

POLICY = AccessPolicy(
    require_auth=False,
    token=None,
    hosts=frozenset({"127.0.0.1"}),
    origins=frozenset(),
    sandbox_origin=None,
)


async def answer(front_door: FrontDoor, path: str) -> tuple[int, dict[str, str], Any]:
    """One POST through the front door's ASGI interface, as Hypercorn would make it."""
    scope = {
        "type": "http",
        "method": "POST",
        "path": path,
        "headers": [(b"host", b"127.0.0.1:1"), (b"content-type", b"application/json")],
    }
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode()
    incoming = [{"type": "http.request", "body": body, "more_body": False}]
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        if incoming:
            return incoming.pop()
        await trio.sleep_forever()
        raise AssertionError

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await front_door(scope, receive, send)
    start = sent[0]
    headers = {k.decode(): v.decode() for k, v in start["headers"]}
    return start["status"], headers, json.loads(sent[1]["body"])


async def test_an_app_known_to_be_down_is_refused_without_asking_the_registry() -> None:
    busy_registry: Mailbox[Any] = Mailbox()  # nobody reads it: asking would wait
    states = AppStates()
    states.record(
        AppStatus(
            id="down",
            name="down",
            state=AppState.FAILED,
            entered_at={"Failed": time.time()},
            last_error="the process was killed by SIGKILL",
            next_retry_at=time.time() + 3,
        )
    )
    apps = {"down": AppEndpoint("down", busy_registry)}
    aggregate = AggregateEndpoint(busy_registry)
    front_door = FrontDoor(POLICY, busy_registry, None, apps, aggregate, states=states)
    with trio.fail_after(5):  # asking the silent registry would take its 10 s ask timeout
        status, headers, body = await answer(front_door, "/apps/mcp/down")
    assert status == 503
    assert int(headers["retry-after"]) >= 1
    assert body["error"]["code"] == "app_unavailable"
    assert "killed by SIGKILL" in body["error"]["message"]
