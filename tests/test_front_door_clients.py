"""Official MCP clients through the front door of a real `mcpapps run`: the conformance suite,
the TypeScript SDK client and the Inspector CLI on `/apps/mcp/<appId>` (one app's upstream
session) and on `/mcp` (every Running app's model-visible tools).

Each test starts the real supervisor in a subprocess (tests/support/running.py) with real apps
behind it: the conformance fixture, the bundled grocery app, or the misbehaving fixture app.
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
import trio

from tests.support.frontdoor import (
    APP_ONLY,
    EXPECTED_DIRECT,
    conformance_project,
    conformance_through,
    grocery_project,
    only_text,
    wait_running,
    write_config,
)
from tests.support.helpers import Project
from tests.support.officialclients import inspector_cli, ts_client
from tests.support.running import (
    GROCERY_APP_ONLY,
    GROCERY_TOOLS,
    GUARD_S,
    Supervisor,
    fixture_manifest,
    supervisor_running,
)
from tests.support.shared import SharedSupervisor, SharedView, shared_supervisor, view_of

# The official clients that only list and read the bundled app share a supervisor
# (tests/support/shared.py); the others kill an app or need a config of their own.


@pytest.fixture(scope="module")
def _grocery(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SharedSupervisor]:
    project = Project(tmp_path_factory.mktemp("clients-grocery"))
    grocery_project(project)
    yield from shared_supervisor(project)


@pytest.fixture
def grocery(_grocery: SharedSupervisor) -> Iterator[SharedView]:
    yield from view_of(_grocery)


# --- Projects -------------------------------------------------------------------------------------


def fixture_project(
    project: Project, app_id: str, *options: str, protocol: str | None = None
) -> None:
    project.manifest(f"apps/{app_id}", fixture_manifest(app_id, *options))
    write_config(project, {app_id: {"protocol": protocol}} if protocol else None)


# --- Reading answers ------------------------------------------------------------------------------


def structured(result: Mapping[str, Any]) -> Any:
    """A grocery tool's answer, from its text content (what every client can read)."""
    content = result["content"]
    assert content[0]["type"] == "text", result
    return json.loads(content[0]["text"])


async def wait_for_count(supervisor: Supervisor, text: str, count: int) -> None:
    """Wait until `text` appears `count` times in the supervisor's log."""
    with trio.fail_after(GUARD_S):
        while supervisor.log.count(text) < count:
            await trio.sleep(0.02)


# --- The conformance suite ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("protocol", "negotiated"),
    [(None, "2025-11-25"), ("stateless", "2026-07-28")],
    ids=["auto", "stateless"],
)
async def test_conformance_through_the_front_door(
    project: Project, protocol: str | None, negotiated: str
) -> None:
    """Every scenario that passes against the conformance fixture directly (all 32) passes
    through `/apps/mcp/<appId>` too, whichever era the app is reached in: with the default
    protocol ("auto": the handshake, which this app offers), and on 2026-07-28, which has no
    logging/setLevel nor resources/subscribe (the front door makes up for them) and asks by
    `input_required` results (the front door asks the suite's client on its request's stream)."""
    conformance_project(project, protocol)
    async with supervisor_running(project) as supervisor:
        result = await conformance_through(supervisor, "conformance")
    assert f"protocol {negotiated})" in supervisor.log
    print(
        f"conformance ({protocol or 'auto'} upstream): direct {len(EXPECTED_DIRECT)},"
        f" front door {len(EXPECTED_DIRECT & result.passed)}\n{result.summary()}"
    )
    missing = EXPECTED_DIRECT - result.passed
    assert not missing, f"{result.summary()}\n\nsupervisor log:\n{supervisor.log[-6000:]}"


# --- The TypeScript SDK client --------------------------------------------------------------------


async def test_ts_client_through_the_app_endpoint_and_mcp(grocery: SharedView) -> None:
    """The TypeScript SDK client on `/apps/mcp/grocery-inventory` sees the app's own tool list
    (its app-only tool and `_meta` untouched) and calls tools; on `/mcp` it sees public names
    without the app-only tool, and calls by public name."""
    supervisor = grocery
    async with ts_client(supervisor.url("/apps/mcp/grocery-inventory")) as client:
        listed = (await client.result("list_tools"))["tools"]
        assert {t["name"] for t in listed} == GROCERY_TOOLS
        by_name = {t["name"]: t for t in listed}
        assert by_name[APP_ONLY]["_meta"]["ui"] == {
            "resourceUri": "ui://grocery/store-dashboard.html",
            "visibility": ["app"],
        }
        assert by_name["show_store_inventory_dashboard"]["_meta"]["ui"]["visibility"] == [
            "model",
            "app",
        ]

        inventory = await client.result("call_tool", name="get_inventory", arguments={"storeId": 1})
        assert not inventory.get("isError")
        rows = structured(inventory)["items"]
        assert rows
        assert all(row["storeId"] == 1 for row in rows)
        assert inventory["structuredContent"] == structured(inventory)
        # The app-only tool is callable here: this is the view's endpoint.
        dashboard = await client.result("call_tool", name=APP_ONLY, arguments={"storeId": 1})
        assert not dashboard.get("isError")

    async with ts_client(supervisor.url("/mcp")) as client:
        listed = (await client.result("list_tools"))["tools"]
        public = {t["name"] for t in listed}
        assert public == {f"grocery.{name}" for name in GROCERY_TOOLS - GROCERY_APP_ONLY}
        stores = await client.result("call_tool", name="grocery.get_stores", arguments={"id": 2})
        assert not stores.get("isError")
        assert "Riverside Grocers" in stores["content"][0]["text"]


# --- The Inspector CLI ----------------------------------------------------------------------------


async def test_inspector_through_the_app_endpoint_and_mcp(grocery: SharedView) -> None:
    """The Inspector CLI lists and calls tools on `/apps/mcp/grocery-inventory` (raw names, in
    its default handshake era and in 2026-07-28) and on `/mcp` (public names, no app-only tool)."""
    supervisor = grocery
    app_url = supervisor.url("/apps/mcp/grocery-inventory")
    listed = await inspector_cli(app_url, "tools/list")
    assert {t["name"] for t in listed["result"]["tools"]} == GROCERY_TOOLS
    called = await inspector_cli(app_url, "tools/call", tool_name="get_stores", tool_args={"id": 2})
    assert called["result"]["isError"] is False
    assert structured(called["result"])["stores"][0]["name"] == "Riverside Grocers"
    stateless = await inspector_cli(
        app_url, "tools/call", tool_name="get_categories", protocol_era="modern"
    )
    assert "categories" in structured(stateless["result"])

    mcp_url = supervisor.url("/mcp")
    listed = await inspector_cli(mcp_url, "tools/list")
    assert {t["name"] for t in listed["result"]["tools"]} == {
        f"grocery.{name}" for name in GROCERY_TOOLS - GROCERY_APP_ONLY
    }
    called = await inspector_cli(
        mcp_url, "tools/call", tool_name="grocery.get_categories", tool_args={"id": 1}
    )
    assert called["result"]["isError"] is False
    assert [c["id"] for c in structured(called["result"])["categories"]] == [1]


async def test_inspector_on_a_handshake_era_app_without_logging(project: Project) -> None:
    """The Inspector CLI (default, handshake era) lists tools on `/apps/mcp/grocery-inventory`
    when the grocery app, which declares no `logging` capability, is reached over the
    handshake, as it does on the grocery app's own HTTP endpoint."""
    grocery_project(project, protocol="handshake")
    async with supervisor_running(project) as supervisor:
        app_url = supervisor.url("/apps/mcp/grocery-inventory")
        listed = await inspector_cli(app_url, "tools/list")
        assert {t["name"] for t in listed["result"]["tools"]} == GROCERY_TOOLS


# --- An app that dies under a connected client ----------------------------------------------------


async def test_a_killed_app_fails_the_call_in_flight_and_the_same_client_goes_on(
    project: Project,
) -> None:
    """kill -9 of the app under a connected TS client: its call in flight fails at once with an
    error naming the app (not a hang until a timeout); once the supervisor has restarted the app,
    the same client, on the same MCP session, calls again successfully."""
    fixture_project(project, "fx")
    async with (
        supervisor_running(project) as supervisor,
        ts_client(supervisor.url("/apps/mcp/fx")) as client,
    ):
        session = client.ready["sessionId"]
        pid = int(only_text(await client.result("call_tool", name="pid", arguments={})))
        in_flight: dict[str, Any] = {}

        async def slow_call() -> None:
            in_flight.update(
                await client.request(
                    "call_tool", name="sleep", arguments={"seconds": 600}, timeout=GUARD_S
                )
            )

        with trio.fail_after(GUARD_S):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(slow_call)
                await supervisor.wait_for_log("app fx stderr: fixture: sleep started")
                os.kill(pid, signal.SIGKILL)
        assert in_flight["ok"] is False, in_flight
        print(f"the call in flight failed with: {in_flight['error']}")
        assert "'fx'" in in_flight["error"], in_flight

        # Restarted (the log says so first; the registry's status, which the front door
        # checks, follows), on a new process; the client never reconnected.
        await wait_for_count(supervisor, "app fx: Loaded → Running", 2)
        await wait_running(supervisor, "fx")
        answer = await client.request("call_tool", name="pid", arguments={})
        assert answer["ok"] is True, answer
        assert int(only_text(answer["result"])) != pid
        echoed = await client.result("call_tool", name="echo", arguments={"text": "back"})
        assert only_text(echoed) == "back"
        assert (await client.result("session"))["sessionId"] == session


# --- /mcp announces changes of its tool set -------------------------------------------------------


async def test_mcp_sends_tools_list_changed_when_the_tool_set_changes(project: Project) -> None:
    """A TS client on `/mcp` with its GET stream open hears notifications/tools/list_changed
    when an app adds a tool at run time, and the next tools/list has it under its public name;
    likewise when the tool goes away again, and when the app crashes (and is restarted)."""
    fixture_project(project, "fx", "--changing-tools")
    async with (
        supervisor_running(project) as supervisor,
        ts_client(supervisor.url("/mcp")) as client,
    ):
        assert await client.get_stream() == 200
        before = {t["name"] for t in (await client.result("list_tools"))["tools"]}
        assert "fx.echo" in before
        assert "fx.extra" not in before

        seen = len(client.notifications)
        added = await client.result("call_tool", name="fx.add_tool", arguments={"name": "extra"})
        assert only_text(added) == "added extra"
        await client.wait_for_notification(
            "notifications/tools/list_changed", after=seen, timeout=GUARD_S
        )
        after = {t["name"] for t in (await client.result("list_tools"))["tools"]}
        assert after == before | {"fx.extra"}
        assert only_text(await client.result("call_tool", name="fx.extra", arguments={})) == "extra"

        seen = len(client.notifications)
        await client.result("call_tool", name="fx.remove_tool", arguments={"name": "extra"})
        await client.wait_for_notification(
            "notifications/tools/list_changed", after=seen, timeout=GUARD_S
        )
        assert {t["name"] for t in (await client.result("list_tools"))["tools"]} == before

        seen = len(client.notifications)
        crashed = await client.request("call_tool", name="fx.crash", arguments={})
        assert crashed["ok"] is False, crashed
        assert "app 'fx' died during the call" in crashed["error"], crashed
        await client.wait_for_notification(
            "notifications/tools/list_changed", after=seen, timeout=GUARD_S
        )
        await wait_for_count(supervisor, "app fx: Loaded → Running", 2)
        await wait_running(supervisor, "fx")
        with trio.fail_after(GUARD_S):  # the table follows the app's new catalog
            while {t["name"] for t in (await client.result("list_tools"))["tools"]} != before:
                await trio.sleep(0.05)


# --- ?sessionId= on the app endpoint --------------------------------------------------------------


@pytest.mark.parametrize("protocol", ["auto", "handshake"])
async def test_session_id_in_the_url_reaches_the_app_as_meta(
    project: Project, protocol: str
) -> None:
    """`/apps/mcp/<appId>?sessionId=abc`: a tools/call reaches the app with
    `_meta.sessionId == "abc"`, whichever era the app speaks; without the query parameter
    there is none."""
    fixture_project(project, "fx", "--report-client", protocol=protocol)
    async with supervisor_running(project) as supervisor:
        async with ts_client(supervisor.url("/apps/mcp/fx?sessionId=abc")) as client:
            meta = json.loads(
                only_text(await client.result("call_tool", name="request_meta", arguments={}))
            )
            assert meta["sessionId"] == "abc", meta
        async with ts_client(supervisor.url("/apps/mcp/fx")) as client:
            meta = json.loads(
                only_text(await client.result("call_tool", name="request_meta", arguments={}))
            )
            assert "sessionId" not in meta, meta
