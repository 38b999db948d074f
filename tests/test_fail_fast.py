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
from actors.tooltable import AppTools, build_tool_table
from supervisor.model.lifecycle import AppState
from tests.support.frontdoor import INITIALIZE
from web.appstates import AppStates
from web.asgi import FrontDoor
from web.mcpdoor.aggregate import AggregateEndpoint
from web.mcpdoor.endpoints import AppEndpoint
from web.mcpdoor.toolowners import ToolOwners
from web.security import AccessPolicy

POLICY = AccessPolicy(
    require_auth=False,
    token=None,
    hosts=frozenset({"127.0.0.1"}),
    origins=frozenset(),
    sandbox_origin=None,
)


async def answer(
    front_door: FrontDoor,
    path: str,
    message: Any = None,
    *,
    mcp: bool = False,
    extra: list[tuple[bytes, bytes]] = (),  # type: ignore[assignment]
) -> tuple[int, dict[str, str], Any]:
    """One POST through the front door's ASGI interface, as Hypercorn would make it; `mcp`
    adds the Accept header of an MCP client. An event stream's last message is the body."""
    headers = [(b"host", b"127.0.0.1:1"), (b"content-type", b"application/json"), *extra]
    if mcp:
        headers.append((b"accept", b"application/json, text/event-stream"))
    scope = {"type": "http", "method": "POST", "path": path, "headers": headers}
    message = message or {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    incoming = [{"type": "http.request", "body": json.dumps(message).encode(), "more_body": False}]
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
    headers_sent = {k.decode(): v.decode() for k, v in start["headers"]}
    body = b"".join(m.get("body", b"") for m in sent[1:])
    if headers_sent.get("content-type", "").startswith("text/event-stream"):
        data = [line[5:] for line in body.decode().splitlines() if line.startswith("data:")]
        return start["status"], headers_sent, json.loads(data[-1])
    return start["status"], headers_sent, json.loads(body)


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
    assert body["error"]["data"]["reason"] == "app_unavailable"
    assert "killed by SIGKILL" in body["error"]["message"]


async def test_a_request_to_an_app_known_to_be_running_goes_on_without_asking_the_registry() -> (
    None
):
    silent_registry: Mailbox[Any] = Mailbox()  # nobody reads it: asking would wait
    states = AppStates()
    states.record(
        AppStatus(id="up", name="up", state=AppState.RUNNING, entered_at={"Running": time.time()})
    )
    endpoint = AppEndpoint("up", silent_registry)
    apps = {"up": endpoint}
    front_door = FrontDoor(
        POLICY, silent_registry, None, apps, AggregateEndpoint(silent_registry), states=states
    )
    async with endpoint.manager.run():
        with trio.fail_after(5):  # a lookup in the silent registry would take its 10 s
            # The request reaches the SDK, which refuses it (no Accept header) without the registry.
            status, _headers, _body = await answer(front_door, "/apps/mcp/up")
    assert status == 406
    assert silent_registry.take_waiting() == []


def front_door_after_a_tool_s_app_went_down() -> tuple[Mailbox[Any], AggregateEndpoint, FrontDoor]:
    """A front door whose registry never answers (its mailbox, the `/mcp` endpoint, the front
    door): `shop.buy` was offered while `shop` ran; then `shop` failed and left the tool table."""
    states = AppStates()
    owners = ToolOwners(states)
    tool = {"name": "buy", "inputSchema": {"type": "object"}}
    states.record(
        AppStatus(id="shop", name="shop", state=AppState.RUNNING, entered_at={"Running": 1.0})
    )
    owners.record(build_tool_table([AppTools("shop", "shop.", (tool,))]))
    states.record(
        AppStatus(
            id="shop",
            name="shop",
            state=AppState.FAILED,
            entered_at={"Failed": time.time()},
            last_error="the process was killed by SIGKILL",
            next_retry_at=time.time() + 3,
        )
    )
    owners.record(build_tool_table([]))
    silent_registry: Mailbox[Any] = Mailbox()
    aggregate = AggregateEndpoint(silent_registry, owners=owners)
    front_door = FrontDoor(
        POLICY, silent_registry, None, {}, aggregate, states=states, owners=owners
    )
    return silent_registry, aggregate, front_door


async def test_admin_call_of_a_tool_whose_app_is_down_is_refused_without_asking_the_registry() -> (
    None
):
    silent_registry, _aggregate, front_door = front_door_after_a_tool_s_app_went_down()
    body = {"name": "shop.buy", "arguments": {}}
    with trio.fail_after(5):  # the silent registry would never answer
        status, headers, answered = await answer(front_door, "/admin/call", body)
    assert status == 503
    assert int(headers["retry-after"]) >= 1  # as /apps/mcp/<id> says when a restart is due
    assert answered["error"]["code"] == "app_unavailable"
    assert answered["error"]["message"] == (
        "tool 'shop.buy' is not available: app 'shop' that would offer it is Failed"
        " (the process was killed by SIGKILL)"
    )
    assert silent_registry.take_waiting() == []


async def test_mcp_call_of_a_tool_whose_app_is_down_is_refused_without_asking_the_registry() -> (
    None
):
    silent_registry, aggregate, front_door = front_door_after_a_tool_s_app_went_down()
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "shop.buy"}}
    async with aggregate.manager.run():
        with trio.fail_after(5):
            status, headers, _ = await answer(front_door, "/mcp", INITIALIZE, mcp=True)
            assert status == 200
            session = [(b"mcp-session-id", headers["mcp-session-id"].encode())]
            status, _, answered = await answer(front_door, "/mcp", call, mcp=True, extra=session)
    assert status == 200
    assert answered["error"]["code"] == -32000
    assert "app 'shop' that would offer it is Failed" in answered["error"]["message"]
    assert silent_registry.take_waiting() == []
