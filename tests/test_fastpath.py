"""The lean path of a `tools/call` (web/mcpdoor/fastpath.py) against a real `mcpapps run` with a
real app: a call on a session whose client can be asked nothing is answered as one JSON body, and
its JSON-RPC message is the one the SDK's path gives a client that can be asked (an event
stream); a call that asks for progress, or on such a client's session, stays on the SDK's path.
"""

from __future__ import annotations

import json
from typing import Any

import httpx2
import trio

from tests.support.frontdoor import cancelled, events, http, open_session
from tests.support.helpers import Project
from tests.support.running import FAST, GUARD_S, fixture_manifest, supervisor_running


def write(project: Project) -> None:
    project.manifest("apps/fx", fixture_manifest("fx", "--report-client"))
    supervision = "\n".join(f"{k} = {v}" for k, v in FAST.items())
    project.config(f'[apps]\ndiscovery_paths = ["./apps"]\n\n[supervision]\n{supervision}\n')


async def call(
    client: httpx2.AsyncClient,
    path: str,
    session: dict[str, str],
    params: dict[str, Any],
    request_id: int = 7,
) -> httpx2.Response:
    body = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
    response = await client.post(path, content=json.dumps(body), headers=session)
    assert response.status_code == 200, response.text
    return response


def kind(response: httpx2.Response) -> str:
    return response.headers["content-type"].split(";")[0]


async def test_a_quiet_clients_call_is_one_json_body_that_means_what_the_stream_says(
    project: Project,
) -> None:
    write(project)
    async with supervisor_running(project) as supervisor, http(supervisor) as client:
        for path, prefix in (("/apps/mcp/fx", ""), ("/mcp", "fx.")):
            quiet = await open_session(client, path, {})
            asking = await open_session(client, path, {"sampling": {}})
            for params in (
                {"name": f"{prefix}echo", "arguments": {"text": "héllo"}},
                {"name": f"{prefix}request_meta", "_meta": {"trace": "x"}},
                {"name": f"{prefix}no_such_tool", "arguments": {}},
            ):
                lean = await call(client, path, quiet, params)
                full = await call(client, path, asking, params)
                assert kind(lean) == "application/json", (path, params)
                assert kind(full) == "text/event-stream", (path, params)
                assert lean.headers["mcp-session-id"] == quiet["mcp-session-id"]
                assert events(lean) == events(full), (path, params)
            # A call that asks for progress needs the stream, lean client or not.
            meta = {"progressToken": "p1"}
            params = {"name": f"{prefix}echo", "arguments": {"text": "x"}, "_meta": meta}
            assert kind(await call(client, path, quiet, params)) == "text/event-stream"


async def test_the_session_id_of_the_url_reaches_the_app_on_the_lean_path(
    project: Project,
) -> None:
    write(project)
    async with supervisor_running(project) as supervisor, http(supervisor) as client:
        path = "/apps/mcp/fx?sessionId=chat-1"
        quiet = await open_session(client, path, {})
        response = await call(client, path, quiet, {"name": "request_meta"})
        assert kind(response) == "application/json"
        text = response.json()["result"]["content"][0]["text"]
        assert json.loads(text)["sessionId"] == "chat-1"


async def test_a_lean_call_the_client_cancels_is_cancelled_at_the_app(project: Project) -> None:
    """Cancelled by its client, a lean call ends as the SDK's path ends one (its answer says
    so), and the app's own request is cancelled."""
    project.manifest("apps/fx", fixture_manifest("fx", "--gates"))
    supervision = "\n".join(f"{k} = {v}" for k, v in FAST.items())
    project.config(f'[apps]\ndiscovery_paths = ["./apps"]\n\n[supervision]\n{supervision}\n')
    gate = project.root / "never-created"
    async with supervisor_running(project) as supervisor, http(supervisor) as client:
        path = "/apps/mcp/fx"
        ids = iter(range(100, 10_000))

        async def gated(session: dict[str, str]) -> int:
            response = await call(client, path, session, {"name": "gated"}, next(ids))
            return int(events(response)[0]["result"]["content"][0]["text"])

        async def cancel_at_the_gate(session: dict[str, str]) -> httpx2.Response:
            answered: list[httpx2.Response] = []
            async with trio.open_nursery() as nursery:

                async def wait_at_the_gate() -> None:
                    params = {"name": "gate", "arguments": {"path": str(gate)}}
                    answered.append(await call(client, path, session, params))

                nursery.start_soon(wait_at_the_gate)
                with trio.fail_after(GUARD_S):
                    while await gated(session) != 1:
                        await trio.sleep(0.05)
                response = await client.post(path, json=cancelled(7), headers=session)
                assert response.status_code == 202
            # The app's own request was cancelled: nothing waits at the gate any more.
            with trio.fail_after(GUARD_S):
                while await gated(session) != 0:
                    await trio.sleep(0.05)
            [ended] = answered
            return ended

        quiet = await open_session(client, path, {})
        askable = await open_session(client, path, {"sampling": {}})  # the SDK's path
        lean, sdk = await cancel_at_the_gate(quiet), await cancel_at_the_gate(askable)
        assert kind(lean) == "application/json"
        assert kind(sdk) == "text/event-stream"
        assert [lean.json()] == events(sdk)
        assert lean.json()["error"]["code"] == -32800  # the request was cancelled
