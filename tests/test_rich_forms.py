"""Rich forms (OpenAI form elicitation) over HTTP, against an app built with the OpenAI
extensions SDK (tests/apps/forms_app.py) run by a real `mcpapps run`, in both eras: the host
advertises `extensions["openai/elicitation"].form`, the app's form reaches the chat as an
`elicitation` event marked `richForm` with its whole schema, an answer that breaks it is a 400
naming the field (the app never sees it), a good one reaches the app; a form with an input type
we do not support, or a thumbnail at an http: or javascript: address, is answered unsupported
and never shown."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import trio

from tests.support.asking import answer, command, result_text, turn
from tests.support.forms import ERAS, FORMS_APP, forms_project
from tests.support.frontdoor import app_over_http, http, write_config
from tests.support.helpers import Project
from tests.support.running import GUARD_S, supervisor_running
from tests.support.views import open_view

GOOD = {
    "code": "ABC-12",
    "finish": "zinc",
    "tags": ["urgent", "custom-tag"],
    "part": "cad://parts/spring",
    "extras": ["cad://parts/washer", "cad://parts/hex-bolt"],
    "kit": ["cad://parts/hex-bolt"],
}


async def test_a_rich_form_is_asked_checked_and_answered_in_both_eras(project: Project) -> None:
    forms_project(project)
    async with supervisor_running(project) as supervisor, http(supervisor) as client:
        for app_id in ERAS:
            session = f"s-{app_id}"
            async with turn(
                client, {**command(f"{app_id}.order_parts", {}), "sessionId": session}
            ) as t:
                asked = await t.until("elicitation")
                assert asked["richForm"] is True
                assert asked["message"] == "Your order"
                schema = asked["requestedSchema"]
                assert schema["properties"]["code"]["pattern"] == "^[A-Z]{3}-[0-9]{2}$"
                kit = schema["properties"]["kit"]["x-openai-input"]
                assert kit["selection"] == "implicit"
                request_id = asked["requestId"]
                for content, field, said in (
                    ({**GOOD, "code": "abc"}, "code", "does not match"),
                    ({**GOOD, "finish": "gold"}, "finish", "is not valid"),
                    ({**GOOD, "extras": ["cad://parts/elsewhere"]}, "extras", "not one of the"),
                    ({**GOOD, "part": "cad://parts/nowhere"}, "part", "not one of the"),
                ):
                    bad = await answer(client, session, request_id, "accept", content=content)
                    assert bad.status_code == 400, bad.text
                    message = bad.json()["error"]["message"]
                    assert f"{field}: " in message, message
                    assert said in message, message
                ok = await answer(client, session, request_id, "accept", content=GOOD)
                assert ok.status_code == 200, ok.text
                events = await t.rest()
            text = result_text(events)
            assert text.startswith("accepted "), text
            got = json.loads(text.removeprefix("accepted "))
            assert got["code"] == "ABC-12"
            assert got["extras"] == GOOD["extras"]
            assert got["kit"] == GOOD["kit"]


HOSTILE = {
    "unknown_input": "field 'colour' asks for input type 'color', which is not supported",
    "http_thumbnail": "the thumbnail of option 'bolt' is at http:",
    "script_thumbnail": "the thumbnail of option 'bolt' is at javascript:",
}


async def test_a_form_that_cannot_be_shown_is_answered_unsupported(project: Project) -> None:
    """A handshake-era app gets the refusal as its request's error (and says so); a 2026-07-28
    app's call fails with it (its `input_required` has no slot for an error)."""
    forms_project(project)
    async with supervisor_running(project) as supervisor, http(supervisor) as client:
        for tool, said in HOSTILE.items():
            for app_id in ERAS:
                async with turn(client, command(f"{app_id}.{tool}", {})) as t:
                    events = await t.rest()
                assert not [e for e in events if e["type"] == "elicitation"]  # never shown
                text = result_text(events)
                assert "this host cannot show the form" in text, text
                assert said in text, text
                if app_id == "forms":
                    assert text.startswith("refused: "), text


async def view_call(
    client: httpx2.AsyncClient, view_id: str, name: str, on_question: Any
) -> tuple[list[str], dict[str, Any]]:
    """A view's `tools/call` read as a stream: `on_question(data)` for each `elicitation`
    event; the names of the events and the final JSON-RPC answer."""
    message = {"jsonrpc": "2.0", "id": 7, "method": "tools/call"}
    message["params"] = {"name": name, "arguments": {}}  # type: ignore[assignment]
    names: list[str] = []
    event = ""
    with trio.fail_after(GUARD_S):
        async with client.stream("POST", f"/apps/views/{view_id}/mcp", json=message) as response:
            async for line in response.aiter_lines():
                if line.startswith("event: "):
                    event = line[7:]
                elif line.startswith("data: "):
                    names.append(event)
                    data = json.loads(line[6:])
                    if event == "elicitation":
                        await on_question(data)
                    elif event == "message":
                        return names, data
    raise AssertionError(f"the call ended without a message: {names}")


async def test_a_view_s_call_gets_the_rich_form_and_its_checked_answer(project: Project) -> None:
    """The same form asked during a view's call comes back on that call, marked `richForm`, and
    is answered at the view door under the same check."""
    forms_project(project)
    async with supervisor_running(project) as supervisor, http(supervisor) as client:
        for app_id in ERAS:
            view = await open_view(client, app_id)
            asked: list[dict[str, Any]] = []

            async def accept(
                question: dict[str, Any], view: str = view, asked: list[Any] = asked
            ) -> None:
                asked.append(question)
                url = f"/apps/views/{view}/answers"
                body = {"requestId": question["requestId"], "action": "accept"}
                content = {**GOOD, "kit": ["cad://parts/spring"]}  # not among the kit's options
                bad = await client.post(url, json={**body, "content": content})
                assert bad.status_code == 400, bad.text
                assert "kit: 'cad://parts/spring' is not one of the" in bad.text
                ok = await client.post(url, json={**body, "content": GOOD})
                assert ok.status_code == 200, ok.text

            names, final = await view_call(client, view, "order_parts", accept)
            assert names == ["elicitation", "message"]
            assert asked[0]["richForm"] is True
            assert "x-openai-input" in asked[0]["requestedSchema"]["properties"]["part"]
            text = final["result"]["content"][0]["text"]
            assert text.startswith("accepted "), text
            assert json.loads(text.removeprefix("accepted "))["kit"] == GOOD["kit"]


async def test_an_app_over_http_asks_with_a_rich_form(project: Project) -> None:
    """`openai/elicitation/create` on the SDK's Streamable HTTP client (the request comes on the
    call's event stream, the answer goes back as a POST) is taken and answered as on stdio."""
    async with app_over_http(FORMS_APP, project.root / "forms-http.log") as port:
        url = f"http://127.0.0.1:{port}/mcp"
        manifest = {"id": "web", "transport": "http", "url": url, "toolNamePrefix": "web."}
        project.manifest("apps/web", manifest)
        write_config(project, {"web": {"protocol": "handshake"}})
        async with supervisor_running(project) as supervisor, http(supervisor) as client:
            async with turn(client, {**command("web.order_parts", {}), "sessionId": "h"}) as t:
                asked = await t.until("elicitation")
                assert asked["richForm"] is True
                ok = await answer(client, "h", asked["requestId"], "accept", content=GOOD)
                assert ok.status_code == 200, ok.text
                events = await t.rest()
            assert result_text(events).startswith("accepted "), result_text(events)
