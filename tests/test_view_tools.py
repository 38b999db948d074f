"""The tools a view registers, on the server: a view's lease holds them (checked), the chat
session that opened the view sees them (`view.<appId>.<name>`) and no other, a call of the model
waits for the page, which fetches it and posts the view's answer; a restored view offers none,
and a closed one's are gone. Over HTTP against a real `mcpapps run`, the page played by the test
(the browser side is tests/test_view_live.py)."""

from __future__ import annotations

from typing import Any

import trio

from tests.support.chatting import body, chat_data
from tests.support.frontdoor import http, write
from tests.support.helpers import Project
from tests.support.running import supervisor_running
from tests.support.views import open_view

PICK = {"name": "pick", "description": "Pick a colour", "inputSchema": {"type": "object"}}


def said(events: list[dict[str, Any]]) -> str:
    return "".join(e.get("text", "") for e in events if e["type"] in ("text", "result"))


async def test_a_view_s_tools_reach_its_own_chat_only(project: Project) -> None:
    write(project, "", ("fx", ("--app-only",)), grocery=False)
    async with supervisor_running(project) as supervisor, http(supervisor) as client:
        view = await open_view(client, "fx", sessionId="vt-1")
        base = f"/apps/views/{view}/tools"
        bad = await client.put(base, json={"tools": [{"name": "no spaces allowed"}]})
        assert bad.status_code == 400
        schema = await client.put(
            base, json={"tools": [{"name": "x", "inputSchema": {"type": "string"}}]}
        )
        assert schema.status_code == 400
        assert "inputSchema" in schema.json()["error"]["message"]
        offered = await client.put(base, json={"tools": [PICK]})
        assert offered.json() == {"offered": 1}

        listed = said(await chat_data(client, body("/tools", "vt-1")))
        assert "view.fx.pick: [A tool of the open view of app 'fx'" in listed
        assert "view.fx" not in said(await chat_data(client, body("/tools", "vt-2")))

        # The model's call waits for the page, which performs it in the view and answers.
        answered: list[dict[str, Any]] = []

        async def model_calls() -> None:
            turn = body('/call view.fx.pick {"color": "teal"}', "vt-1")
            answered.extend(await chat_data(client, turn))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(model_calls)
            asked: dict[str, Any] | None = None
            while asked is None:
                asked = (await client.post(f"{base}/next")).json()["call"]
            assert asked["name"] == "pick"
            assert asked["arguments"] == {"color": "teal"}
            unknown = await client.post(f"{base}/calls/nope", json={"result": {"content": []}})
            assert unknown.status_code == 404
            assert unknown.json()["error"]["code"] == "unknown_call"
            result = {"content": [{"type": "text", "text": "the board is teal"}]}
            done = await client.post(f"{base}/calls/{asked['id']}", json={"result": result})
            assert done.json() == {"answered": True}
        [finished] = [e for e in answered if e["type"] == "result"]
        assert finished["text"] == "the board is teal"
        assert finished["isError"] is False

        # Another session reaches none of them.
        other = said(await chat_data(client, body('/call view.fx.pick {"color": "red"}', "vt-2")))
        assert "no view this chat has open offers a tool 'view.fx.pick'" in other

        # A restored view offers nothing and waits for no call.
        restored = await open_view(client, "fx", sessionId="vt-1", restored=True)
        kept = await client.put(f"/apps/views/{restored}/tools", json={"tools": [PICK]})
        assert kept.json() == {"offered": 0}
        waiting = await client.post(f"/apps/views/{restored}/tools/next")
        assert waiting.status_code == 409
        assert waiting.json()["error"]["code"] == "inactive"

        # Closed: its tools are gone from its chat too.
        await client.delete(f"/apps/views/{view}")
        gone = said(await chat_data(client, body('/call view.fx.pick {"color": "blue"}', "vt-1")))
        assert "no view this chat has open offers" in gone
        assert (await client.post(f"{base}/next")).status_code == 404
