"""The official-client test helpers (tests/support/officialclients.py), proven against an existing
Streamable HTTP server: the bundled grocery app's own endpoint (`server.py --http`).

What is pinned here is the clients' behaviour as much as the helpers': the TypeScript SDK client
(@modelcontextprotocol/sdk 1.32.2) negotiates 2025-11-25, opens a GET SSE stream after
`notifications/initialized`, sends DELETE only when asked to terminate the session, and does not
re-initialize when the server forgets its session (HTTP 404). The Inspector CLI (2.12.0) connects
afresh per run, lists tools before a call and sends no DELETE.
"""

from __future__ import annotations

import json
import socket
import subprocess
import time
from collections.abc import AsyncIterator, Iterator

import pytest
import trio

from tests.support import forkserver
from tests.support.frontdoor import GroceryOverHttp
from tests.support.helpers import free_port
from tests.support.officialclients import (
    HttpRecorder,
    InspectorError,
    OfficialClientError,
    RecordedRequest,
    inspector_cli,
    ts_client,
)
from tests.support.running import GROCERY, GROCERY_TOOLS, GUARD_S

HEADERS = {"X-Test": "1", "Authorization": "Bearer test-token"}


class SharedGrocery:
    """`server.py --http` started once for the module's tests that only talk to it (each client
    has a session of its own; a stock change is undone): a process start spared per test."""

    def __init__(self) -> None:
        self.port = free_port()
        self.process = subprocess.Popen(
            [forkserver.python(), str(GROCERY / "server.py"), "--http", "--port", str(self.port)],
            cwd=GROCERY,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + GUARD_S
        while True:
            assert self.process.poll() is None, "the grocery app ended before it listened"
            assert time.monotonic() < deadline, "the grocery app did not listen"
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.05)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"


@pytest.fixture(scope="module")
def _grocery() -> Iterator[SharedGrocery]:
    server = SharedGrocery()
    yield server
    server.process.terminate()
    server.process.wait(GUARD_S)


@pytest.fixture
def grocery(_grocery: SharedGrocery) -> Iterator[SharedGrocery]:
    yield _grocery
    assert _grocery.process.poll() is None, "the shared grocery app ended"


@pytest.fixture
async def own_grocery() -> AsyncIterator[GroceryOverHttp]:
    """The grocery app for a test that kills and restarts it."""
    server = GroceryOverHttp(free_port())
    await server.start()
    try:
        yield server
    finally:
        if server.process is not None and server.process.returncode is None:
            await server.kill()


@pytest.fixture
async def recorder(grocery: SharedGrocery) -> AsyncIterator[HttpRecorder]:
    """A recording relay in front of the grocery server."""
    relay = HttpRecorder(grocery.port)
    async with trio.open_nursery() as nursery:
        await nursery.start(relay.serve)
        yield relay
        nursery.cancel_scope.cancel()


def structured(result: dict[str, object]) -> object:
    """A grocery tool's answer, from its text content (what every client can read)."""
    content = result["content"]
    assert isinstance(content, list), result
    assert content[0]["type"] == "text", result
    return json.loads(content[0]["text"])


def rpc_method(request: RecordedRequest) -> str | None:
    body = request.json()
    return body.get("method") if isinstance(body, dict) else None


# --- The TypeScript SDK client -------------------------------------------------------------------


async def test_ts_client_connects_lists_and_calls(grocery: SharedGrocery) -> None:
    async with ts_client(grocery.url) as client:
        assert client.ready["protocolVersion"] == "2025-11-25"
        assert client.ready["serverInfo"]["name"] == "grocery-inventory"
        assert client.ready["sessionId"]

        tools = await client.result("list_tools")
        assert {t["name"] for t in tools["tools"]} == GROCERY_TOOLS

        answer = await client.request("call_tool", name="get_categories", arguments={"id": 1})
        assert answer["ok"] is True
        assert answer["id"] >= 1
        assert not answer["result"].get("isError")
        categories = structured(answer["result"])
        assert categories == answer["result"]["structuredContent"]
        assert [c["id"] for c in categories["categories"]] == [1]

        # A tool's own failure is a result (isError), not a failed request.
        missing = await client.result("call_tool", name="get_stores", arguments={"id": 999})
        assert missing["isError"] is True
        assert "Unknown store id 999" in missing["content"][0]["text"]

        # A JSON-RPC error is a failed request, with its code.
        failed = await client.request("read_resource", uri="inventory://nope")
        assert failed["ok"] is False
        assert failed["code"] == -32602
        assert "Unknown resource" in failed["error"]

        summary = await client.result("read_resource", uri="inventory://stores/1/summary")
        assert json.loads(summary["contents"][0]["text"])["store"]["id"] == 1
        prompts = await client.result("list_prompts")
        assert "analyze_store_performance" in {p["name"] for p in prompts["prompts"]}
        assert (await client.result("list_resources"))["resources"]

        unknown = await client.request("no_such_op")
        assert unknown["ok"] is False
        assert "unknown op" in unknown["error"]
    assert client.process.returncode == 0


async def test_ts_client_runs_commands_concurrently(recorder: HttpRecorder) -> None:
    """A slow call does not hold back the commands after it; answers are matched by id."""
    recorder.hold = lambda r: 1.5 if b'"get_low_stock"' in r.body else 0.0
    async with ts_client(recorder.url()) as client:
        slow: dict[str, object] = {}

        async def slow_call() -> None:
            slow.update(await client.request("call_tool", name="get_low_stock", arguments={}))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(slow_call)
            await trio.sleep(0.1)
            fast = await client.request("call_tool", name="get_stores", arguments={"id": 1})
            assert not slow  # answered while the slow call is still held back by the relay
            assert structured(fast["result"])["stores"][0]["id"] == 1

            # Two more at once, each answered under its own id.
            pair: dict[str, dict[str, object]] = {}

            async def call(name: str) -> None:
                pair[name] = await client.request("call_tool", name=name, arguments={})

            async with trio.open_nursery() as both:
                both.start_soon(call, "get_categories")
                both.start_soon(call, "get_suppliers")
            assert pair["get_categories"]["id"] != pair["get_suppliers"]["id"]
            assert "categories" in structured(pair["get_categories"]["result"])
            assert "suppliers" in structured(pair["get_suppliers"]["result"])
        assert slow["ok"] is True
        assert "items" in structured(slow["result"])


async def test_ts_client_hears_server_notifications(grocery: SharedGrocery) -> None:
    """The grocery app announces a stock change as notifications/resources/updated; with plain
    JSON responses it reaches the client on its GET stream. (It never sends list_changed.)"""
    async with ts_client(grocery.url) as client:
        assert await client.get_stream() == 200
        before = len(client.notifications)
        changed = await client.result(
            "call_tool", name="adjust_stock", arguments={"storeId": 2, "productId": 1, "delta": 1}
        )
        uri = structured(changed)["updatedResource"]
        notification = await client.wait_for_notification(
            "notifications/resources/updated", after=before, timeout=10
        )
        assert notification["params"] == {"uri": uri} == {"uri": "inventory://stores/2/summary"}
        await client.result(
            "call_tool", name="adjust_stock", arguments={"storeId": 2, "productId": 1, "delta": -1}
        )


async def test_ts_client_sends_headers_on_every_request(recorder: HttpRecorder) -> None:
    async with ts_client(recorder.url(), HEADERS) as client:
        await client.result("call_tool", name="get_stores", arguments={})
        assert await client.get_stream() == 200  # it opens in the background
    methods = recorder.methods()
    assert methods[:2] == ["POST", "POST"]  # initialize, notifications/initialized
    assert [rpc_method(r) for r in recorder.requests[:2]] == [
        "initialize",
        "notifications/initialized",
    ]
    assert "DELETE" not in methods  # the SDK's close() does not end the session
    for request in recorder.requests:
        assert request.headers["x-test"] == "1", request
        assert request.headers["authorization"] == "Bearer test-token", request
    get = next(r for r in recorder.requests if r.method == "GET")
    assert get.headers["accept"] == "text/event-stream"
    after_initialize = recorder.requests[1:]
    assert all(r.headers["mcp-protocol-version"] == "2025-11-25" for r in after_initialize)
    assert all(r.headers["mcp-session-id"] == client.ready["sessionId"] for r in after_initialize)


async def test_ts_client_can_terminate_its_session(recorder: HttpRecorder) -> None:
    async with ts_client(recorder.url(), terminate_on_close=True) as client:
        await client.result("ping")
    assert recorder.methods()[-1] == "DELETE"
    assert recorder.requests[-1].headers["mcp-session-id"] == client.ready["sessionId"]
    assert client.process.returncode == 0


async def test_ts_client_does_not_reconnect_when_the_server_forgets_its_session(
    own_grocery: GroceryOverHttp,
) -> None:
    """Restarting the server under a connected client loses its session for good: the SDK
    reports 404 and does not initialize again. (What the supervisor's endpoint must spare its
    clients when an app restarts behind it.)"""
    grocery = own_grocery
    async with ts_client(grocery.url) as client:
        assert (await client.request("ping"))["ok"]
        assert await client.get_stream() == 200
        await grocery.kill()
        lost = await client.wait_for_event(lambda e: "transportError" in e, timeout=10)
        assert lost["transportError"].startswith("SSE stream disconnected")
        await grocery.start()
        answer = await client.request("call_tool", name="get_stores", arguments={})
        assert answer["ok"] is False
        assert answer["httpStatus"] == 404
        assert "Session not found" in answer["error"]
        assert not (await client.request("ping"))["ok"]  # and it stays that way


async def test_ts_client_start_failure_says_why() -> None:
    with pytest.raises(OfficialClientError, match="could not connect") as caught:
        async with ts_client(f"http://127.0.0.1:{free_port()}/mcp"):
            pytest.fail("connected to nothing")
    assert "fetch failed" in str(caught.value)


async def test_ts_client_http_error_at_start(grocery: SharedGrocery) -> None:
    with pytest.raises(OfficialClientError, match="could not connect") as caught:
        async with ts_client(grocery.url + "/nope"):
            pytest.fail("connected to a 404")
    assert '"httpStatus": 404' in str(caught.value)


# --- The Inspector CLI ---------------------------------------------------------------------------


async def test_inspector_lists_and_calls_tools(grocery: SharedGrocery) -> None:
    listed = await inspector_cli(grocery.url, "tools/list")
    assert {t["name"] for t in listed["result"]["tools"]} == GROCERY_TOOLS

    called = await inspector_cli(
        grocery.url, "tools/call", tool_name="get_stores", tool_args={"id": 2}
    )
    assert called["result"]["isError"] is False
    assert structured(called["result"])["stores"][0]["name"] == "Riverside Grocers"

    # Other methods and the protocol era it negotiates.
    prompts = await inspector_cli(grocery.url, "prompts/list")
    assert "explain_inventory_term" in {p["name"] for p in prompts["result"]["prompts"]}
    stats = await inspector_cli(
        grocery.url, "tools/call", tool_name="get_server_stats", protocol_era="modern"
    )
    assert structured(stats["result"])["protocolVersion"] == "2026-07-28"


async def test_inspector_failures_raise_with_details(grocery: SharedGrocery) -> None:
    with pytest.raises(InspectorError) as caught:
        await inspector_cli(grocery.url, "tools/call", tool_name="get_stores", tool_args={"id": 9})
    assert caught.value.returncode == 5
    assert caught.value.output["result"]["isError"] is True  # the result is still on stdout
    assert caught.value.envelope["error"]["code"] == "tool_is_error"

    with pytest.raises(InspectorError) as caught:
        await inspector_cli(grocery.url, "tools/call", tool_name="no_such_tool")
    assert caught.value.envelope["error"]["code"] == "tool_not_found"
    assert "no_such_tool" in str(caught.value)  # the stderr is in the message

    with pytest.raises(InspectorError) as caught:
        await inspector_cli(grocery.url + "/nope", "tools/list")
    assert caught.value.envelope["error"]["status"] == 404


async def test_inspector_sends_headers(recorder: HttpRecorder) -> None:
    called = await inspector_cli(
        recorder.url(), "tools/call", tool_name="get_categories", headers=HEADERS
    )
    assert "categories" in structured(called["result"])
    assert [rpc_method(r) for r in recorder.requests if r.method == "POST"] == [
        "initialize",
        "notifications/initialized",
        "tools/list",  # it lists the tools before calling one
        "tools/call",
    ]
    assert "DELETE" not in recorder.methods()
    for request in recorder.requests:
        assert request.headers["x-test"] == "1", request
        assert request.headers["authorization"] == "Bearer test-token", request
