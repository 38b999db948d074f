"""The openai engine over real HTTP, against the fake chat-completions server, with
the bundled grocery app running under a real registry behind the tool bridge."""

from __future__ import annotations

import itertools
import json
import shutil
import sys
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import pytest
import trio

from actors.chat.bridge import ToolBridge
from actors.chat.openai_engine import SYSTEM_PROMPT, OpenAIEngine
from actors.chat.partial import PARTIAL_MAX, partial_arguments
from actors.chat.turns import (
    Event,
    Message,
    TextPiece,
    ToolFinished,
    ToolInputPartial,
    ToolStarted,
    TurnFailed,
    UserTurn,
)
from actors.runtime import Mailbox
from supervisor.model.config import AgentConfig
from supervisor.model.lifecycle import AppState
from tests.support.fake_openai import (
    FakeOpenAI,
    broken,
    call,
    cut_short,
    fake_openai,
    http_error,
    raw,
    text,
    tool_calls,
)
from tests.support.helpers import Project, free_port, wait_for_port
from tests.support.running import (
    GROCERY,
    GROCERY_APP_ONLY,
    GROCERY_TOOLS,
    GUARD_S,
    bridge,
    running,
    wait_for,
)

FAKE_OPENAI = Path(__file__).parent / "support" / "fake_openai.py"


@pytest.fixture
async def tools(project: Project) -> AsyncIterator[ToolBridge]:
    """The bridge to a registry running the bundled grocery app, its tools listed."""
    shutil.copytree(
        GROCERY,
        project.root / "apps" / "grocery-inventory",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    async with running(project) as registry:
        await wait_for(registry, "grocery-inventory", AppState.RUNNING)
        b = bridge(registry)
        with trio.fail_after(GUARD_S):
            while not (await b.tools()).tools:
                await trio.sleep(0.02)
        yield b


@pytest.fixture
async def model() -> AsyncIterator[FakeOpenAI]:
    async with fake_openai() as server:
        yield server


def engine(
    tools: ToolBridge, model: FakeOpenAI, *, api_key: str | None = None, max_steps: int = 8
) -> OpenAIEngine:
    return OpenAIEngine(
        tools, base_url=model.url, model="fake-model", api_key=api_key, max_steps=max_steps
    )


async def turn(
    engine: OpenAIEngine, user: UserTurn | str = "hi", history: Sequence[Message] = ()
) -> tuple[list[Event], list[Message]]:
    events: list[Event] = []
    with trio.fail_after(GUARD_S):
        added = await engine.run_turn(
            history, user if isinstance(user, UserTurn) else UserTurn(user), events.append
        )
    return events, added


def errors(events: Sequence[Event]) -> list[str]:
    return [e.message for e in events if isinstance(e, TurnFailed)]


# --- Answers --------------------------------------------------------------------------------------


async def test_a_streamed_answer_arrives_piece_by_piece(
    tools: ToolBridge, model: FakeOpenAI
) -> None:
    model.script(text("Hel", "lo, ", "world"))
    events, added = await turn(engine(tools, model), "hi there")

    assert events == [TextPiece("Hel"), TextPiece("lo, "), TextPiece("world")]
    assert added == [{"role": "assistant", "content": "Hello, world"}]
    [request] = model.requests
    assert request["model"] == "fake-model"
    assert request["stream"] is True
    assert request["messages"] == [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": "hi there"},
    ]
    assert "authorization" not in model.headers[0]


async def test_every_model_visible_tool_is_offered_under_its_alias(
    tools: ToolBridge, model: FakeOpenAI
) -> None:
    model.script(text("ok"))
    await turn(engine(tools, model))

    offered = {t["function"]["name"]: t for t in model.requests[0]["tools"]}
    assert set(offered) == {f"grocery_{name}" for name in GROCERY_TOOLS - GROCERY_APP_ONLY}
    stores = (await tools.tools()).find("grocery.get_stores")
    assert stores is not None
    assert offered["grocery_get_stores"] == {
        "type": "function",
        "function": {
            "name": "grocery_get_stores",
            "description": stores.description,
            "parameters": stores.input_schema,
        },
    }


async def test_history_comes_first_and_ui_events_are_marked_data(
    tools: ToolBridge, model: FakeOpenAI
) -> None:
    history = [
        {"role": "user", "content": "which stores are there?"},
        {"role": "assistant", "content": "Three."},
    ]
    user = UserTurn("and now?", ({"tool": "grocery.adjust_stock", "args": {"delta": 2}},))
    model.script(text("Fine."))
    _, added = await turn(engine(tools, model), user, history)

    messages = model.requests[0]["messages"]
    assert messages == [{"role": "system", "content": SYSTEM_PROMPT}, *history, user.message()]
    assert "<app-events>" in messages[-1]["content"]
    assert added == [{"role": "assistant", "content": "Fine."}]


async def test_calls_saved_under_public_names_are_sent_under_aliases(
    tools: ToolBridge, model: FakeOpenAI
) -> None:
    # As the direct engine saves them: a session may go on with the openai engine.
    function = {"name": "grocery.get_stores", "arguments": "{}"}
    asked = {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "d1", "type": "function", "function": function}],
    }
    history = [
        {"role": "user", "content": "/call grocery.get_stores {}"},
        asked,
        {"role": "tool", "tool_call_id": "d1", "content": "[]", "isError": False},
    ]
    model.script(text("ok"))
    await turn(engine(tools, model), "go on", history)

    # isError is the saved session's, never the model's.
    [result] = [m for m in model.requests[0]["messages"] if m["role"] == "tool"]
    assert result == {"role": "tool", "tool_call_id": "d1", "content": "[]"}
    [sent] = [m for m in model.requests[0]["messages"] if m.get("tool_calls")]
    assert sent["tool_calls"][0]["function"] == {"name": "grocery_get_stores", "arguments": "{}"}
    assert history[1] is asked
    assert asked["tool_calls"][0]["function"]["name"] == "grocery.get_stores"


async def test_the_api_key_is_sent_as_a_bearer_token(tools: ToolBridge, model: FakeOpenAI) -> None:
    model.script(text("ok"))
    agent = AgentConfig(engine="openai", base_url=model.url, model="m", api_key_env="MODEL_KEY")
    await turn(OpenAIEngine.from_config(agent, tools, {"MODEL_KEY": "sk-test"}))

    assert model.headers[0]["authorization"] == "Bearer sk-test"


def test_a_missing_api_key_variable_stops_startup_naming_it() -> None:
    agent = AgentConfig(
        engine="openai", base_url="http://127.0.0.1:1/v1", model="m", api_key_env="MODEL_KEY"
    )
    with pytest.raises(ValueError, match="environment variable MODEL_KEY, which is not set"):
        OpenAIEngine.from_config(agent, ToolBridge(Mailbox()), {"OTHER": "x"})


def test_a_base_url_that_is_not_http_stops_startup() -> None:
    agent = AgentConfig(engine="openai", base_url="localhost:11434/v1", model="m")
    with pytest.raises(ValueError, match=r"agent\.base_url 'localhost:11434/v1' must be an http"):
        OpenAIEngine.from_config(agent, ToolBridge(Mailbox()), {})


# --- Tools ----------------------------------------------------------------------------------------


async def test_a_tool_call_round_trip_through_a_real_tool(
    tools: ToolBridge, model: FakeOpenAI
) -> None:
    model.script(
        tool_calls(call("grocery_get_stores", {"id": 1}, id="call_a"), text="Let me look."),
        text("Store 1 it is."),
    )
    events, added = await turn(engine(tools, model), "what is store 1?")

    expected = await tools.call("grocery.get_stores", {"id": 1})
    assert not expected.startswith("Error:")
    assert events == [
        TextPiece("Let me look."),
        ToolStarted("call_a", "grocery.get_stores", {"id": 1}),
        ToolFinished("call_a", expected, False),
        TextPiece("Store 1 it is."),
    ]
    asked = {
        "role": "assistant",
        "content": "Let me look.",
        "tool_calls": [
            {
                "id": "call_a",
                "type": "function",
                "function": {"name": "grocery_get_stores", "arguments": '{"id": 1}'},
            }
        ],
    }
    # Saved with whether it failed, as the result event says; sent in the chat-completions
    # shape only (a strict server refuses a field it does not know).
    answered = {"role": "tool", "tool_call_id": "call_a", "content": expected}
    saved = {**answered, "isError": False}
    assert added == [asked, saved, {"role": "assistant", "content": "Store 1 it is."}]
    assert len(model.requests) == 2
    assert model.requests[1]["messages"][-2:] == [asked, answered]


async def test_several_calls_in_one_answer_run_in_order(
    tools: ToolBridge, model: FakeOpenAI
) -> None:
    model.script(
        tool_calls(call("grocery_get_stores", id="c1"), call("grocery_get_categories", id="c2")),
        text("Both."),
    )
    events, added = await turn(engine(tools, model))

    started = [(e.id, e.name) for e in events if isinstance(e, ToolStarted)]
    assert started == [("c1", "grocery.get_stores"), ("c2", "grocery.get_categories")]
    assert [m.get("tool_call_id") for m in added] == [None, "c1", "c2", None]
    assert not errors(events)


async def test_failed_tool_calls_are_error_results_and_the_loop_goes_on(
    tools: ToolBridge, model: FakeOpenAI
) -> None:
    model.script(
        tool_calls(call("no_such_tool", id="c1"), call("grocery_get_stores", "{oops", id="c2")),
        text("Sorry."),
    )
    events, added = await turn(engine(tools, model))

    finished = [e for e in events if isinstance(e, ToolFinished)]
    assert [(e.id, e.is_error) for e in finished] == [("c1", True), ("c2", True)]
    assert "no_such_tool" in finished[0].text
    assert finished[1].text.startswith("Error: invalid arguments for tool 'grocery.get_stores'")
    assert ToolStarted("c2", "grocery.get_stores", {}) in events
    assert not errors(events)
    assert added[-1] == {"role": "assistant", "content": "Sorry."}
    tool_messages = [m for m in model.requests[1]["messages"] if m["role"] == "tool"]
    assert [m["content"] for m in tool_messages] == [e.text for e in finished]
    assert not any("isError" in m for m in tool_messages)
    assert [m["isError"] for m in added if m["role"] == "tool"] == [True, True]


async def test_the_step_limit_ends_the_turn_naming_the_setting(
    tools: ToolBridge, model: FakeOpenAI
) -> None:
    model.script(
        tool_calls(call("grocery_get_stores", id="c1")),
        tool_calls(call("grocery_get_stores", id="c2")),
        text("never asked for"),
    )
    events, added = await turn(engine(tools, model, max_steps=2))

    [error] = errors(events)
    assert "agent.max_steps = 2" in error
    assert len(model.requests) == 2
    # Every call asked for has its result: the conversation can go on from here.
    assert [m["role"] for m in added] == ["assistant", "tool", "assistant", "tool"]


# --- Failures -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "said"),
    [
        (raw("data: hello\n\n"), "sent data that is not JSON"),
        (raw('data: {"object": "something else"}\n\n'), "without 'choices'"),
        (raw("<html>Welcome</html>", content_type="text/html"), "sent text/html instead"),
    ],
)
async def test_a_server_that_does_not_speak_the_api_is_named(
    tools: ToolBridge, model: FakeOpenAI, reply: Any, said: str
) -> None:
    model.script(reply)
    events, added = await turn(engine(tools, model))

    [error] = errors(events)
    assert f"the model server at {model.url}/chat/completions" in error
    assert said in error
    assert added == []


async def test_an_http_error_quotes_the_servers_message(
    tools: ToolBridge, model: FakeOpenAI
) -> None:
    model.script(http_error(500, "The model is overloaded."))
    events, added = await turn(engine(tools, model))

    [error] = errors(events)
    assert error == (
        f"the model server at {model.url}/chat/completions answered HTTP 500"
        " Internal Server Error: The model is overloaded."
    )
    assert added == []


async def test_an_error_inside_the_stream_is_quoted(tools: ToolBridge, model: FakeOpenAI) -> None:
    error_event = json.dumps({"error": {"message": "context length exceeded"}})
    model.script(raw(f"data: {error_event}\n\n"))
    events, _ = await turn(engine(tools, model))

    [error] = errors(events)
    assert error.endswith("reported an error: context length exceeded")


async def test_an_unreachable_server_is_named(tools: ToolBridge) -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    e = OpenAIEngine(tools, base_url=url, model="m", api_key=None, max_steps=8)
    events, added = await turn(e)

    [error] = errors(events)
    assert error.startswith(f"cannot reach the model server at {url}/chat/completions")
    assert added == []


@pytest.mark.parametrize(
    ("reply", "said"),
    [
        (cut_short("Hel", "lo"), "ended its stream before the answer was complete"),
        (broken("Hel", "lo"), "the connection to the model server at {url} broke"),
    ],
)
async def test_a_stream_cut_short_keeps_what_was_said(
    tools: ToolBridge, model: FakeOpenAI, reply: Any, said: str
) -> None:
    model.script(reply)
    events, added = await turn(engine(tools, model))

    assert events[:2] == [TextPiece("Hel"), TextPiece("lo")]
    [error] = errors(events)
    assert said.format(url=f"{model.url}/chat/completions") in error
    assert added == [{"role": "assistant", "content": "Hello"}]


async def test_a_failure_after_tool_calls_keeps_them(tools: ToolBridge, model: FakeOpenAI) -> None:
    model.script(tool_calls(call("grocery_get_stores", id="c1")), http_error(503, "down"))
    events, added = await turn(engine(tools, model))

    assert [m["role"] for m in added] == ["assistant", "tool"]
    [error] = errors(events)
    assert "HTTP 503" in error


async def test_whole_tool_calls_without_index_or_done_are_understood(
    tools: ToolBridge, model: FakeOpenAI
) -> None:
    # As Ollama streams them: each call whole in one chunk, no index; a finish_reason and then
    # the end of the body, with no [DONE].
    whole = {"id": "c1", "function": {"name": "grocery_get_stores", "arguments": '{"id": 2}'}}
    chunks = [
        {"choices": [{"index": 0, "delta": {"role": "assistant", "tool_calls": [whole]}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    ]
    model.script(
        raw("".join(f"data: {json.dumps(c)}\n\n" for c in chunks)),
        lambda request: text(f"saw {request['messages'][-1]['tool_call_id']}"),
    )
    events, added = await turn(engine(tools, model))

    assert ToolStarted("c1", "grocery.get_stores", {"id": 2}) in events
    assert not errors(events)
    assert added[-1] == {"role": "assistant", "content": "saw c1"}


async def test_arguments_sent_as_an_object_are_understood(
    tools: ToolBridge, model: FakeOpenAI
) -> None:
    whole = {
        "index": 0,
        "id": "c1",
        "function": {"name": "grocery_get_stores", "arguments": {"id": 2}},
    }
    chunks = [
        {"choices": [{"index": 0, "delta": {"tool_calls": [whole]}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    ]
    model.script(raw("".join(f"data: {json.dumps(c)}\n\n" for c in chunks)), text("ok"))
    events, _ = await turn(engine(tools, model))
    assert ToolStarted("c1", "grocery.get_stores", {"id": 2}) in events
    assert not errors(events)


async def test_text_that_is_not_unicode_is_sent_as_its_escape(
    tools: ToolBridge, model: FakeOpenAI
) -> None:
    model.script(text("fine"))
    events, added = await turn(
        engine(tools, model), "and \ud800", [{"role": "user", "content": "\udfff"}]
    )
    assert not errors(events)
    assert added == [{"role": "assistant", "content": "fine"}]
    sent = model.requests[0]["messages"]
    assert sent[-2:] == [
        {"role": "user", "content": "\udfff"},
        {"role": "user", "content": "and \ud800"},
    ]


async def test_the_fake_server_runs_as_its_own_process(project: Project, tmp_path: Path) -> None:
    # How the end-to-end tests use it with a supervisor in a subprocess: a script file of
    # replies, the requests recorded as JSON lines. With no app running, no tools are offered.
    script = tmp_path / "replies.json"
    script.write_text(json.dumps([{"text": ["one ", "two"]}]))
    record = tmp_path / "requests.jsonl"
    port = free_port()
    command = [sys.executable, str(FAKE_OPENAI), "--port", str(port), "--script", str(script)]
    process = await trio.lowlevel.open_process([*command, "--record", str(record)])
    try:
        await wait_for_port(port, process, GUARD_S)
        async with running(project) as registry:
            url = f"http://127.0.0.1:{port}/v1"
            e = OpenAIEngine(bridge(registry), base_url=url, model="m", api_key=None, max_steps=8)
            events, added = await turn(e)
    finally:
        process.terminate()
        with trio.fail_after(GUARD_S):
            await process.wait()

    assert events == [TextPiece("one "), TextPiece("two")]
    assert added == [{"role": "assistant", "content": "one two"}]
    [request] = [json.loads(line) for line in record.read_text().splitlines()]
    assert "tools" not in request
    assert process.returncode == 0


# --- A tool with a UI: its arguments as they stream -----------------------------------------------


def test_partial_arguments_read_as_far_as_they_go() -> None:
    assert partial_arguments('{"storeId": 1, "label": "Sto') == {"storeId": 1, "label": "Sto"}
    assert partial_arguments('{"ids": [1, 2') == {"ids": [1, 2]}
    assert partial_arguments("{") == {}
    for nothing_yet in ("", "  ", "[1, 2", '"text', "{oops", "x" * (PARTIAL_MAX + 1)):
        assert partial_arguments(nothing_yet) is None


async def test_a_ui_tool_s_arguments_are_emitted_as_they_stream(
    tools: ToolBridge, model: FakeOpenAI
) -> None:
    arguments = {"storeId": 1, "note": "the big one downtown"}
    model.script(
        tool_calls(
            call("grocery_show_store_inventory_dashboard", arguments, id="ui1"),
            call("grocery_get_stores", {"id": 1}, id="plain"),
        ),
        text("Shown."),
    )
    events, _ = await turn(engine(tools, model), "show store 1")
    partial = [e for e in events if isinstance(e, ToolInputPartial)]
    # Only the UI tool's, under its public name, each saying more than the one before, all
    # before the call starts with its whole arguments.
    assert {e.id for e in partial} == {"ui1"}
    assert {e.name for e in partial} == {"grocery.show_store_inventory_dashboard"}
    assert len(partial) >= 2
    assert all(a.input != b.input for a, b in itertools.pairwise(partial))
    assert partial[-1].input == arguments
    started = events.index(ToolStarted("ui1", "grocery.show_store_inventory_dashboard", arguments))
    assert events.index(partial[-1]) < started
