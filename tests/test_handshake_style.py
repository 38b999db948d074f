"""An app written in the handshake style (tests/apps/handshake_app.py: its tools send sampling and
elicitation requests from inside the call) behind the front door with the default config
(`protocol = "auto"`): clients of both eras get through `/apps/mcp/<appId>` and `/mcp` what a
client gets from the app directly.

The suite and the TypeScript SDK client speak the handshake era; the Python SDK client is run
in both eras. A 2026-07-28 client is asked by `input_required` results that the front door makes
from the app's requests (web/mcpdoor/roundtrips.py)."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mcp
import mcp_types as types
import pytest
import trio

from actors.apps.httpclients import http_transport
from tests.support import forkserver
from tests.support.conformance import run_conformance
from tests.support.frontdoor import (
    EXPECTED,
    HANDSHAKE_APP,
    SUITE_TIMEOUT_S,
    USER,
    app_over_http,
    conformance_through,
    python_client,
    write_config,
)
from tests.support.helpers import Project
from tests.support.officialclients import ts_client
from tests.support.running import GUARD_S, supervisor_running
from tests.support.shared import SharedSupervisor, SharedView, shared_supervisor, view_of

# The scenarios whose tools ask the client from inside the call.
ASKING = frozenset(
    {
        "tools-call-sampling",
        "tools-call-elicitation",
        "elicitation-sep1034-defaults",
        "elicitation-sep1330-enums",
    }
)
# The scenarios about what `/mcp` serves: no logging/setLevel, completions or subscriptions.
ON_MCP = ASKING | {
    "server-initialize",
    "ping",
    "tools-list",
    "tools-call-simple-text",
    "prompts-list",
    "prompts-get-simple",
    "resources-list",
    "resources-read-text",
    "dns-rebinding-protection",
    "server-sse-multiple-streams",
}


def handshake_project(project: Project, protocol: str | None = None, prefix: str = "hs.") -> None:
    project.manifest(
        "apps/hs",
        {
            "id": "hs",
            "command": forkserver.python(),
            "arguments": [str(HANDSHAKE_APP)],
            "toolNamePrefix": prefix,
        },
    )
    write_config(project, {"hs": {"protocol": protocol}} if protocol else None)


# The clients that ask the app and answer its questions share a supervisor of the app
# (tests/support/shared.py); a test that changes the app's timeout has its own.


@pytest.fixture(scope="module")
def _hs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SharedSupervisor]:
    project = Project(tmp_path_factory.mktemp("handshake"))
    handshake_project(project)
    yield from shared_supervisor(project)


@pytest.fixture
def hs(_hs: SharedSupervisor) -> Iterator[SharedView]:
    yield from view_of(_hs)


async def texts(client: mcp.Client, prefix: str) -> dict[str, str]:
    """What each asking tool answers this client."""
    found = {}
    for name, arguments in (
        ("test_sampling", {"prompt": "hello"}),
        ("test_elicitation", {"message": "who are you?"}),
        ("ask_twice", {}),
        ("test_simple_text", {}),
    ):
        result = await client.call_tool(prefix + name, arguments)
        assert not result.is_error, (prefix + name, result)
        found[name] = result.content[0].text
    return found


async def test_the_suite_passes_through_the_front_door_as_directly(
    project: Project, tmp_path: Path
) -> None:
    """Every scenario the app passes directly (on its own HTTP endpoint) passes through
    `/apps/mcp/hs` with the default config, the asking ones included: the app is reached over
    the handshake, which it offers. So does every one of them that `/mcp` serves (it has no
    logging/setLevel, completions or subscriptions), with the app offering its names
    unprefixed there, as the scenarios call them."""
    async with app_over_http(HANDSHAKE_APP, tmp_path / "app.log") as port:
        run = functools.partial(
            run_conformance, f"http://localhost:{port}/mcp", timeout=SUITE_TIMEOUT_S
        )
        direct = await trio.to_thread.run_sync(run)
    assert direct.passed >= ASKING, direct.summary()

    handshake_project(project, prefix="")
    async with supervisor_running(project) as supervisor:
        through = await conformance_through(supervisor, "hs")
        url = f"http://localhost:{supervisor.port}/mcp"
        run = functools.partial(run_conformance, url, timeout=SUITE_TIMEOUT_S)
        aggregate = await trio.to_thread.run_sync(run)
    assert "protocol 2025-11-25)" in supervisor.log
    print(
        f"direct {len(direct.passed)}, /apps/mcp/hs {len(through.passed)},"
        f" /mcp {len(aggregate.passed)}"
    )
    missing = direct.passed - through.passed
    assert not missing, f"{through.summary()}\n\nsupervisor log:\n{supervisor.log[-6000:]}"
    missing = (direct.passed & ON_MCP) - aggregate.passed
    assert not missing, f"{aggregate.summary()}\n\nsupervisor log:\n{supervisor.log[-6000:]}"
    assert aggregate.passed >= ASKING


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_python_clients_of_both_eras_on_both_endpoints(hs: SharedView, mode: str) -> None:
    """The Python SDK client, in either era, calls the asking tools on `/apps/mcp/hs` and (by
    public name) on `/mcp`, answers the app's questions, and reads the app's answers exactly
    as a handshake-era client of the app itself does."""
    supervisor = hs
    for path, prefix in (("/apps/mcp/hs", ""), ("/mcp", "hs.")):
        async with python_client(supervisor.url(path), mode) as client:
            assert client.protocol_version == ("2025-11-25" if mode == "legacy" else "2026-07-28")
            assert await texts(client, prefix) == EXPECTED, (mode, path)


async def test_the_app_itself_gives_the_same_answers(tmp_path: Path) -> None:
    """The baseline of the test above: the app on its own HTTP endpoint, a handshake-era client
    (a 2026-07-28 client cannot be asked by this app directly: it has no back-channel)."""
    async with app_over_http(HANDSHAKE_APP, tmp_path / "app.log") as port:
        url = f"http://127.0.0.1:{port}/mcp"
        async with python_client(url, "legacy") as client:
            assert await texts(client, "") == EXPECTED
        async with python_client(url, "2026-07-28") as client:
            with pytest.raises(mcp.MCPError) as refused:
                await client.call_tool("test_sampling", {"prompt": "hello"})
            assert "back-channel" in str(refused.value)


async def test_ts_client_answers_the_app_on_both_endpoints(hs: SharedView) -> None:
    """The TypeScript SDK client (handshake era), declaring sampling and elicitation, is asked
    by the app through `/apps/mcp/hs` and `/mcp` and gets the app's answers."""
    supervisor = hs
    answers = {
        "sampling": {
            "role": "assistant",
            "content": {"type": "text", "text": "from ts"},
            "model": "ts-model",
        },
        "elicitation": {"action": "accept", "content": USER},
    }
    for path, prefix in (("/apps/mcp/hs", ""), ("/mcp", "hs.")):
        async with ts_client(supervisor.url(path), answers=answers) as client:
            sampled = await client.result(
                "call_tool", name=f"{prefix}test_sampling", arguments={"prompt": "x"}
            )
            assert sampled["content"][0]["text"] == "LLM response: from ts", path
            elicited = await client.result(
                "call_tool", name=f"{prefix}test_elicitation", arguments={"message": "m"}
            )
            assert elicited["content"][0]["text"] == EXPECTED["test_elicitation"], path


async def test_a_2026_client_that_does_not_answer_leaves_nothing_waiting(
    project: Project,
) -> None:
    """A 2026-07-28 client that gets `input_required` and never retries: the app stops waiting
    at its requestTimeoutSeconds, and a late retry is told the state is no longer awaited."""
    handshake_project(project)
    project.manifest(
        "apps/hs",
        {
            "id": "hs",
            "command": forkserver.python(),
            "arguments": [str(HANDSHAKE_APP)],
            "toolNamePrefix": "hs.",
            "requestTimeoutSeconds": 1,
        },
    )
    async with supervisor_running(project) as supervisor:
        url = supervisor.url("/apps/mcp/hs")
        async with python_client(url, "2026-07-28") as client:
            session = client.session  # below the client's own retries: none is sent
            raw = await session.send_request(
                types.CallToolRequest(
                    params=types.CallToolRequestParams(
                        name="test_elicitation", arguments={"message": "m"}
                    )
                ),
                types.InputRequiredResult,
            )
            [key] = raw.input_requests
            assert raw.input_requests[key].method == "elicitation/create"
            await supervisor.wait_for_log("was asked elicitation/create for test_elicitation")
            with pytest.raises(mcp.MCPError) as late:
                await session.send_request(
                    types.CallToolRequest(
                        params=types.CallToolRequestParams(
                            name="test_elicitation",
                            arguments={"message": "m"},
                            input_responses={key: {"action": "accept", "content": USER}},
                            request_state=raw.request_state,
                        )
                    ),
                    types.CallToolResult,
                )
            assert "not awaited" in str(late.value)


async def test_a_client_without_the_capability_is_not_asked(hs: SharedView) -> None:
    """A 2026-07-28 client that declared no elicitation capability is not asked: the app's
    question is refused, and the call fails with the app's own error about it."""
    supervisor = hs
    url = supervisor.url("/apps/mcp/hs")
    async with mcp.Client(http_transport(url, {}, GUARD_S), mode="2026-07-28") as client:
        with pytest.raises(mcp.MCPError) as refused:
            await client.call_tool("test_elicitation", {"message": "m"})
        assert "did not declare the elicitation capability" in str(refused.value)
        assert await client.call_tool("test_simple_text", {})


async def test_a_retry_must_answer_the_question_it_was_given(hs: SharedView) -> None:
    """A 2026-07-28 retry with our `requestState` must name the same tool and carry the answer
    under the key it was given; a wrong retry is refused and the question still waits, so the
    right retry then completes the call."""
    supervisor = hs
    url = supervisor.url("/apps/mcp/hs")
    async with python_client(url, "2026-07-28") as client:
        session = client.session  # below the client's own retries

        async def call(name: str, **fields: Any) -> Any:
            params = types.CallToolRequestParams(name=name, arguments={"message": "m"}, **fields)
            return await session.send_request(
                types.CallToolRequest(params=params), types.CallToolResult
            )

        asked = await session.send_request(
            types.CallToolRequest(
                params=types.CallToolRequestParams(
                    name="test_elicitation", arguments={"message": "m"}
                )
            ),
            types.InputRequiredResult,
        )
        [key] = asked.input_requests
        answer = {key: {"action": "accept", "content": USER}}
        state = asked.request_state
        with pytest.raises(mcp.MCPError) as wrong_tool:
            await call("test_sampling", input_responses=answer, request_state=state)
        assert "belongs to a request for 'test_elicitation'" in str(wrong_tool.value)
        with pytest.raises(mcp.MCPError) as no_answer:
            await call("test_elicitation", input_responses={}, request_state=state)
        assert f"no answer under inputResponses['{key}']" in str(no_answer.value)
        done = await call("test_elicitation", input_responses=answer, request_state=state)
        assert done.content[0].text == EXPECTED["test_elicitation"]
