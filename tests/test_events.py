"""`/admin/events`: the registry's facts over a WebSocket, read with trio-websocket; a reader that
falls behind is dropped; the chat's cancel route and the view a UI tool's result carries."""

from __future__ import annotations

import json
from typing import Any

import pytest
import trio
from trio_websocket import ConnectionRejected, HandshakeError, open_websocket_url

from actors.messages import Snapshot, Watch
from actors.runtime import ask
from tests.support.chatting import body, chat_data, chat_stream
from tests.support.frontdoor import http, write
from tests.support.helpers import Project
from tests.support.running import GUARD_S, fixture_manifest, running, supervisor_running
from web.admin.events import Inbox

TOKEN = "s3cret-token"


async def next_message(ws: Any) -> dict[str, Any]:
    with trio.fail_after(GUARD_S):
        return json.loads(await ws.get_message())


async def test_state_changes_and_restarts_arrive_in_order(project: Project) -> None:
    write(project, "", ("fx", ()))
    async with supervisor_running(project) as supervisor, http(supervisor) as client:
        url = f"ws://127.0.0.1:{supervisor.port}/admin/events"
        async with open_websocket_url(url, message_queue_size=0) as ws:
            seen: list[dict[str, Any]] = []
            # First how things stand: every app, its catalog, the tool table.
            while not any(m["type"] == "toolTable" for m in seen):
                seen.append(await next_message(ws))
            assert [m["seq"] for m in seen] == list(range(1, len(seen) + 1))
            states = {m["app"]["id"]: m["app"] for m in seen if m["type"] == "app"}
            assert states["fx"]["state"] == "Running"
            assert states["fx"]["restarts"] == 0
            assert states["grocery-inventory"]["state"] == "Running"
            assert any(m["type"] == "catalog" and m["appId"] == "fx" for m in seen)
            table = next(m for m in seen if m["type"] == "toolTable")
            assert "fx.echo" in {t["publicName"] for t in table["tools"]}

            restarted = await client.post("/admin/apps/fx/restart")
            assert restarted.status_code == 200
            changes: list[dict[str, Any]] = []
            while not (changes and changes[-1]["state"] == "Running"):
                message = await next_message(ws)
                assert message["seq"] == seen[-1]["seq"] + 1
                seen.append(message)
                if message["type"] == "app" and message["app"]["id"] == "fx":
                    changes.append(message["app"])
            assert changes[0]["state"] != "Running"  # it went down first
            assert changes[-1]["pid"] != states["fx"]["pid"]


async def test_events_need_the_token_and_a_good_origin(project: Project) -> None:
    write(project, f'always_require_auth = true\ntoken = "{TOKEN}"', grocery=False)
    async with supervisor_running(project) as supervisor:
        url = f"ws://127.0.0.1:{supervisor.port}/admin/events"
        refusals = [
            [],  # no token
            [(b"authorization", b"Bearer wrong")],
            [(b"authorization", f"Bearer {TOKEN}".encode()), (b"origin", b"http://evil.example")],
            # the sandbox origin is never one the admin API answers
            [
                (b"authorization", f"Bearer {TOKEN}".encode()),
                (b"origin", f"http://127.0.0.1:{supervisor.port + 1}".encode()),
            ],
        ]
        for headers in refusals:
            with pytest.raises((ConnectionRejected, HandshakeError)):
                async with open_websocket_url(url, extra_headers=headers):
                    pass
        own = f"http://127.0.0.1:{supervisor.port}".encode()
        good = [(b"authorization", f"Bearer {TOKEN}".encode()), (b"origin", own)]
        async with open_websocket_url(url, extra_headers=good) as ws:
            assert (await next_message(ws))["seq"] == 1


async def test_a_reader_that_falls_behind_is_dropped_not_waited_for(project: Project) -> None:
    project.manifest("apps/fx", fixture_manifest("fx"))
    async with running(project) as registry:
        inbox = Inbox(size=2)
        registry.mailbox.tell(Watch(inbox))  # type: ignore[arg-type]
        # The replay alone (a state per app, a catalog, the table) is more than 2 facts.
        with trio.fail_after(GUARD_S):
            await inbox.overflowed.wait()
        # Its end is closed: what it holds can be read, then it ends (the connection is
        # dropped) instead of going on with facts missing.
        inbox.facts.receive_nowait()
        inbox.facts.receive_nowait()
        with pytest.raises(trio.EndOfChannel):
            inbox.facts.receive_nowait()
        # The registry goes on answering.
        assert [s.id for s in await ask(registry.mailbox, Snapshot, GUARD_S)] == ["fx"]


async def test_a_running_turn_can_be_cancelled(project: Project) -> None:
    write(project, "", ("fx", ()), grocery=False)
    async with supervisor_running(project) as supervisor, http(supervisor) as client:
        assert (await client.post("/apps/chat/nobody/cancel")).json() == {"cancelled": False}
        payload = body('/call fx.sleep {"seconds": 60}', "cancel-me")
        async with chat_stream(client, payload) as frames:
            kinds = []
            async for frame in frames:
                kinds.append(frame.json())
                if frame.event == "tool":
                    answer = await client.post("/apps/chat/cancel-me/cancel")
                    assert answer.json() == {"cancelled": True}
        assert [k["type"] for k in kinds] == ["session", "tool", "error", "done"]
        assert "cancelled" in kinds[2]["message"]
        # The session goes on.
        again = await chat_data(client, body('/call fx.echo {"text": "after"}', "cancel-me"))
        assert [d["type"] for d in again] == ["session", "tool", "result", "done"]
        assert (await client.post("/apps/chat/bad id/cancel")).status_code == 400


async def test_a_ui_tools_result_carries_its_view(project: Project) -> None:
    write(project, "", ("fx", ()))
    async with supervisor_running(project) as supervisor, http(supervisor) as client:
        data = await chat_data(
            client, body("/call grocery.show_store_inventory_dashboard {}", "view")
        )
        result = next(d for d in data if d["type"] == "result")
        view = result["view"]
        assert view["appId"] == "grocery-inventory"
        assert view["tool"] == "show_store_inventory_dashboard"
        assert view["resourceUri"].startswith("ui://")
        assert "content" in view["result"]
        plain = await chat_data(client, body('/call fx.echo {"text": "x"}', "view"))
        assert "view" not in next(d for d in plain if d["type"] == "result")


async def test_an_open_events_connection_does_not_hold_the_shutdown(project: Project) -> None:
    write(project, "", ("fx", ()), grocery=False)
    async with supervisor_running(project) as supervisor:
        url = f"ws://127.0.0.1:{supervisor.port}/admin/events"
        async with open_websocket_url(url) as ws:
            await next_message(ws)
            assert await supervisor.stop() == 0
            assert "every app is stopped; exiting" in supervisor.log
            assert "exiting without it" not in supervisor.log


async def test_a_reload_is_told_and_a_new_app_arrives(project: Project) -> None:
    write(project, "", ("fx", ()), grocery=False)
    async with supervisor_running(project) as supervisor, http(supervisor) as client:
        url = f"ws://127.0.0.1:{supervisor.port}/admin/events"
        async with open_websocket_url(url) as ws:
            while (await next_message(ws))["type"] != "toolTable":
                pass
            project.manifest("apps/fy", fixture_manifest("fy"))
            answer = await client.post("/admin/reload")
            assert answer.status_code == 200, answer.text
            seen: list[dict[str, Any]] = []
            while not any(m["type"] == "reloaded" for m in seen):
                seen.append(await next_message(ws))
            reloaded = next(m for m in seen if m["type"] == "reloaded")
            assert reloaded["reload"]["started"] == ["fy"]
            while not any(m["type"] == "app" and m["app"]["id"] == "fy" for m in seen):
                seen.append(await next_message(ws))
