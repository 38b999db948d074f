"""A view rebuilt from a saved chat (a page reload, a supervisor restart) is restored on the
server: its lease says so, it may list its app's tools and resources and read the one UI
resource of the tool it renders, and its tool calls, other reads and model context are refused
(`Inactive`) until the person presses Run, which opens a fresh view whose opening call is
theirs. The rule, pure; then over HTTP against a real `mcpapps run`."""

from __future__ import annotations

from actors.chat.turns import APP_EVENTS_MARK
from actors.views.refusals import Inactive
from actors.views.restored import refusal
from tests.support.chatting import body, chat_data
from tests.support.frontdoor import http, write
from tests.support.helpers import Project
from tests.support.running import supervisor_running
from tests.support.views import call, open_view, rpc

INACTIVE = -32005  # a restored view, inactive until Run (README, "Views on the server")
UI = "ui://fixture/view.html"
TOOLS = [{"name": "ui_tool", "_meta": {"ui": {"resourceUri": UI}}}, {"name": "echo"}]


def test_what_a_restored_view_may_ask() -> None:
    shown = {"toolName": "ui_tool"}
    for method in ("tools/list", "resources/list", "resources/templates/list"):
        assert refusal(method, {}, shown, TOOLS) is None
    assert refusal("resources/read", {"uri": UI}, shown, TOOLS) is None
    other = refusal("resources/read", {"uri": "fixture://item/0"}, shown, TOOLS)
    assert isinstance(other, Inactive)
    assert "may not read 'fixture://item/0'" in other.message
    called = refusal("tools/call", {"name": "echo"}, shown, TOOLS)
    assert isinstance(called, Inactive)
    assert "restored from the saved chat" in called.message
    assert "press Run" in called.message
    # The UI resource is the catalog's for the tool, not whatever the page says it renders.
    claimed = {"toolName": "echo", "resourceUri": "fixture://item/0"}
    assert refusal("resources/read", {"uri": "fixture://item/0"}, claimed, TOOLS) is not None
    assert refusal("resources/read", {"uri": UI}, None, TOOLS) is not None


FX = ("fx", ("--app-only", "--tools", "1"))
NEVER = '[apps.entries.fx]\napproval = "never"\n'


async def test_a_restored_view_asks_nothing_until_run(project: Project) -> None:
    write(project, "", FX, extra=NEVER, grocery=False)
    async with supervisor_running(project) as supervisor, http(supervisor) as client:
        await chat_data(client, body("/call fx.ui_tool {}", "rest-1"))
        tool_call = {"toolName": "ui_tool", "resourceUri": UI, "arguments": {}}
        opened = await client.post(
            "/apps/views",
            json={"appId": "fx", "sessionId": "rest-1", "toolCall": tool_call, "restored": True},
        )
        assert opened.status_code == 201
        assert opened.json()["restored"] is True
        view = opened.json()["viewId"]

        # What the page needs to draw it.
        assert "result" in await rpc(client, view, "tools/list")
        assert "result" in await rpc(client, view, "resources/list")
        read = await rpc(client, view, "resources/read", {"uri": UI})
        assert read["result"]["contents"][0]["uri"] == UI
        # What only the person's Run may start: refused before the app sees it.
        for refused in (
            await call(client, view, "ui_tool"),
            await call(client, view, "echo", {"text": "x"}),
            await rpc(client, view, "resources/read", {"uri": "fixture://item/0"}),
        ):
            assert refused["error"]["code"] == INACTIVE, refused
            assert "press Run" in refused["error"]["message"]
        # Asking for `run` with `restored` runs nothing either.
        both = await open_view(
            client, "fx", sessionId="rest-1", toolCall=tool_call, run=True, restored=True
        )
        assert (await call(client, both, "ui_tool"))["error"]["code"] == INACTIVE

        # What it says for the model is not the person's doing: dropped.
        said = {"content": [{"type": "text", "text": "restored says hello"}]}
        assert (await rpc(client, view, "ui/update-model-context", said))["result"] == {}
        await chat_data(client, body("/tools", "rest-1"))
        saved = (await client.get("/apps/chat/rest-1")).json()["messages"]
        assert not any(APP_EVENTS_MARK in str(m.get("content")) for m in saved)

        # Run: a fresh view whose opening call is the person's.
        fresh = await open_view(client, "fx", sessionId="rest-1", toolCall=tool_call, run=True)
        ran = await call(client, fresh, "ui_tool")
        assert ran["result"]["structuredContent"] == {"shown": True}
        assert "result" in await call(client, fresh, "echo", {"text": "x"})
        # The old one stays inactive.
        assert (await call(client, view, "echo", {"text": "x"}))["error"]["code"] == INACTIVE

        metrics = (await client.get("/metrics")).text
        assert 'mcpapps_view_refusals_total{app="fx",reason="inactive"}' in metrics
