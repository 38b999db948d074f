"""Clients sharing one app through `/apps/mcp/<appId>` stay apart: a question the app asks, the
progress of a call, resource subscriptions and updates, and cancellation each concern only the
client they belong to."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import mcp
import mcp_types as types
import pytest
import trio

from actors.apps.httpclients import http_transport
from actors.tls import client_tls
from tests.support.frontdoor import (
    MODERN_GROCERY,
    cancelled,
    conformance_project,
    open_session,
    write,
)
from tests.support.helpers import Project
from tests.support.running import GUARD_S, supervisor_running

URI = "inventory://stores/1/summary"
ADJUST = {"storeId": 1, "productId": 1, "delta": 1}


async def read_stream(
    client: httpx2.AsyncClient,
    method: str,
    path: str,
    headers: dict[str, str],
    sink: list[dict[str, Any]],
    body: dict[str, Any] | None = None,
    *,
    task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Every JSON-RPC message of an SSE response, as it comes."""
    async with client.stream(method, path, headers=headers, json=body) as response:
        task_status.started(response.status_code)
        async for line in response.aiter_lines():
            if line.startswith("data:") and line[5:].strip():
                sink.append(json.loads(line[5:]))


async def test_a_question_from_the_app_never_reaches_another_client(project: Project) -> None:
    """While A's call waits for A's answer to the app's elicitation, B's call asks too. Over
    stdio in the handshake era nothing says which call asked, so B's question is refused
    rather than shown to A; A gets exactly its own question and its call its own answer."""
    conformance_project(project, "handshake")
    seen: list[tuple[str, str]] = []
    release_a = trio.Event()

    def answering(name: str) -> Any:
        async def elicit(context: Any, params: Any) -> Any:
            seen.append((name, params.message))
            if name == "A":
                await release_a.wait()
            content = {"username": f"user-{name}", "email": f"{name}@example.com"}
            return types.ElicitResult(action="accept", content=content)

        return elicit

    async with supervisor_running(project) as supervisor:
        url = supervisor.url("/apps/mcp/conformance")
        results: dict[str, Any] = {}
        async with (
            mcp.Client(
                http_transport(url, {}, GUARD_S), mode="legacy", elicitation_callback=answering("A")
            ) as a,
            mcp.Client(
                http_transport(url, {}, GUARD_S), mode="legacy", elicitation_callback=answering("B")
            ) as b,
            trio.open_nursery() as nursery,
        ):

            async def call(name: str, client: Any) -> None:
                arguments = {"message": f"question for {name}"}
                try:
                    results[name] = await client.call_tool("test_elicitation", arguments)
                except mcp.MCPError as error:
                    results[name] = error

            nursery.start_soon(call, "A", a)
            with trio.fail_after(GUARD_S):
                while not seen:
                    await trio.sleep(0.01)
            await call("B", b)
            release_a.set()
    assert seen == [("A", "question for A")]
    assert "user-A" in results["A"].content[0].text
    refused = results["B"]
    text = str(refused) if isinstance(refused, Exception) else refused.content[0].text
    assert "nothing says which one asked" in text


async def test_progress_goes_only_to_the_caller_under_its_token(project: Project) -> None:
    conformance_project(project, "handshake")
    async with (
        supervisor_running(project) as supervisor,
        httpx2.AsyncClient(
            verify=client_tls(), base_url=supervisor.url(), timeout=GUARD_S
        ) as client,
    ):
        path = "/apps/mcp/conformance"
        a, b = await open_session(client, path), await open_session(client, path)
        a_stream: list[dict[str, Any]] = []
        b_stream: list[dict[str, Any]] = []
        b_call: list[dict[str, Any]] = []
        async with trio.open_nursery() as nursery:
            get = {k: v for k, v in a.items() if k != "content-type"}
            assert await nursery.start(read_stream, client, "GET", path, get, a_stream) == 200
            get = {k: v for k, v in b.items() if k != "content-type"}
            assert await nursery.start(read_stream, client, "GET", path, get, b_stream) == 200
            call = {
                "jsonrpc": "2.0",
                "id": 7,
                "method": "tools/call",
                "params": {
                    "name": "test_tool_with_progress",
                    "arguments": {},
                    "_meta": {"progressToken": "B-token"},
                },
            }
            await read_stream(client, "POST", path, b, b_call, call)
            await trio.sleep(0.3)  # anything that would leak has had its chance to arrive
            nursery.cancel_scope.cancel()
    progress = [m for m in b_call if m.get("method") == "notifications/progress"]
    assert len(progress) >= 3
    assert {m["params"]["progressToken"] for m in progress} == {"B-token"}
    assert b_call[-1]["id"] == 7
    for stream in (a_stream, b_stream):
        assert not [m for m in stream if m.get("method") == "notifications/progress"]


@pytest.mark.filterwarnings("ignore:resources/(un)?subscribe is removed")
async def test_subscriptions_belong_to_their_client(project: Project) -> None:
    """The app (2026-07-28) is watched for a resource while any client wants it: updates go
    only to subscribers, once each; a client that never subscribed cannot end another's
    subscription; when the last subscriber leaves, the updates stop."""
    write(project, extra=MODERN_GROCERY)
    updates: dict[str, list[str]] = {"A": [], "B": []}

    def collecting(name: str) -> Any:
        async def on_message(message: Any) -> None:
            if isinstance(message, types.ResourceUpdatedNotification):
                updates[name].append(str(message.params.uri))

        return on_message

    async def settle(name: str, count: int) -> None:
        with trio.fail_after(GUARD_S):
            while len(updates[name]) < count:
                await trio.sleep(0.02)
        await trio.sleep(0.3)  # a duplicate would arrive by now

    async with supervisor_running(project) as supervisor:
        url = supervisor.url("/apps/mcp/grocery-inventory")
        async with (
            mcp.Client(
                http_transport(url, {}, GUARD_S), mode="legacy", message_handler=collecting("A")
            ) as a,
            mcp.Client(
                http_transport(url, {}, GUARD_S), mode="legacy", message_handler=collecting("B")
            ) as b,
        ):
            await a.subscribe_resource(URI)
            await a.call_tool("adjust_stock", ADJUST)
            await settle("A", 1)
            assert updates == {"A": [URI], "B": []}

            await b.unsubscribe_resource(URI)  # B never subscribed: no effect on A
            await a.call_tool("adjust_stock", ADJUST)
            await settle("A", 2)
            assert updates == {"A": [URI, URI], "B": []}

            await a.unsubscribe_resource(URI)
            await b.subscribe_resource("inventory://stores/2/summary")
            await a.call_tool("adjust_stock", {**ADJUST, "storeId": 2})
            await settle("B", 1)  # the app has processed the call and its update
            assert updates["A"] == [URI, URI]


async def test_a_2026_client_listens_for_a_resource(project: Project) -> None:
    """A 2026-07-28 client names the resource on its `subscriptions/listen` stream: the app is
    watched for it while the stream lasts, and the update arrives on that stream."""
    write(project, extra=MODERN_GROCERY)
    async with supervisor_running(project) as supervisor:
        url = supervisor.url("/apps/mcp/grocery-inventory")
        events: list[Any] = []
        async with (
            mcp.Client(http_transport(url, {}, GUARD_S), mode="2026-07-28") as client,
            client.listen(resource_subscriptions=[URI]) as subscription,
            trio.open_nursery() as nursery,
        ):

            async def read() -> None:
                async for event in subscription:
                    events.append(event)

            nursery.start_soon(read)
            await client.call_tool("adjust_stock", ADJUST)
            with trio.fail_after(GUARD_S):
                while not events:
                    await trio.sleep(0.02)
            nursery.cancel_scope.cancel()
    assert [getattr(e, "uri", None) for e in events] == [URI]


@pytest.mark.parametrize("path", ["/mcp", "/apps/mcp/slow"])
# A call that asks for progress takes the SDK's path; one that asks for nothing the lean path
# (web/mcpdoor/fastpath.py): each path must give the slot back.
@pytest.mark.parametrize("progress", [False, True], ids=["lean", "sdk"])
async def test_a_call_its_client_cancels_frees_the_apps_call_slot(
    project: Project, path: str, progress: bool
) -> None:
    """A call its client cancels is cancelled at the app at once; with one call slot, so the
    next call runs rather than waiting for the first one's hour-long deadline. (A client that
    merely goes away does not cancel: MCP asks servers not to read a disconnect as one.)"""
    write(
        project,
        "",
        ("slow", ()),
        extra="[apps.entries.slow]\nmax_concurrent_calls = 1\nrequest_timeout_s = 3600\n",
        grocery=False,  # its own supervisor (it leaves a call running); no app it does not use
    )
    async with (
        supervisor_running(project) as supervisor,
        httpx2.AsyncClient(
            verify=client_tls(), base_url=supervisor.url(), timeout=GUARD_S
        ) as client,
    ):
        session = await open_session(client, path)

        def call(request_id: int) -> dict[str, Any]:
            name = "slow.sleep" if path == "/mcp" else "sleep"
            params: dict[str, Any] = {"name": name, "arguments": {"seconds": 600}}
            if progress:
                params["_meta"] = {"progressToken": f"p{request_id}"}
            return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}

        async with trio.open_nursery() as nursery:
            nursery.start_soon(read_stream, client, "POST", path, session, [], call(1))
            await supervisor.wait_for_log("fixture: sleep started")
            await client.post(path, json=cancelled(1), headers=session)
            await supervisor.wait_for_log("fixture: sleep cancelled")
            nursery.start_soon(read_stream, client, "POST", path, session, [], call(2))
            with trio.fail_after(GUARD_S):
                while supervisor.log.count("fixture: sleep started") < 2:
                    await trio.sleep(0.02)
            nursery.cancel_scope.cancel()
