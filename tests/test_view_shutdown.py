"""A view's call held when the supervisor shuts down (a real `mcpapps run`, real apps of both
eras, a model that never answers): it still gets the JSON-RPC answer to its request, an error
that says why, as a chat turn's stream ends with an `error` event. A call waiting for the
person's approval is not run; one that outlived the apps (a question to the page, a sampling
request to the model) is cut short."""

from __future__ import annotations

import contextlib
import json
import signal
from typing import Any

import httpx2
import trio

from tests.support.asking import asking_project, openai_agent
from tests.support.frontdoor import http
from tests.support.helpers import Project
from tests.support.rawhttp import raw_connection, request
from tests.support.running import GUARD_S, supervisor_running
from tests.support.views import open_view
from web.mcpdoor.relay import APP_ERROR

# `hs` (handshake era) holds every view call for approval; `cf` (2026-07-28) holds none.
ENTRIES = {
    "hs": {"approval": "always"},
    "cf": {"protocol": "stateless", "approval": "never", "sampling": True},
}


class HeldCall:
    """A view's tool call read as server-sent events to its end: `held` is set once the event
    of kind `until` came (an approval is given first when `approve` is true)."""

    def __init__(self, view_id: str, rpc_id: int, name: str, until: str, approve: bool) -> None:
        self.view_id, self.rpc_id, self.name = view_id, rpc_id, name
        self.until, self.approve = until, approve
        self.events: list[tuple[str, Any]] = []
        self.held = trio.Event()

    async def read(self, client: httpx2.AsyncClient) -> None:
        message = {
            "jsonrpc": "2.0",
            "id": self.rpc_id,
            "method": "tools/call",
            "params": {"name": self.name, "arguments": {"message": "who are you?"}},
        }
        url = f"/apps/views/{self.view_id}/mcp"
        kind = ""
        try:
            async with client.stream("POST", url, json=message) as response:
                assert response.headers["content-type"].startswith("text/event-stream")
                async for line in response.aiter_lines():
                    if line.startswith("event: "):
                        kind = line[7:]
                    elif line.startswith("data: "):
                        data = json.loads(line[6:])
                        self.events.append((kind, data))
                        if kind == "approval" and self.approve:
                            approval = f"/apps/views/{self.view_id}/approvals/{data['approvalId']}"
                            answered = await client.post(approval, json={"decision": "once"})
                            assert answered.status_code == 200, answered.text
                        if kind == self.until:
                            self.held.set()
        except httpx2.RemoteProtocolError as cut:
            self.events.append(("cut", str(cut)))  # the stream ended with no answer

    def kinds(self) -> list[str]:
        return [kind for kind, _ in self.events]

    def error(self) -> dict[str, Any]:
        """The final answer's error: the answer must be for this call's request."""
        kind, answer = self.events[-1]
        assert kind == "message", self.events
        assert answer["id"] == self.rpc_id
        assert "result" not in answer
        return answer["error"]


class SilentModel:
    """An OpenAI-compatible base URL that reads each request and never answers."""

    def __init__(self) -> None:
        self.asked = trio.Event()
        self.url = ""

    async def serve(self, *, task_status: trio.TaskStatus[None]) -> None:
        [listener] = await trio.open_tcp_listeners(0, host="127.0.0.1")
        self.url = f"http://127.0.0.1:{listener.socket.getsockname()[1]}/v1"
        await trio.serve_listeners(self._read, [listener], task_status=task_status)

    async def _read(self, stream: trio.SocketStream) -> None:
        await stream.receive_some()
        self.asked.set()
        await trio.sleep_forever()


async def plain_call(client: httpx2.AsyncClient, view_id: str, into: list[Any]) -> None:
    """A view's call answered as one JSON object: `into` gets the answer."""
    message = {
        "jsonrpc": "2.0",
        "id": 14,
        "method": "tools/call",
        "params": {"name": "test_sampling", "arguments": {"prompt": "name a fruit"}},
    }
    try:
        response = await client.post(f"/apps/views/{view_id}/mcp", json=message)
    except httpx2.RemoteProtocolError as cut:
        into.append(f"cut: {cut}")  # the request ended with no answer
        return
    assert response.headers["content-type"].startswith("application/json"), response.text
    into.append(response.json())


async def test_a_held_view_call_is_answered_when_the_supervisor_stops(project: Project) -> None:
    model = SilentModel()
    async with trio.open_nursery() as background:
        await background.start(model.serve)
        await stopped_while_held(project, model)
        background.cancel_scope.cancel()


async def stopped_while_held(project: Project, model: SilentModel) -> None:
    asking_project(project, entries=ENTRIES, agent=openai_agent(model.url))
    plain: list[Any] = []
    async with supervisor_running(project) as supervisor:
        async with http(supervisor) as client:
            waiting = HeldCall(
                await open_view(client, "hs"), 11, "test_simple_text", "approval", False
            )
            between = HeldCall(
                await open_view(client, "cf"), 12, "test_elicitation", "elicitation", False
            )
            asking = HeldCall(
                await open_view(client, "hs"), 13, "test_elicitation", "elicitation", True
            )
            with trio.fail_after(GUARD_S):
                async with trio.open_nursery() as nursery:
                    for held in (waiting, between, asking):
                        nursery.start_soon(held.read, client)
                    nursery.start_soon(plain_call, client, await open_view(client, "cf"), plain)
                    for held in (waiting, between, asking):
                        await held.held.wait()
                    await model.asked.wait()
                    assert supervisor.process is not None
                    supervisor.process.send_signal(signal.SIGTERM)
        assert await supervisor.wait() == 0

    # Waiting for the person's approval: the call is not run.
    assert waiting.kinds() == ["approval", "message"]
    assert waiting.error() == {
        "code": APP_ERROR,
        "message": "the supervisor is stopping: the call of 'test_simple_text' was not run;"
        " make it again once it is back",
    }
    # A 2026-07-28 app's question to the page (no request at the app while it waits): the call
    # is cut short once the apps are stopped.
    assert between.kinds() == ["elicitation", "message"]
    assert between.error() == {
        "code": APP_ERROR,
        "message": "the supervisor stopped before the call of 'test_elicitation' was finished:"
        " it was cancelled",
    }
    # A handshake-era app's question, asked from inside its request: stopping the app ends it.
    assert asking.kinds() == ["approval", "elicitation", "message"]
    assert asking.error() == {"code": APP_ERROR, "message": "app 'hs' was stopped during the call"}
    # A 2026-07-28 app's sampling request, waiting for the model: the same, as plain JSON.
    assert plain == [
        {
            "jsonrpc": "2.0",
            "id": 14,
            "error": {
                "code": APP_ERROR,
                "message": "the supervisor stopped before the call of 'test_sampling' was"
                " finished: it was cancelled",
            },
        }
    ]
    assert "tools/call test_simple_text: stopping" in supervisor.log


async def test_a_new_view_call_is_refused_once_the_supervisor_is_stopping(
    project: Project,
) -> None:
    """A view's call that needs no approval and reaches the door after shutdown began (its
    request came in before, its body after) is not run, as a call held for approval is not and
    a chat's new turn is not: the supervisor takes no new work while it stops. A chat turn
    waiting for the model holds the shutdown's chat grace open meanwhile, with the apps up."""
    model = SilentModel()
    async with trio.open_nursery() as background:
        await background.start(model.serve)
        asking_project(project, entries=ENTRIES, agent=openai_agent(model.url))
        # The chat grace, long enough for the call to come during it; not a speed claim.
        project.config(
            project.config_path.read_text().replace("stop_grace_s = 1.0", "stop_grace_s = 10")
        )
        async with supervisor_running(project) as supervisor, http(supervisor) as client:
            view_id = await open_view(client, "cf")  # the 2026-07-28 app: approval never
            message = {
                "jsonrpc": "2.0",
                "id": 21,
                "method": "tools/call",
                "params": {"name": "test_simple_text", "arguments": {}},
            }
            body = json.dumps(message).encode()
            head = request(
                "POST",
                f"/apps/views/{view_id}/mcp",
                supervisor.port,
                content_length=str(len(body)),
                content_type="application/json",
            )
            async with trio.open_nursery() as turns, raw_connection(supervisor.port) as late:
                turns.start_soon(_a_turn_the_model_never_answers, client)
                with trio.fail_after(GUARD_S):
                    await model.asked.wait()
                    await late.send(head)  # the request is in; its body is not
                    assert supervisor.process is not None
                    supervisor.process.send_signal(signal.SIGTERM)
                    await supervisor.wait_for_log("received SIGTERM: stopping")
                    await late.send(body)
                    answer = await late.response()
            assert await supervisor.wait() == 0
        background.cancel_scope.cancel()
    assert answer is not None
    assert answer.status == 200, answer
    assert json.loads(answer.body) == {
        "jsonrpc": "2.0",
        "id": 21,
        "error": {
            "code": APP_ERROR,
            "message": "the supervisor is stopping: the call of 'test_simple_text' was not run;"
            " make it again once it is back",
        },
    }


async def _a_turn_the_model_never_answers(client: httpx2.AsyncClient) -> None:
    """A chat turn, read until the supervisor ends it (it waits for the model meanwhile)."""
    with contextlib.suppress(httpx2.HTTPError):
        async with client.stream("POST", "/apps/chat", json={"message": "hello"}) as response:
            async for _ in response.aiter_lines():
                pass
