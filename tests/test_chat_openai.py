"""`/apps/chat` with the `openai` engine, end to end: a real `mcpapps run` pointed at a fake
OpenAI-compatible server on loopback (tests/support/fake_openai.py), real apps behind it.
Every case ends in well-formed SSE: `session` first, `done` last, an `error` frame where due."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from tests.support import fake_openai as model_server
from tests.support.chatting import body, chat
from tests.support.fake_openai import FakeOpenAI, call, fake_openai, tool_calls
from tests.support.frontdoor import http, write
from tests.support.helpers import Project
from tests.support.running import Supervisor, supervisor_running


@contextlib.asynccontextmanager
async def chatting(
    project: Project, max_steps: int = 4
) -> AsyncIterator[tuple[Supervisor, FakeOpenAI]]:
    async with fake_openai() as model:
        agent = (
            f'[agent]\nengine = "openai"\nbase_url = "{model.url}"\nmodel = "fake-model"\n'
            f'api_key_env = "FAKE_OPENAI_KEY"\nmax_steps = {max_steps}\n'
        )
        write(project, "", ("fx", ()), extra=agent)
        env = {"FAKE_OPENAI_KEY": "sk-test"}
        async with supervisor_running(project, extra_env=env) as supervisor:
            yield supervisor, model


def shape(frames: list[Any]) -> list[dict[str, Any]]:
    """The frames' data, after checking the framing every case shares."""
    assert frames[0].event == "session"
    assert frames[-1].event == "done"
    ids = [int(frame.id) for frame in frames]
    assert ids == list(range(1, len(frames) + 1))
    data = [frame.json() for frame in frames]
    assert all(d["type"] == frame.event for d, frame in zip(data, frames, strict=True))
    return data


async def test_a_streamed_answer(project: Project) -> None:
    async with chatting(project) as (supervisor, model), http(supervisor) as client:
        model.script(model_server.text("Hel", "lo", " there"))
        data = shape(await chat(client, body("hi", "s1")))
        saved = (await client.get("/apps/chat/s1")).json()
    assert [d["type"] for d in data] == ["session", "text", "text", "text", "done"]
    assert "".join(d["text"] for d in data if d["type"] == "text") == "Hello there"
    request = model.requests[0]
    assert request["stream"] is True
    assert request["model"] == "fake-model"
    assert request["messages"][-1] == {"role": "user", "content": "hi"}
    assert model.headers[0]["authorization"] == "Bearer sk-test"
    assert saved["messages"] == [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "Hello there"},
    ]


async def test_a_tool_call_round_trip_under_the_alias(project: Project) -> None:
    async with chatting(project) as (supervisor, model), http(supervisor) as client:
        model.script(
            tool_calls(call("fx_echo", {"text": "round trip"}, id="c1")),
            model_server.text("It said round trip."),
        )
        data = shape(await chat(client, body("echo something", "s2")))
    offered = {tool["function"]["name"] for tool in model.requests[0]["tools"]}
    assert {"fx_echo", "grocery_get_stores"} <= offered
    assert "grocery_get_store_dashboard_data" not in offered  # app-only
    assert [d["type"] for d in data] == ["session", "tool", "result", "text", "done"]
    assert data[1] == {
        "type": "tool",
        "id": "c1",
        "name": "fx.echo",
        "input": {"text": "round trip"},
    }
    assert data[2] == {"type": "result", "id": "c1", "text": "round trip", "isError": False}
    followup = model.requests[1]["messages"]
    assert followup[-2]["role"] == "assistant"
    assert followup[-2]["tool_calls"][0]["function"]["name"] == "fx_echo"
    assert followup[-1] == {"role": "tool", "tool_call_id": "c1", "content": "round trip"}


async def test_a_tool_error_goes_back_to_the_model(project: Project) -> None:
    async with chatting(project) as (supervisor, model), http(supervisor) as client:
        model.script(
            tool_calls(call("fx_fail", id="bad"), call("nowhere_tool", id="gone")),
            model_server.text("Both failed."),
        )
        data = shape(await chat(client, body("try", "s3")))
    results = [d for d in data if d["type"] == "result"]
    assert [r["isError"] for r in results] == [True, True]
    assert results[0]["text"].startswith("Error: tool 'fx.fail' of app 'fx' failed")
    assert results[1]["text"] == "Error: unknown tool 'nowhere_tool'"
    assert not any(d["type"] == "error" for d in data)
    tool_messages = [m for m in model.requests[1]["messages"] if m["role"] == "tool"]
    assert [m["content"] for m in tool_messages] == [r["text"] for r in results]
    assert not any("isError" in m for m in tool_messages)  # only the saved session keeps it


async def test_the_step_limit(project: Project) -> None:
    async with chatting(project, max_steps=2) as (supervisor, model), http(supervisor) as client:
        model.script(*(tool_calls(call("fx_echo", {"text": str(n)})) for n in range(5)))
        data = shape(await chat(client, body("loop", "s4")))
        saved = (await client.get("/apps/chat/s4")).json()
    assert len(model.requests) == 2
    assert [d["type"] for d in data].count("result") == 2
    assert data[-2]["type"] == "error"
    assert "agent.max_steps" in data[-2]["message"]
    # What was done before the limit is kept.
    assert [m["role"] for m in saved["messages"]] == ["user", *["assistant", "tool"] * 2]


async def test_a_server_that_sends_garbage(project: Project) -> None:
    async with chatting(project) as (supervisor, model), http(supervisor) as client:
        model.script(
            model_server.raw("data: this is not json\n\n"),
            model_server.http_error(500, "the model is on fire"),
            model_server.text("fine again"),
        )
        garbage = shape(await chat(client, body("one", "s5")))
        failed = shape(await chat(client, body("two", "s5")))
        fine = shape(await chat(client, body("three", "s5")))
    assert [d["type"] for d in garbage] == ["session", "error", "done"]
    assert model.url.removesuffix("/v1") in garbage[1]["message"]
    assert [d["type"] for d in failed] == ["session", "error", "done"]
    assert "500" in failed[1]["message"]
    assert "the model is on fire" in failed[1]["message"]
    assert [d["type"] for d in fine] == ["session", "text", "done"]


async def test_the_conversation_is_resumed_after_a_restart(project: Project) -> None:
    async with chatting(project) as (supervisor, model), http(supervisor) as client:
        model.script(model_server.text("First answer."))
        await chat(client, body("first", "kept"))
    # A new supervisor on the same state dir, and a new model server.
    async with fake_openai(model_server.text("Second answer.")) as model:
        config = project.config_path.read_text()
        start = config.index("base_url = ")
        end = config.index("\n", start)
        project.config(config[:start] + f'base_url = "{model.url}"' + config[end:])
        env = {"FAKE_OPENAI_KEY": "sk-test"}
        async with supervisor_running(project, extra_env=env) as supervisor, http(supervisor) as c:
            shape(await chat(c, body("second", "kept")))
    sent = [m for m in model.requests[0]["messages"] if m["role"] != "system"]
    assert sent == [
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": "First answer."},
        {"role": "user", "content": "second"},
    ]
