"""The lean path of a 2026-07-28 `tools/call` (web/mcpdoor/faststateless.py), against a real
`mcpapps run` with real apps: for each check the SDK makes on that path (the envelope, the
`MCP-Protocol-Version`/`Mcp-Method`/`Mcp-Name` headers, the `Mcp-Param-*` headers against the
tool's schema, the request's capabilities), a call the lean path answers gets the answer the SDK's
path gives, and a call that fails the check gets the SDK's own error.

The SDK's path is reached by the same request asking for progress (`_meta.progressToken`), which
only the SDK's event stream can carry: the lean path leaves it to the SDK, which answers in plain
JSON when no progress comes. Which path a request takes is shown by the endpoint's own choice
(`StatelessFastPath.take`), in process.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import httpx2
import mcp_types as types
import pytest
import trio

from actors.apps.direct import FIRST_ID
from actors.runtime import Mailbox
from actors.tls import client_tls
from tests.support import forkserver
from tests.support.frontdoor import HANDSHAKE_APP, MCP_HEADERS
from tests.support.helpers import Project
from tests.support.running import FAST, GUARD_S, fixture_manifest
from tests.support.shared import SharedSupervisor, SharedView, shared_supervisor, view_of
from web.mcpdoor.endpoints import AppEndpoint

VERSION = "2026-07-28"
ROUTED_SCHEMA = {
    "type": "object",
    "properties": {"region": {"type": "string", "x-mcp-header": "Region"}, "text": {}},
}


def envelope(capabilities: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        types.PROTOCOL_VERSION_META_KEY: VERSION,
        types.CLIENT_CAPABILITIES_META_KEY: capabilities or {},
        types.CLIENT_INFO_META_KEY: {"name": "test", "version": "0"},
    }


def tools_call(
    name: str,
    arguments: dict[str, Any] | None = None,
    *,
    capabilities: dict[str, Any] | None = None,
    request_id: int = 7,
) -> tuple[dict[str, Any], dict[str, str]]:
    """A 2026-07-28 `tools/call` as the SDK's client sends it: the body and its headers."""
    body = {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": name, "_meta": envelope(capabilities)},
    }
    if arguments is not None:
        body["params"]["arguments"] = arguments
    headers = {
        **MCP_HEADERS,
        "mcp-protocol-version": VERSION,
        "mcp-method": "tools/call",
        "mcp-name": name,
    }
    if arguments and "region" in arguments:
        headers["mcp-param-region"] = arguments["region"]
    return body, headers


def with_progress(body: dict[str, Any]) -> dict[str, Any]:
    """The same request asking for progress: the SDK's path. (A request without `_meta` is
    left as it is: it has no envelope, and only the SDK answers it.)"""
    asked = copy.deepcopy(body)
    if isinstance(asked["params"].get("_meta"), dict):
        asked["params"]["_meta"]["progressToken"] = "p1"
    return asked


# The checks of the SDK's path, each broken once: (what, change to the body, change to the
# headers, the JSON-RPC error code the SDK answers with).
def _broken() -> Iterator[tuple[str, Any, Any, int]]:
    def meta_without(key: str) -> Any:
        return lambda body: body["params"]["_meta"].pop(key)

    def header(name: str, value: str | None) -> Any:
        def change(headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
            kept = [(k, v) for k, v in headers if k != name]
            return kept if value is None else [*kept, (name, value)]

        return change

    def twice(name: str) -> Any:
        return lambda headers: [*headers, *[(k, v) for k, v in headers if k == name]]

    def arguments(value: Any) -> Any:
        return lambda body: body["params"].__setitem__("arguments", value)

    nothing = None
    yield "no envelope", lambda b: b["params"].pop("_meta"), nothing, types.INVALID_PARAMS
    version = meta_without(types.PROTOCOL_VERSION_META_KEY)
    yield "envelope without its version", version, nothing, types.INVALID_PARAMS
    capabilities = meta_without(types.CLIENT_CAPABILITIES_META_KEY)
    yield "envelope without capabilities", capabilities, nothing, types.INVALID_PARAMS

    def bad_capabilities(body: dict[str, Any]) -> None:
        body["params"]["_meta"][types.CLIENT_CAPABILITIES_META_KEY] = {"elicitation": 5}

    yield "capabilities of the wrong shape", bad_capabilities, nothing, types.INVALID_PARAMS
    mismatch = types.HEADER_MISMATCH
    # Without the header the request is the handshake era's, which wants a session.
    no_version = header("mcp-protocol-version", None)
    yield "no MCP-Protocol-Version", nothing, no_version, types.INVALID_REQUEST
    other = header("mcp-protocol-version", "2026-12-31")
    yield "another MCP-Protocol-Version", nothing, other, types.UNSUPPORTED_PROTOCOL_VERSION
    yield "Mcp-Method of another method", nothing, header("mcp-method", "tools/list"), mismatch
    yield "no Mcp-Method", nothing, header("mcp-method", None), mismatch
    yield "Mcp-Name of another tool", nothing, header("mcp-name", "echo"), mismatch
    yield "no Mcp-Name", nothing, header("mcp-name", None), mismatch
    yield "Mcp-Name twice", nothing, twice("mcp-name"), mismatch
    yield "Mcp-Param of another value", nothing, header("mcp-param-region", "mars"), mismatch
    yield "no Mcp-Param", nothing, header("mcp-param-region", None), mismatch
    yield "Mcp-Param twice", nothing, twice("mcp-param-region"), mismatch
    yield "arguments not an object", arguments([1]), header("mcp-param-region", None), -32602
    yield "no Accept for an event stream", nothing, header("accept", "application/json"), 0


BROKEN = list(_broken())


def write(project: Project) -> None:
    project.manifest("apps/fx", fixture_manifest("fx", "--report-client", "--gates"))
    project.manifest(
        "apps/hs",
        {"id": "hs", "command": forkserver.python(), "arguments": [str(HANDSHAKE_APP)]},
    )
    supervision = "\n".join(f"{k} = {v}" for k, v in FAST.items())
    project.config(f'[apps]\ndiscovery_paths = ["./apps"]\n\n[supervision]\n{supervision}\n')


@pytest.fixture(scope="module")
def _shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SharedSupervisor]:
    project = Project(tmp_path_factory.mktemp("faststateless"))
    write(project)
    yield from shared_supervisor(project)


@pytest.fixture
def running(_shared: SharedSupervisor) -> Iterator[SharedView]:
    yield from view_of(_shared)


async def post(
    client: httpx2.AsyncClient, path: str, body: Any, headers: Any
) -> tuple[int, str, Any]:
    """The answer as a client reads it: status, content type, JSON-RPC message."""
    pairs = list(headers.items()) if isinstance(headers, dict) else list(headers)
    response = await client.post(path, content=json.dumps(body), headers=pairs)
    kind = response.headers.get("content-type", "")
    return response.status_code, kind, response.json() if response.content else None


async def both_ways(
    client: httpx2.AsyncClient, path: str, body: dict[str, Any], headers: Any
) -> tuple[Any, Any]:
    lean = await post(client, path, body, headers)
    sdk = await post(client, path, with_progress(body), headers)
    return lean, sdk


def client_for(running: SharedView) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(
        verify=client_tls(), base_url=f"http://127.0.0.1:{running.port}", timeout=GUARD_S
    )


def endpoint_taking() -> AppEndpoint:
    """The endpoint of an app `fx`, in process: which requests its lean path takes."""
    endpoint = AppEndpoint("fx", Mailbox())
    endpoint.server.input_schemas["routed"] = ROUTED_SCHEMA
    return endpoint


def scope_of(headers: list[tuple[str, str]]) -> dict[str, Any]:
    raw = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers]
    return {"type": "http", "method": "POST", "headers": raw, "query_string": b""}


def first_of(headers: list[tuple[str, str]]) -> dict[str, str]:
    found: dict[str, str] = {}
    for name, value in headers:
        found.setdefault(name, value)
    return found


def test_the_lean_path_takes_a_call_that_passes_every_check_and_no_other() -> None:
    endpoint = endpoint_taking()
    body, headers = tools_call("routed", {"region": "eu", "text": "x"})
    pairs = list(headers.items())
    taken = endpoint.fast_stateless.take(body, scope_of(pairs), first_of(pairs))
    assert taken is not None
    assert taken.version == VERSION
    assert taken.request_id == 7
    assert endpoint.fast_stateless.take(with_progress(body), scope_of(pairs), headers) is None
    for what, change_body, change_headers, _code in BROKEN:
        bad, bad_headers = copy.deepcopy(body), list(pairs)
        if change_body is not None:
            change_body(bad)
        if change_headers is not None:
            bad_headers = change_headers(bad_headers)
        refused = endpoint.fast_stateless.take(bad, scope_of(bad_headers), first_of(bad_headers))
        assert refused is None, what


async def test_a_call_on_the_lean_path_gets_the_answer_of_the_sdks_path(
    running: SharedView,
) -> None:
    async with client_for(running) as client:
        for path, prefix in (("/apps/mcp/fx", ""), ("/mcp", "fx.")):
            for name, arguments in (
                ("echo", {"text": "héllo"}),
                ("add", {"a": 2, "b": 3}),
                ("routed", {"region": "eu", "text": "x"}),
                ("fail", {}),
                ("no_such_tool", {}),
                ("echo", {"text": 5}),  # the app refuses its arguments
            ):
                body, headers = tools_call(prefix + name, arguments)
                lean, sdk = await both_ways(client, path, body, headers)
                assert lean == sdk, (path, name)
                assert lean[1] == "application/json"
            # What the request carried besides the envelope reaches the app.
            body, headers = tools_call(prefix + "request_meta", {})
            body["params"]["_meta"]["trace"] = "x"
            status, _kind, answer = await post(client, path + "?sessionId=chat-1", body, headers)
            assert status == 200, answer
            meta = json.loads(answer["result"]["content"][0]["text"])
            assert meta["trace"] == "x"
            assert meta.get("sessionId") == ("chat-1" if path != "/mcp" else None)
            assert answer["result"]["resultType"] == "complete"


async def test_a_call_that_fails_a_check_gets_the_sdks_error(running: SharedView) -> None:
    async with client_for(running) as client:
        body, headers = tools_call("routed", {"region": "eu", "text": "x"})
        pairs = list(headers.items())
        for what, change_body, change_headers, code in BROKEN:
            bad, bad_headers = copy.deepcopy(body), list(pairs)
            if change_body is not None:
                change_body(bad)
            if change_headers is not None:
                bad_headers = change_headers(bad_headers)
            lean, sdk = await both_ways(client, "/apps/mcp/fx", bad, bad_headers)
            assert lean == sdk, what
            status, _kind, answer = lean
            assert status >= 400, (what, lean)
            if code:
                assert answer["error"]["code"] == code, (what, answer)


async def test_the_capabilities_of_each_request_decide_what_the_app_may_ask(
    running: SharedView,
) -> None:
    """The app asks for elicitation inside its call: a request that declared it is answered
    `input_required` and completed by its retry; one that did not has the app refused."""
    async with client_for(running) as client:
        arguments = {"message": "who are you?"}
        refused = tools_call("test_elicitation", arguments)
        lean, sdk = await both_ways(client, "/apps/mcp/hs", *refused)
        assert lean == sdk
        assert "elicitation capability" in json.dumps(lean[2]), lean

        asking = tools_call("test_elicitation", arguments, capabilities={"elicitation": {}})
        answers = []
        for body in (asking[0], with_progress(asking[0])):
            status, _kind, first = await post(client, "/apps/mcp/hs", body, asking[1])
            assert status == 200, first
            result = first["result"]
            assert result["resultType"] == "input_required", result
            [(key, question)] = result["inputRequests"].items()
            assert question["method"] == "elicitation/create"
            retry = copy.deepcopy(body)
            retry["params"]["requestState"] = result.pop("requestState")
            answer = {"action": "accept", "content": {"username": "ada", "email": "a@b.c"}}
            retry["params"]["inputResponses"] = {key: answer}
            status, _kind, final = await post(client, "/apps/mcp/hs", retry, asking[1])
            assert status == 200, final
            answers.append((first, final))
        assert answers[0] == answers[1]
        assert "ada" in answers[0][1]["result"]["content"][0]["text"]


async def test_a_lean_call_whose_client_goes_away_is_cancelled_at_the_app(
    running: SharedView,
) -> None:
    gate = running.project.root / "never-created"
    async with client_for(running) as client:

        async def waiting() -> int:
            status, _kind, answer = await post(client, "/apps/mcp/fx", *tools_call("gated", {}))
            assert status == 200, answer
            return int(answer["result"]["content"][0]["text"])

        async with trio.open_nursery() as nursery:

            async def wait_at_the_gate() -> None:
                async with client_for(running) as leaving:
                    body, headers = tools_call("gate", {"path": str(gate)})
                    await post(leaving, "/apps/mcp/fx", body, headers)

            nursery.start_soon(wait_at_the_gate)
            with trio.fail_after(GUARD_S):
                while await waiting() != 1:
                    await trio.sleep(0.05)
            nursery.cancel_scope.cancel()  # the client goes away: its connection closes
        with trio.fail_after(GUARD_S):
            while await waiting() != 0:
                await trio.sleep(0.05)


async def test_a_call_that_asks_no_progress_passes_by_the_apps_sdk_session(
    running: SharedView,
) -> None:
    """The app is asked for progress only when the client asked for it: a call that did not
    is one line past the SDK session to the stdio app (actors/apps/direct.py, whose ids are its
    own), one that did goes through the session, which routes the app's progress back."""
    async with client_for(running) as client:
        body, headers = tools_call("request_id", {})
        lean, sdk = await both_ways(client, "/apps/mcp/fx", body, headers)
        lean_id = json.loads(lean[2]["result"]["content"][0]["text"])
        sdk_id = json.loads(sdk[2]["result"]["content"][0]["text"])
        assert lean_id >= FIRST_ID
        assert sdk_id < FIRST_ID
