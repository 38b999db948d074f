"""An app that asks during a tool call an app view made (a real `mcpapps run`, the real
handshake-era app): its question comes back on the view's call as an `elicitation` event, the
page answers it with `POST /apps/views/<viewId>/answers` (checked against the app's schema), and
closing the view cancels it. Sampling follows the chat's rule: refused unless the app is allowed."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import trio

from tests.apps.scenario_schemas import USER_INFO_SCHEMA
from tests.support import fake_openai as model_server
from tests.support.asking import asking_project, openai_agent
from tests.support.fake_openai import fake_openai
from tests.support.frontdoor import USER, http
from tests.support.helpers import Project
from tests.support.running import GUARD_S, supervisor_running
from tests.support.views import open_view, rpc

NEVER = {"hs": {"approval": "never"}}


async def asking_call(
    client: httpx2.AsyncClient,
    view_id: str,
    name: str,
    arguments: dict[str, Any],
    on_question: Any,
) -> tuple[list[str], dict[str, Any]]:
    """A view's call read as a stream: `on_question(question)` for each `elicitation` event;
    the names of the events and the final JSON-RPC answer."""
    message = {"jsonrpc": "2.0", "id": 3, "method": "tools/call"}
    message["params"] = {"name": name, "arguments": arguments}  # type: ignore[assignment]
    names: list[str] = []
    event = ""
    with trio.fail_after(GUARD_S):
        async with client.stream("POST", f"/apps/views/{view_id}/mcp", json=message) as response:
            assert response.headers["content-type"].startswith("text/event-stream")
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


def text_of(answer: dict[str, Any]) -> str:
    return answer["result"]["content"][0]["text"]


async def test_a_view_s_call_relays_the_app_s_question(project: Project) -> None:
    asking_project(project, entries=NEVER)
    async with supervisor_running(project) as supervisor, http(supervisor) as client:
        view = await open_view(client, "hs")
        other = await open_view(client, "hs")
        asked: list[dict[str, Any]] = []

        async def accept(question: dict[str, Any]) -> None:
            asked.append(question)
            url = f"/apps/views/{view}/answers"
            rid = question["requestId"]
            bad = await client.post(url, json={"requestId": rid, "action": "accept"})
            assert bad.status_code == 400
            assert "'email' is a required property" in bad.json()["error"]["message"]
            odd = {**USER, "note": [1, 2]}  # a value MCP cannot carry would fail the call
            bad = await client.post(
                url, json={"requestId": rid, "action": "accept", "content": odd}
            )
            assert bad.status_code == 400
            assert "'note' is a list holding a number" in bad.json()["error"]["message"]
            elsewhere = f"/apps/views/{other}/answers"
            stolen = await client.post(elsewhere, json={"requestId": rid, "action": "decline"})
            assert stolen.status_code == 404  # another view cannot answer it
            ok = await client.post(
                url, json={"requestId": rid, "action": "accept", "content": USER}
            )
            assert ok.status_code == 200, ok.text

        names, final = await asking_call(
            client, view, "test_elicitation", {"message": "who are you?"}, accept
        )
        assert names == ["elicitation", "message"]
        assert asked == [
            {
                "requestId": asked[0]["requestId"],
                "app": "hs",
                "tool": "test_elicitation",
                "message": "who are you?",
                "requestedSchema": USER_INFO_SCHEMA,
            }
        ]
        assert text_of(final) == (
            'User response: action=accept, content={"username": "ada", "email": "ada@example.com"}'
        )
        again = await client.post(
            f"/apps/views/{view}/answers",
            json={"requestId": asked[0]["requestId"], "action": "accept", "content": USER},
        )
        assert again.status_code == 409
        unknown = await client.post(
            f"/apps/views/{view}/answers", json={"requestId": "q-none", "action": "decline"}
        )
        assert unknown.status_code == 404

        # A call whose app asks nothing is still a plain JSON answer.
        plain = await rpc(client, view, "tools/call", {"name": "test_simple_text"})
        assert "result" in plain

        # The page tears the view down while the question waits: the app is told `cancel`.
        async def close(question: dict[str, Any]) -> None:
            closed = await client.delete(f"/apps/views/{view}")
            assert closed.json() == {"closed": True}

        names, final = await asking_call(
            client, view, "test_elicitation", {"message": "still there?"}, close
        )
        assert text_of(final) == "User response: action=cancel, content={}"


async def test_a_view_s_sampling_is_refused_by_default(project: Project) -> None:
    asking_project(project, entries=NEVER)
    async with supervisor_running(project) as supervisor, http(supervisor) as client:
        view = await open_view(client, "hs")
        answer = await rpc(
            client, view, "tools/call", {"name": "test_sampling", "arguments": {"prompt": "x"}}
        )
    text = json.dumps(answer)
    assert "sampling is off for it" in text, text
    assert "[apps.entries.hs]" in text


async def test_a_view_s_sampling_is_answered_by_the_model_when_allowed(project: Project) -> None:
    async with fake_openai() as model:
        entries = {"hs": {"sampling": True, "approval": "never"}}
        asking_project(project, entries=entries, agent=openai_agent(model.url))
        model.script(model_server.text("a ", "plum"))
        async with supervisor_running(project) as supervisor, http(supervisor) as client:
            view = await open_view(client, "hs")
            arguments = {"prompt": "name a fruit"}
            answer = await rpc(
                client, view, "tools/call", {"name": "test_sampling", "arguments": arguments}
            )
    assert text_of(answer) == "LLM response: a plum"
    assert model.requests[0]["messages"] == [{"role": "user", "content": "name a fruit"}]


async def test_an_unanswered_view_question_is_cancelled_in_time(project: Project) -> None:
    asking_project(project, entries=NEVER, agent="\n[views]\napproval_timeout_s = 1\n")
    async with supervisor_running(project) as supervisor, http(supervisor) as client:
        view = await open_view(client, "hs")

        async def ignore(question: dict[str, Any]) -> None:
            pass

        arguments = {"message": "anyone?"}
        names, final = await asking_call(client, view, "test_elicitation", arguments, ignore)
    assert names == ["elicitation", "message"]
    assert text_of(final) == "User response: action=cancel, content={}"


async def test_a_2026_app_s_input_required_is_asked_of_the_page_and_the_call_sent_again(
    project: Project,
) -> None:
    """The conformance app on 2026-07-28 asks by answering `input_required`: the view door puts
    the question to the page as an `elicitation` event, as for a handshake-era app, and sends
    the call again with the answer; the page never sees `input_required`. A question nobody
    may answer (sampling, off by default) is a clear error, not an `input_required` result."""
    entries = {"cf": {"protocol": "stateless", "approval": "never"}}
    asking_project(project, entries=entries)
    async with supervisor_running(project) as supervisor, http(supervisor) as client:
        view = await open_view(client, "cf")
        asked: list[dict[str, Any]] = []

        async def accept(question: dict[str, Any]) -> None:
            asked.append(question)
            answer = {"requestId": question["requestId"], "action": "accept", "content": USER}
            ok = await client.post(f"/apps/views/{view}/answers", json=answer)
            assert ok.status_code == 200, ok.text

        arguments = {"message": "who are you?"}
        names, final = await asking_call(client, view, "test_elicitation", arguments, accept)
        assert names == ["elicitation", "message"]
        assert [(q["app"], q["tool"], q["message"]) for q in asked] == [
            ("cf", "test_elicitation", "who are you?")
        ]
        assert asked[0]["requestedSchema"] == USER_INFO_SCHEMA
        assert text_of(final).startswith("User response: action=accept")
        assert '"username": "ada"' in text_of(final)

        refused = await rpc(
            client, view, "tools/call", {"name": "test_sampling", "arguments": {"prompt": "x"}}
        )
    assert "input_required" not in json.dumps(refused)
    message = refused["error"]["message"]
    assert message.startswith("tool 'test_sampling' of app 'cf' asked for input:"), message
    assert "sampling is off for it" in message
