"""Apps that ask during a chat turn's tool call (a real `mcpapps run`, real apps): an elicitation
becomes an `elicitation` event that the person answers with `POST /apps/chat/<id>/answers`;
a sampling request is answered by the agent's model when the app is allowed, and refused with
the reason otherwise. Apps of both eras: tests/apps/handshake_app.py asks with server-to-client
requests, tests/apps/conformance_app.py (on 2026-07-28) with `input_required` results."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.apps.scenario_schemas import USER_INFO_SCHEMA
from tests.support import fake_openai as model_server
from tests.support.asking import answer, asking_project, command, openai_agent, result_text, turn
from tests.support.fake_openai import call, fake_openai, tool_calls
from tests.support.frontdoor import USER, http
from tests.support.helpers import Project
from tests.support.running import supervisor_running
from tests.support.shared import SharedSupervisor, SharedView, shared_supervisor, view_of

# The turns whose questions are answered or cancelled, each in a session of its own, share a
# supervisor of the asking apps (tests/support/shared.py); a shorter timeout or a model of its
# own gets its own.


@pytest.fixture(scope="module")
def _asking(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SharedSupervisor]:
    project = Project(tmp_path_factory.mktemp("asking"))
    asking_project(project)
    yield from shared_supervisor(project)


@pytest.fixture
def asking(_asking: SharedSupervisor) -> Iterator[SharedView]:
    yield from view_of(_asking)


async def test_the_person_answers_an_app_s_question_in_the_chat(asking: SharedView) -> None:
    """The question arrives with the app's own text and schema; a bad answer is a 400 and the
    question still waits; accept, decline and cancel each reach the app, which says so."""
    async with http(asking) as client:
        ask = command("hs.test_elicitation", {"message": "who are you?"})
        async with turn(client, {**ask, "sessionId": "s1"}) as t:
            asked = await t.until("elicitation")
            assert asked == {
                "type": "elicitation",
                "requestId": asked["requestId"],
                "app": "hs",
                "tool": "hs.test_elicitation",
                "message": "who are you?",
                "requestedSchema": USER_INFO_SCHEMA,
            }
            bad = await answer(client, "s1", asked["requestId"], "accept", content={"x": 1})
            assert bad.status_code == 400
            assert "'email' is a required property" in bad.json()["error"]["message"]
            # Values MCP cannot carry (here fields the schema does not name) would fail the
            # app's call: refused here, and the question still waits.
            for extra, said in (
                ({"zzz": {"a": 1}}, "'zzz' is an object"),
                ({"n": [1]}, "'n' is a list holding a number"),
            ):
                content = {**USER, **extra}
                bad = await answer(client, "s1", asked["requestId"], "accept", content=content)
                assert bad.status_code == 400, bad.text
                assert said in bad.json()["error"]["message"]
            wrong = await answer(client, "s1", asked["requestId"], "maybe")
            assert wrong.status_code == 400
            assert "'action' must be one of accept, decline, cancel" in wrong.text
            ok = await answer(client, "s1", asked["requestId"], "accept", content=USER)
            assert ok.status_code == 200, ok.text
            events = await t.rest()
        assert result_text(events) == (
            'User response: action=accept, content={"username": "ada", "email": "ada@example.com"}'
        )
        again = await answer(client, "s1", asked["requestId"], "accept", content=USER)
        assert again.status_code == 409
        assert "it was answered already" in again.json()["error"]["message"]
        unknown = await answer(client, "s1", "q-never-asked", "decline")
        assert unknown.status_code == 404

        for action in ("decline", "cancel"):
            async with turn(client, {**ask, "sessionId": "s1"}) as t:
                asked = await t.until("elicitation")
                assert (await answer(client, "s1", asked["requestId"], action)).status_code == 200
                events = await t.rest()
            assert result_text(events) == f"User response: action={action}, content={{}}"


async def test_a_url_mode_question_shows_its_link(asking: SharedView) -> None:
    ask = {**command("hs.test_elicitation_url", {}), "sessionId": "u"}
    async with http(asking) as client, turn(client, ask) as t:
        asked = await t.until("elicitation")
        assert asked["url"] == "https://example.com/sign-in"
        assert asked["message"] == "Please sign in"
        assert "requestedSchema" not in asked
        ok = await answer(client, "u", asked["requestId"], "accept")
        assert ok.status_code == 200, ok.text
        events = await t.rest()
    assert result_text(events) == "URL response: action=accept"


async def test_a_2026_app_asks_by_input_required_and_gets_the_answer(asking: SharedView) -> None:
    """The conformance app on 2026-07-28 asks by answering `input_required`: the chat asks the
    person and sends the call again with the answer."""
    async with http(asking) as client:
        ask = command("cf.test_elicitation", {"message": "and you?"})
        async with turn(client, {**ask, "sessionId": "m1"}) as t:
            asked = await t.until("elicitation")
            assert asked["app"] == "cf"
            assert asked["requestedSchema"] == USER_INFO_SCHEMA
            ok = await answer(client, "m1", asked["requestId"], "accept", content=USER)
            assert ok.status_code == 200, ok.text
            events = await t.rest()
        assert result_text(events).startswith("User response: action=accept")
        assert '"username": "ada"' in result_text(events)


async def test_two_sessions_questions_never_cross(asking: SharedView) -> None:
    """Two sessions asked at once (one app of each era): a session cannot answer the other's
    question, and each answer reaches its own turn."""
    async with http(asking) as client:
        a_ask = command("hs.test_elicitation", {"message": "A?"})
        b_ask = command("cf.test_elicitation", {"message": "B?"})
        async with turn(client, {**a_ask, "sessionId": "A"}) as a:
            async with turn(client, {**b_ask, "sessionId": "B"}) as b:
                asked_a = await a.until("elicitation")
                asked_b = await b.until("elicitation")
                assert asked_a["requestId"] != asked_b["requestId"]
                crossed = await answer(client, "B", asked_a["requestId"], "decline")
                assert crossed.status_code == 404
                crossed = await answer(client, "A", asked_b["requestId"], "decline")
                assert crossed.status_code == 404
                user_b = {"username": "bea", "email": "bea@example.com"}
                ok_b = await answer(client, "B", asked_b["requestId"], "accept", content=user_b)
                ok_a = await answer(client, "A", asked_a["requestId"], "accept", content=USER)
                assert ok_a.status_code == ok_b.status_code == 200
                b_events = await b.rest()
            a_events = await a.rest()
    assert '"username": "ada"' in result_text(a_events)
    assert '"username": "bea"' in result_text(b_events)


async def test_an_unanswered_question_is_cancelled_at_the_app_s_timeout(
    project: Project,
) -> None:
    """No answer: the question ends as `cancel` before the call's requestTimeoutSeconds, and
    the app acts on it; a late answer is told the question waits no more."""
    asking_project(project, timeout_s=2)
    async with supervisor_running(project) as supervisor, http(supervisor) as client:
        ask = command("hs.test_elicitation", {"message": "anyone?"})
        async with turn(client, {**ask, "sessionId": "t1"}) as t:
            asked = await t.until("elicitation")
            events = await t.rest()
        assert result_text(events) == "User response: action=cancel, content={}"
        late = await answer(client, "t1", asked["requestId"], "accept", content=USER)
        assert late.status_code == 409
        assert "requestTimeoutSeconds" in late.json()["error"]["message"]


async def test_a_cancelled_turn_cancels_its_question(asking: SharedView) -> None:
    async with http(asking) as client:
        ask = command("hs.test_elicitation", {"message": "still there?"})
        async with turn(client, {**ask, "sessionId": "c1"}) as t:
            asked = await t.until("elicitation")
            cancelled = await client.post("/apps/chat/c1/cancel")
            assert cancelled.json() == {"cancelled": True}
            events = await t.rest()
        assert events[-2]["type"] == "error"
        late = await answer(client, "c1", asked["requestId"], "accept", content=USER)
        assert late.status_code == 409
        assert "its turn ended" in late.json()["error"]["message"]


# --- Sampling -----------------------------------------------------------------------------------


VIEW_SAMPLING = {
    "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
    "systemPrompt": "Be brief.",
    "maxTokens": 20,
    "stopSequences": ["END"],
}


async def test_sampling_is_answered_by_the_agent_s_model_when_allowed(project: Project) -> None:
    async with fake_openai() as model:
        asking_project(project, entries={"hs": {"sampling": True}}, agent=openai_agent(model.url))
        model.script(
            tool_calls(call("hs_test_sampling", {"prompt": "name a fruit"}, id="c1")),
            model_server.text("a ", "pear"),
            model_server.text("The app heard: a pear."),
            model_server.text("from the view"),
        )
        async with (
            supervisor_running(project) as supervisor,
            http(supervisor) as client,
        ):
            async with turn(client, {"message": "sample", "sessionId": "p1"}) as t:
                events = await t.rest()
            # What a view asks through the page's MCP client goes the same way.
            from_view = await client.post("/apps/sampling/hs", json=VIEW_SAMPLING)
    assert from_view.status_code == 200, from_view.text
    assert from_view.json() == {
        "role": "assistant",
        "content": {"type": "text", "text": "from the view"},
        "model": "fake-model",
        "stopReason": "endTurn",
    }
    assert model.requests[3]["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "hi"},
    ]
    assert model.requests[3]["stop"] == ["END"]
    [sampled] = [e for e in events if e["type"] == "sampling"]
    assert sampled == {
        "type": "sampling",
        "app": "hs",
        "tool": "hs.test_sampling",
        "maxTokens": 100,
        "text": "a pear",
    }
    assert result_text(events) == "LLM response: a pear"
    request = model.requests[1]  # the turn's first step, the app's request, the second step
    assert request["model"] == "fake-model"
    assert request["messages"] == [{"role": "user", "content": "name a fruit"}]
    assert request["max_tokens"] == 100
    assert "tools" not in request


async def test_sampling_is_refused_by_default_and_with_the_direct_engine(
    project: Project,
) -> None:
    async with fake_openai() as model:
        asking_project(project, agent=openai_agent(model.url))
        model.script(
            tool_calls(call("hs_test_sampling", {"prompt": "x"}, id="c1")),
            model_server.text("It was refused."),
        )
        async with (
            supervisor_running(project) as supervisor,
            http(supervisor) as client,
        ):
            async with turn(client, {"message": "sample", "sessionId": "r1"}) as t:
                events = await t.rest()
            from_view = await client.post("/apps/sampling/hs", json=VIEW_SAMPLING)
            no_app = await client.post("/apps/sampling/nope", json=VIEW_SAMPLING)
        assert len(model.requests) == 2  # the app's requests never reached the model
    assert from_view.status_code == 403
    assert "sampling is off for it" in from_view.json()["error"]["message"]
    # An app that does not exist is not told how to turn sampling on.
    assert no_app.status_code == 404
    assert no_app.json()["error"]["message"] == "there is no app 'nope'"
    assert not [e for e in events if e["type"] == "sampling"]
    text = result_text(events)
    assert text.startswith("Error:")
    assert "sampling is off for it" in text
    assert "[apps.entries.hs]" in text

    asking_project(project, entries={"hs": {"sampling": True}})
    async with supervisor_running(project) as supervisor, http(supervisor) as client:
        async with turn(client, command("hs.test_sampling", {"prompt": "x"})) as t:
            events = await t.rest()
        from_view = await client.post("/apps/sampling/hs", json=VIEW_SAMPLING)
    assert "the direct agent engine has no model" in result_text(events)
    assert from_view.status_code == 403
    assert "the direct agent engine has no model" in from_view.json()["error"]["message"]
