"""`/mcp` is complete for agents: tools listed as their apps list them (title, annotations,
outputSchema, execution) under public names, a UI tool's structuredContent kept from the model,
and the apps' prompts, resources and resource templates, with list changes. Official clients on
a real `mcpapps run` with the bundled grocery app and the fixture app."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import mcp
import pytest
from mcp.shared.exceptions import MCPError

from tests.support import forkserver
from tests.support.frontdoor import (
    CONFORMANCE_APP,
    EXPECTED,
    grocery_project,
    only_text,
    python_client,
    sdk_client,
    write_config,
)
from tests.support.helpers import Project
from tests.support.officialclients import ts_client
from tests.support.running import GROCERY_APP_ONLY, GUARD_S, fixture_manifest, supervisor_running
from tests.support.shared import SharedSupervisor, SharedView, shared_supervisor, view_of

UI_TOOL = "show_store_inventory_dashboard"

# The tests that only read the bundled app's offers through /mcp share a supervisor
# (tests/support/shared.py); those with apps of their own start their own.


@pytest.fixture(scope="module")
def _grocery(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SharedSupervisor]:
    project = Project(tmp_path_factory.mktemp("aggregate-grocery"))
    grocery_project(project)
    yield from shared_supervisor(project)


@pytest.fixture
def grocery(_grocery: SharedSupervisor) -> Iterator[SharedView]:
    yield from view_of(_grocery)


async def test_tools_are_listed_as_their_app_lists_them(grocery: SharedView) -> None:
    supervisor = grocery
    async with ts_client(supervisor.url("/apps/mcp/grocery-inventory")) as client:
        raw = {t["name"]: t for t in (await client.result("list_tools"))["tools"]}
    async with ts_client(supervisor.url("/mcp")) as client:
        public = {t["name"]: t for t in (await client.result("list_tools"))["tools"]}
    assert set(public) == {f"grocery.{name}" for name in set(raw) - GROCERY_APP_ONLY}
    for name, tool in raw.items():
        if name in GROCERY_APP_ONLY:
            continue
        listed = public[f"grocery.{name}"]
        for field in ("title", "description", "inputSchema", "annotations", "execution"):
            assert listed.get(field) == tool.get(field), (name, field)
        if name == UI_TOOL:
            assert "outputSchema" not in listed  # its structuredContent stays from the model
            assert "ui" not in (listed.get("_meta") or {})
        else:
            assert listed.get("outputSchema") == tool.get("outputSchema"), name
    # What an agent needs to decide on approval.
    assert public["grocery.get_inventory"]["annotations"]["readOnlyHint"] is True
    assert public["grocery.set_inventory"]["annotations"]["destructiveHint"] is False
    assert public["grocery.get_inventory"]["outputSchema"]["type"] == "object"


async def test_a_ui_tools_structured_content_is_kept_from_the_model(grocery: SharedView) -> None:
    """On `/mcp` a tool with a UI answers with its text only (the model's part); its own
    endpoint, the UI's, has the full result. Other tools keep structuredContent."""
    supervisor = grocery
    async with ts_client(supervisor.url("/apps/mcp/grocery-inventory")) as client:
        full = await client.result("call_tool", name=UI_TOOL, arguments={"storeId": 1})
    async with ts_client(supervisor.url("/mcp")) as client:
        for_model = await client.result(
            "call_tool", name=f"grocery.{UI_TOOL}", arguments={"storeId": 1}
        )
        plain = await client.result("call_tool", name="grocery.get_stores", arguments={"id": 1})
    assert "structuredContent" in full
    assert "structuredContent" not in for_model
    assert for_model["content"] == full["content"]
    assert plain["structuredContent"]["stores"][0]["id"] == 1


@pytest.mark.parametrize("era", ["ts", "2026-07-28"])
async def test_prompts_and_resources_under_public_names(grocery: SharedView, era: str) -> None:
    """The grocery app's prompts (prefixed names), resources and templates (URIs unchanged,
    names prefixed) on `/mcp`; getting a prompt and reading a resource or a URI of a template
    gives what the app's own endpoint gives. A URI no app serves is -32002."""
    supervisor = grocery
    app_url = supervisor.url("/apps/mcp/grocery-inventory")
    async with ts_client(app_url) as app:
        prompts = (await app.result("list_prompts"))["prompts"]
        resources = (await app.result("list_resources"))["resources"]
        templates = (await app.result("list_resource_templates"))["resourceTemplates"]
        prompt = await app.result(
            "get_prompt", name="explain_inventory_term", arguments={"term": "reorder"}
        )
        summary = await app.result("read_resource", uri="inventory://stores/1/summary")
        view = await app.result("read_resource", uri="ui://grocery/store-dashboard.html")
    mcp_url = supervisor.url("/mcp")
    if era == "ts":
        async with ts_client(mcp_url) as client:
            seen = await _offers_ts(client)
            missing = await client.request("read_resource", uri="nowhere://x")
            assert missing["ok"] is False, missing
            assert missing["code"] == -32002, missing
    else:
        async with sdk_client(mcp_url, era) as client:
            seen = await _offers_sdk(client)
            with pytest.raises(mcp.MCPError) as raised:
                await client.read_resource("nowhere://x")
            assert raised.value.error.code == -32002
    assert seen["prompts"] == [{**p, "name": f"grocery.{p['name']}"} for p in prompts]
    assert seen["resources"] == [{**r, "name": f"grocery.{r['name']}"} for r in resources]
    assert seen["templates"] == [{**t, "name": f"grocery.{t['name']}"} for t in templates]
    assert seen["prompt"]["messages"] == prompt["messages"]
    assert _timeless(seen["summary"]["contents"]) == _timeless(summary["contents"])
    assert seen["view"]["contents"] == view["contents"]


async def _offers_ts(client: Any) -> dict[str, Any]:
    return {
        "prompts": (await client.result("list_prompts"))["prompts"],
        "resources": (await client.result("list_resources"))["resources"],
        "templates": (await client.result("list_resource_templates"))["resourceTemplates"],
        "prompt": await client.result(
            "get_prompt", name="grocery.explain_inventory_term", arguments={"term": "reorder"}
        ),
        "summary": await client.result("read_resource", uri="inventory://stores/1/summary"),
        "view": await client.result("read_resource", uri="ui://grocery/store-dashboard.html"),
    }


async def _offers_sdk(client: mcp.Client) -> dict[str, Any]:
    def wire(model: Any) -> Any:
        return model.model_dump(by_alias=True, mode="json", exclude_none=True)

    prompt = await client.get_prompt("grocery.explain_inventory_term", {"term": "reorder"})
    return {
        "prompts": [wire(p) for p in (await client.list_prompts()).prompts],
        "resources": [wire(r) for r in (await client.list_resources()).resources],
        "templates": [wire(t) for t in (await client.list_resource_templates()).resource_templates],
        "prompt": wire(prompt),
        "summary": wire(await client.read_resource("inventory://stores/1/summary")),
        "view": wire(await client.read_resource("ui://grocery/store-dashboard.html")),
    }


async def test_mcp_announces_prompt_list_changes(project: Project) -> None:
    """An app adds a prompt at run time: a client of `/mcp` hears prompts/list_changed and the
    next listing has it under its public name (and no tools/list_changed: the tools did not
    change)."""
    project.manifest("apps/fx", fixture_manifest("fx", "--changing-prompts"))
    write_config(project)
    async with (
        supervisor_running(project) as supervisor,
        ts_client(supervisor.url("/mcp")) as client,
    ):
        assert await client.get_stream() == 200
        before = {p["name"] for p in (await client.result("list_prompts"))["prompts"]}
        assert "fx.fresh" not in before
        seen = len(client.notifications)
        added = await client.result("call_tool", name="fx.add_prompt", arguments={"name": "fresh"})
        assert only_text(added) == "added prompt fresh"
        await client.wait_for_notification(
            "notifications/prompts/list_changed", after=seen, timeout=GUARD_S
        )
        after = {p["name"] for p in (await client.result("list_prompts"))["prompts"]}
        assert after == before | {"fx.fresh"}
        methods = [n["method"] for n in client.notifications[seen:]]
        assert "notifications/tools/list_changed" not in methods


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_a_2026_app_asks_clients_of_both_eras_through_mcp(
    project: Project, mode: str
) -> None:
    """The conformance fixture reached on 2026-07-28 asks by `input_required`: through `/mcp`
    a 2026-07-28 client answers it by its own retry (passed through to the app), a handshake-era
    client is asked on its request's stream and the front door retries for it."""
    project.manifest(
        "apps/conformance",
        {
            "id": "conformance",
            "command": forkserver.python(),
            "arguments": [str(CONFORMANCE_APP)],
            "toolNamePrefix": "c.",
        },
    )
    write_config(project, {"conformance": {"protocol": "stateless"}})
    async with supervisor_running(project) as supervisor:
        assert "protocol 2026-07-28)" in supervisor.log
        async with python_client(supervisor.url("/mcp"), mode) as client:
            sampled = await client.call_tool("c.test_sampling", {"prompt": "hello"})
            assert sampled.content[0].text == "LLM response: echo hello"
            elicited = await client.call_tool("c.test_elicitation", {"message": "who?"})
            assert elicited.content[0].text == EXPECTED["test_elicitation"]


async def test_mcp_announces_no_resource_subscriptions(grocery: SharedView) -> None:
    """`/mcp` has resources to list and read but none to subscribe to (their updates come on
    the app's own endpoint): it says so to clients of both eras, and a 2026-07-28 listen stream
    naming a resource is refused."""
    supervisor = grocery
    async with sdk_client(supervisor.url("/mcp"), "legacy") as client:
        resources = client.server_capabilities.resources
        assert resources is not None
        assert not resources.subscribe
        assert resources.list_changed
    async with sdk_client(supervisor.url("/mcp"), "2026-07-28") as client:
        # A pinned client adopts a stand-in without asking: ask.
        discovered = await client.session.send_discover("2026-07-28")
        resources = discovered["capabilities"]["resources"]
        assert "subscribe" not in resources
        assert resources["listChanged"] is True
    async with sdk_client(supervisor.url("/mcp"), "2026-07-28") as client:
        with pytest.raises(mcp.MCPError) as refused:
            async with client.listen(resource_subscriptions=["ui://grocery/x.html"]):
                pass
        assert "no resource subscriptions" in str(refused.value)


def _timeless(contents: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The summary resource's contents without its `generatedAt` stamp, which differs between two
    reads a second apart."""
    out = []
    for content in contents:
        body = json.loads(content["text"])
        body.pop("generatedAt", None)
        out.append({**content, "text": body})
    return out


@pytest.mark.parametrize("era", ["legacy", "auto"])
async def test_a_cursor_mcp_never_gave_is_invalid_params(grocery: SharedView, era: str) -> None:
    """/mcp lists everything in one page and gives no cursor, so any cursor is one it never
    gave: -32602, as the MCP spec asks (it listed everything as if there were none)."""
    async with sdk_client(grocery.url("/mcp"), era) as client:
        assert "nextCursor" not in (await client.list_tools()).model_dump(exclude_none=True)
        for listing in ("list_tools", "list_prompts", "list_resources"):
            with pytest.raises(MCPError) as refused:
                await getattr(client, listing)(cursor="bogus", cache_mode="bypass")
            assert refused.value.error.code == -32602, listing
            assert "cursor" in refused.value.error.message
