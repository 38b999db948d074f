"""Hostile input at the front door, over real HTTP to a real `mcpapps run`: every malformed
request gets a 4xx that says why (never a 500 or a traceback in the log), nothing is left
unanswered, no connection is wedged, and the limits of `[limits]` hold on every route."""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import httpx2
import mcp_types as types
import pytest
import trio
import trio_websocket
from mcp_types.version import KNOWN_PROTOCOL_VERSIONS
from quart_trio import QuartTrio

from actors.tls import client_tls
from supervisor.model import jsonin, jsonout
from tests.support.frontdoor import (
    INITIALIZE,
    MCP_HEADERS,
    TOKEN,
    events,
    http,
    open_session,
    write,
)
from tests.support.helpers import Project
from tests.support.rawhttp import raw_connection, request
from tests.support.running import Supervisor, supervisor_running
from tests.support.shared import SharedSupervisor, SharedView, shared_supervisor, view_of
from web.routes import FiniteJSONProvider

HANG_GUARD_S = 15  # far longer than any answer here takes; far shorter than a request timeout


def nested(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = {"a": value}
    return value


def deep_text(levels: int) -> str:
    return '{"a":' * levels + "1" + "}" * levels


def no_tracebacks(supervisor: Supervisor | SharedView) -> None:
    assert "Traceback" not in supervisor.log, supervisor.log[-3000:]


# Most tests here only send requests and read answers: they share a supervisor per project
# (tests/support/shared.py), and each checks it is left as found. A test that changes one
# (its sessions up to a cap, its own auth) starts its own.


@pytest.fixture(scope="module")
def _with_apps(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SharedSupervisor]:
    """The bundled app, and fixture apps named fx and slow."""
    project = Project(tmp_path_factory.mktemp("hostile-apps"))
    write(project, "", ("fx", ()), ("slow", ()))
    yield from shared_supervisor(project)


@pytest.fixture
def with_apps(_with_apps: SharedSupervisor) -> Iterator[SharedView]:
    yield from view_of(_with_apps)


@pytest.fixture(scope="module")
def _no_apps(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SharedSupervisor]:
    project = Project(tmp_path_factory.mktemp("hostile-none"))
    write(project, grocery=False)
    yield from shared_supervisor(project)


@pytest.fixture
def no_apps(_no_apps: SharedSupervisor) -> Iterator[SharedView]:
    yield from view_of(_no_apps)


# ---- bodies that are not JSON we take: 400, on every route ------------------------------------

BAD_BODIES = {
    "not UTF-8": b'{"name":"\xff"}',
    "UTF-16 with a BOM": '{"name": "grocery.get_stores"}'.encode("utf-16"),
    "UTF-8-encoded surrogate": b'{"name":"\xed\xa0\x80"}',
    "nested 1000 levels": ('{"name":"x","arguments":' + deep_text(1000) + "}").encode(),
    "nested 65 levels": ('{"name":"x","arguments":' + deep_text(64) + "}").encode(),
}


async def test_bodies_that_are_not_json_we_take_are_400_on_admin_and_chat(
    with_apps: SharedView,
) -> None:
    supervisor = with_apps
    async with http(supervisor) as client:
        for name, body in BAD_BODIES.items():
            for path in ("/admin/call", "/apps/chat"):
                response = await client.post(
                    path, content=body, headers={"content-type": "application/json"}
                )
                assert response.status_code == 400, (name, path, response.text)
                assert response.json()["error"]["code"] == "bad_request", (name, path)

        # A chat's `/call` with arguments nested too deep: the call's own error, not the engine's.
        message = "/call grocery.get_stores " + deep_text(1000)
        response = await client.post("/apps/chat", json={"message": message})
        frames = [
            json.loads(line[5:]) for line in response.text.splitlines() if line[:5] == "data:"
        ]
        results = [f for f in frames if f["type"] == "result"]
        assert len(results) == 1, frames
        assert results[0]["isError"]
        assert "invalid arguments" in results[0]["text"]
        assert "nests more than" in results[0]["text"]
        assert not [f for f in frames if f["type"] == "error"], frames
        no_tracebacks(supervisor)


# ---- numbers and strings JSON has not: 400 naming them, on every route ------------------------

# What Python's json module reads but JSON has not (or an integer longer than int() converts),
# as a value in a body, and what the refusal must say about it.
NOT_JSON = {
    "an integer of 5000 digits": ("9" * 5000, "has more than 4300 digits"),
    "NaN": ("NaN", "NaN is not a JSON number"),
    "Infinity": ("Infinity", "Infinity is not a JSON number"),
    "-Infinity": ("-Infinity", "-Infinity is not a JSON number"),
    "a float too large": ("1e400", "the number 1e400 is too large for a JSON number"),
    "a long mantissa": ("9" * 210 + "e99", "is too large for a JSON number"),
    "a lone surrogate": ('"\\ud800"', 'the string "\\ud800" has a \\u escape that is half'),
}
BODY_ROUTES = (
    "/admin/call",
    "/apps/chat",
    "/apps/views",
    "/apps/views/v1/mcp",
    "/apps/views/v1/answers",
    "/apps/chat/s1/answers",
    "/apps/sampling/grocery-inventory",
)


@pytest.mark.parametrize("name", NOT_JSON)
def test_values_json_has_not_are_refused_naming_them(name: str) -> None:
    literal, said = NOT_JSON[name]
    with pytest.raises(jsonin.JSONInputError) as refused:
        jsonin.loads(('{"name": "x", "arguments": {"a": ' + literal + "}}").encode())
    assert str(refused.value).startswith("the body is not valid JSON: "), refused.value
    assert said in str(refused.value)
    # An escaped backslash before "u" is no escape, and a whole pair is a character.
    assert jsonin.loads(b'["\\\\ud800", "\\ud83d\\ude00"]') == ["\\ud800", "\U0001f600"]


def test_what_we_send_out_never_holds_nan_or_infinity() -> None:
    """An app's result may hold a float that is not finite (the SDK reads one from an app):
    every frame, saved session and route answer writes it as null, which JSON.parse reads."""
    value = {"a": math.nan, "b": [math.inf, -math.inf, 1.5], "c": {"d": (math.nan,)}, "e": "NaN"}
    expected = '{"a": null, "b": [null, null, 1.5], "c": {"d": [null]}, "e": "NaN"}'
    assert jsonout.dumps(value) == expected
    assert json.loads(jsonout.dumps(value)) == json.loads(expected)
    # The routes' answers (Quart's JSON) go through the same.
    assert FiniteJSONProvider(QuartTrio("t")).dumps(value, sort_keys=False) == expected


async def test_values_json_has_not_are_400_on_every_route_and_a_parse_error_over_mcp(
    with_apps: SharedView,
) -> None:
    supervisor = with_apps
    # Over 64 brackets in all: the front door parses the body itself to check its nesting.
    pad = ', "pad": ' + "[" * 33 + "]" * 33 + ', "pad2": ' + "[" * 33 + "]" * 33
    async with http(supervisor) as client:
        for name, (literal, said) in NOT_JSON.items():
            body = '{"message": "hi", "name": "fx.add", "x": ' + literal + "}"
            for path in BODY_ROUTES:
                response = await client.post(
                    path, content=body, headers={"content-type": "application/json"}
                )
                error = response.json()["error"]
                if path.endswith("/mcp"):  # a view's channel answers in JSON-RPC, as MCP does
                    assert error["code"] == -32700, (name, path, error)
                else:
                    assert response.status_code == 400, (name, path, response.text)
                    assert error["code"] == "bad_request", (name, path, error)
                assert error["message"].startswith("the body is not valid JSON: "), error
                assert said in error["message"], (name, path, error)

            # The MCP endpoints answer a body they cannot take as JSON-RPC says: -32700.
            for path, tool in (("/mcp", "fx.add"), ("/apps/mcp/fx", "add")):
                session = await open_session(client, path)
                for padding in ("", pad):
                    call = (
                        '{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "'
                        + tool
                        + '", "arguments": {"a": '
                        + literal
                        + ', "b": 1}}'
                        + padding
                        + "}"
                    )
                    response = await client.post(path, content=call, headers=session)
                    assert response.status_code == 400, (name, path, response.text)
                    error = response.json()["error"]
                    assert error["code"] == -32700, (name, path, error)

            # A chat's `/call` with such arguments: the call's own error, naming the value.
            message = "/call fx.add {" + f'"a": {literal}, "b": 1' + "}"
            response = await client.post("/apps/chat", json={"message": message})
            assert response.status_code == 200, response.text
            frames = [
                json.loads(line[5:]) for line in response.text.splitlines() if line[:5] == "data:"
            ]
            [result] = [f for f in frames if f["type"] == "result"]
            assert result["isError"], result
            assert "invalid arguments for tool 'fx.add': not valid JSON" in result["text"]
            assert said in result["text"], result
            assert not [f for f in frames if f["type"] == "error"], frames
        no_tracebacks(supervisor)
        assert " ERROR " not in supervisor.log, supervisor.log[-3000:]


# ---- one nesting limit, refused up front on every route ---------------------------------------


async def test_arguments_an_app_cannot_read_are_refused_at_once_on_every_route(
    with_apps: SharedView,
) -> None:
    supervisor = with_apps
    too_deep = nested(220)  # passes a serializer's checks, refused by the app's parser
    call = {"name": "get_stores", "arguments": too_deep}
    async with http(supervisor) as client:
        with trio.fail_after(HANG_GUARD_S):
            for path, name in (
                ("/apps/mcp/grocery-inventory", "get_stores"),
                ("/mcp", "grocery.get_stores"),
            ):
                session = await open_session(client, path)
                params = {**call, "name": name}
                message = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params}
                response = await client.post(path, json=message, headers=session)
                assert response.status_code == 400, response.text
                error = response.json()["error"]
                assert error["code"] == -32600
                assert f"more than {jsonin.MAX_DEPTH} levels" in error["message"]

            admin = await client.post(
                "/admin/call", json={"name": "grocery.get_stores", "arguments": too_deep}
            )
            assert admin.status_code == 400, admin.text

            # Just within the limit: the app reads it and answers.
            fits = {"name": "grocery.get_stores", "arguments": {"x": nested(jsonin.MAX_DEPTH - 2)}}
            answered = await client.post("/admin/call", json=fits)
            assert answered.status_code == 200, answered.text
        no_tracebacks(supervisor)


# ---- a body no route reads leaves the connection working --------------------------------------


@pytest.mark.parametrize(
    ("method", "target"),
    [
        ("PUT", "/admin/call"),  # 405
        ("GET", "/metrics"),  # 200, with a body it ignores
        ("POST", "/admin/apps"),  # 405
        ("POST", "/no/such/route"),  # 404
    ],
)
async def test_a_body_in_a_later_packet_that_no_route_reads_leaves_the_connection_working(
    with_apps: SharedView, method: str, target: str
) -> None:
    port = with_apps.port
    async with raw_connection(port) as connection:
        head = request(method, target, port, content_length="2", content_type="application/json")
        with trio.fail_after(HANG_GUARD_S):
            await connection.send(head)
            await trio.sleep(0.05)  # the body comes in a packet of its own
            await connection.send(b"{}")
            first = await connection.response()
            assert first is not None
            await connection.send(request("GET", "/apps/health", port))
            second = await connection.response()
        assert second is not None
        assert second.status == 200, second


async def test_a_kept_alive_connection_is_not_closed_after_many_requests_nor_says_its_server(
    with_apps: SharedView,
) -> None:
    """Hypercorn closes a connection after 1,000 requests by default, which would make an
    agent's client reconnect now and then; and names itself in a `server` header."""
    port = with_apps.port
    async with raw_connection(port) as connection:
        with trio.fail_after(HANG_GUARD_S * 4):
            for _ in range(1_100):
                await connection.send(request("GET", "/apps/health", port))
                answer = await connection.response()
                assert answer is not None
                assert answer.status == 200, answer
                assert answer.headers.get("connection") != "close", answer.headers
        assert "server" not in answer.headers
        assert "date" in answer.headers


# ---- a reused request id --------------------------------------------------------------------


async def test_a_request_id_in_flight_on_the_session_is_refused_and_the_first_answered(
    with_apps: SharedView,
) -> None:
    supervisor = with_apps
    path = "/apps/mcp/slow"
    async with http(supervisor) as client:
        session = await open_session(client, path)
        call = {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "tools/call",
            "params": {"name": "sleep", "arguments": {"seconds": 1}},
        }
        first: list[httpx2.Response] = []

        async def call_first() -> None:
            first.append(await client.post(path, json=call, headers=session))

        with trio.fail_after(HANG_GUARD_S):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(call_first)
                await supervisor.wait_for_log("sleep started")
                ping = {"jsonrpc": "2.0", "id": 7, "method": "ping"}
                second = await client.post(path, json=ping, headers=session)
        assert second.status_code == 400, second.text
        assert second.json()["error"]["code"] == -32600
        assert "already in use" in second.json()["error"]["message"]
        answers = events(first[0])
        assert answers[-1]["id"] == 7
        assert answers[-1]["result"]["content"][0]["text"] == "slept"

        # Once answered, the id is free again.
        again = await client.post(path, json=call, headers=session)
        assert events(again)[-1]["result"]["content"][0]["text"] == "slept"


# ---- MCP requests the SDK answers badly: a JSON error that says why -------------------------

PING = {"jsonrpc": "2.0", "id": 9, "method": "ping"}


async def test_mcp_requests_the_sdk_would_answer_badly_get_json_that_says_why(
    with_apps: SharedView,
) -> None:
    supervisor = with_apps
    async with http(supervisor) as client:
        port = supervisor.port
        for path in ("/mcp", "/apps/mcp/fx"):
            session = await open_session(client, path)

            # A protocol version no era has, with or without a session: said as such.
            for headers in (MCP_HEADERS, session):
                for version in ("banana", "1999-01-01"):
                    asked = {**headers, "mcp-protocol-version": version}
                    response = await client.post(path, json=PING, headers=asked)
                    assert response.status_code == 400, response.text
                    answer = response.json()
                    assert answer["id"] == 9
                    assert answer["error"]["code"] == types.UNSUPPORTED_PROTOCOL_VERSION
                    assert f"the protocol version '{version}'" in answer["error"]["message"]
                    assert "this server speaks 2024-11-05," in answer["error"]["message"]
                    assert answer["error"]["data"] == {
                        "supported": list(KNOWN_PROTOCOL_VERSIONS),
                        "requested": version,
                    }

            # A 2026-07-28 request that accepts no answer it can be given: 406, in JSON, as
            # the handshake era answers it.
            body = json.dumps(PING).encode()
            for accept in ({}, {"accept": "text/html"}):
                async with raw_connection(port) as connection:
                    head = request(
                        "POST",
                        path,
                        port,
                        body,
                        content_type="application/json",
                        mcp_protocol_version="2026-07-28",
                        **accept,
                    )
                    with trio.fail_after(HANG_GUARD_S):
                        await connection.send(head)
                        refused = await connection.response()
                assert refused is not None
                assert refused.status == 406, refused
                assert refused.headers["content-type"] == "application/json", refused
                error = json.loads(refused.body)["error"]
                assert error["code"] == -32600
                assert "must accept both application/json and text/event-stream" in error["message"]

            # Resuming the standing stream: there is nothing to replay, and it opens.
            resume = {
                "accept": "text/event-stream",
                "mcp-session-id": session["mcp-session-id"],
                "mcp-protocol-version": session["mcp-protocol-version"],
                "last-event-id": "5",
            }
            with trio.fail_after(HANG_GUARD_S):
                async with client.stream("GET", path, headers=resume) as stream:
                    assert stream.status_code == 200
                    assert stream.headers["content-type"].startswith("text/event-stream")

            # A batch repeating an id: refused as a batch, nothing is in flight.
            response = await client.post(path, json=[PING, PING], headers=session)
            assert response.status_code == 400, response.text
            error = response.json()["error"]
            assert error["code"] == -32600
            assert "a batch (a JSON array of messages) is not accepted" in error["message"]

            # A body with a byte-order mark, in either era: a parse error that says so (the
            # 2026-07-28 transport read past it and ran the call).
            for headers in (session, {**MCP_HEADERS, "mcp-protocol-version": "2026-07-28"}):
                marked = b"\xef\xbb\xbf" + json.dumps(PING).encode()
                response = await client.post(path, content=marked, headers=headers)
                assert response.status_code == 400, response.text
                assert "byte-order mark" in response.json()["error"]["message"]

            # An id MCP does not take (null, a boolean, an object): the request is refused,
            # where the SDK took it for a notification (202) and the client waited forever.
            for bad_id in (None, True, {"a": 1}, 1.5):
                for headers in (session, MCP_HEADERS):
                    asked = {**PING, "id": bad_id}
                    response = await client.post(path, json=asked, headers=headers)
                    assert response.status_code == 400, (bad_id, response.text)
                    error = response.json()["error"]
                    assert error["code"] == -32600, bad_id
                    assert "MCP takes a string or an integer" in error["message"], bad_id

        # `?sessionId=` reaches the app as `_meta.sessionId`: what a chat could not name is
        # refused (it went to the app as it came, CR, LF and 5,000 characters too).
        session = await open_session(client, "/apps/mcp/fx")
        for bad in ("a\r\nb", "x" * 5000, "", "-lead"):
            path = f"/apps/mcp/fx?sessionId={quote(bad)}"
            response = await client.post(path, json=PING, headers=session)
            assert response.status_code == 400, (bad[:20], response.text)
            assert "in the URL, 'sessionId' must be" in response.json()["error"]["message"]
        response = await client.post("/apps/mcp/fx?sessionId=chat-1", json=PING, headers=session)
        assert response.status_code == 200, response.text
        no_tracebacks(supervisor)


async def test_a_request_without_a_host_header_is_told_so(no_apps: SharedView) -> None:
    async with raw_connection(no_apps.port) as connection:
        with trio.fail_after(HANG_GUARD_S):
            await connection.send(b"GET /apps/health HTTP/1.0\r\n\r\n")
            refused = await connection.response()
    assert refused is not None
    assert refused.status == 421, refused
    message = json.loads(refused.body)["error"]["message"]
    assert message.startswith("the request has no Host header: send one"), message


# ---- WebSocket upgrades are refused like any request ------------------------------------------


async def upgrade(port: int, host: str, headers: list[tuple[bytes, bytes]]) -> Any:
    """A WebSocket handshake to /admin/events with the Host and headers given; what the
    server answered if it refused."""
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    rejections: list[trio_websocket.ConnectionRejected] = []
    try:
        async with trio.open_nursery() as nursery:
            connection = await trio_websocket.wrap_client_stream(
                nursery, stream, host, "/admin/events", extra_headers=headers
            )
            await connection.aclose()
    except* trio_websocket.ConnectionRejected as group:
        rejections.extend(group.exceptions)  # type: ignore[arg-type]
    assert rejections, "the upgrade was accepted"
    return rejections[0]


async def test_a_refused_websocket_upgrade_gets_the_same_status_as_http(project: Project) -> None:
    write(project, "always_require_auth = true\n" + f'token = "{TOKEN}"', grocery=False)
    auth = [(b"Authorization", f"Bearer {TOKEN}".encode())]
    async with supervisor_running(project) as supervisor:
        own = f"127.0.0.1:{supervisor.port}"
        cases = [
            (401, "unauthorized", own, []),
            (421, "host_not_allowed", "evil.example", auth),
            (403, "origin_not_allowed", own, [*auth, (b"Origin", b"http://evil.example")]),
        ]
        for status, code, host, headers in cases:
            with trio.fail_after(HANG_GUARD_S):
                rejected = await upgrade(supervisor.port, host, headers)
            assert rejected.status_code == status
            assert json.loads(rejected.body)["error"]["code"] == code
        no_tracebacks(supervisor)


UPGRADE = (
    "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
    "Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n{extra}\r\n"
)


@pytest.mark.parametrize(
    ("where", "path", "extra"),
    [
        ("main", "/admin/events", "Origin: http://evil.example\r\n"),  # refused: 403
        ("main", "/no/such/route", ""),  # refused: 404
        ("main", "/admin/events", ""),  # accepted, or not yet answered, when the byte comes
        ("sandbox", "/sandbox", ""),  # the sandbox listener takes no WebSocket
    ],
)
async def test_bytes_after_a_websocket_upgrade_cost_that_connection_only(
    no_apps: SharedView, where: str, path: str, extra: str
) -> None:
    """Hypercorn raises out of the connection's task when bytes follow an upgrade it has not
    accepted (its issue #225), which ended the whole server: now only that connection."""
    supervisor = no_apps
    port = supervisor.port + (1 if where == "sandbox" else 0)
    for _ in range(2):  # the second would find the listener gone
        stream = await trio.open_tcp_stream("127.0.0.1", port)
        async with stream:
            head = UPGRADE.format(path=path, port=port, extra=extra).encode()
            with trio.fail_after(HANG_GUARD_S):
                await stream.send_all(head + b"X")
                await trio.sleep(0.2)
                with contextlib.suppress(trio.BrokenResourceError):
                    await stream.send_all(b"Y")
                while await _receive_or_reset(stream):
                    pass  # whatever it answers, until it closes the connection
    async with http(supervisor) as client:
        health = await client.get("/apps/health")
    assert health.status_code == 503  # answered: no app is configured, so none runs
    assert health.json()["apps"] == []
    async with httpx2.AsyncClient(verify=client_tls()) as client:
        sandbox = await client.get(f"http://127.0.0.1:{supervisor.port + 1}/sandbox")
    assert sandbox.status_code == 200
    assert supervisor.process is not None
    assert supervisor.process.poll() is None
    assert "dropped a connection" in supervisor.log
    no_tracebacks(supervisor)


@pytest.mark.parametrize("where", ["main", "sandbox"])
async def test_a_handshake_the_http_server_refuses_closes_its_connection(
    no_apps: SharedView, where: str
) -> None:
    """Hypercorn answers a WebSocket handshake it finds invalid 400 "connection: close" before
    any route (or token check) sees it, and left the connection open for as long as the client
    liked: now it is closed after the answer."""
    supervisor = no_apps
    port = supervisor.port + (1 if where == "sandbox" else 0)
    head = UPGRADE.format(path="/admin/events", port=port, extra="").replace(
        "Sec-WebSocket-Version: 13", "Sec-WebSocket-Version: 8"
    )
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    async with stream:
        with trio.fail_after(HANG_GUARD_S):
            await stream.send_all(head.encode())
            answer = b""
            while chunk := await _receive_or_reset(stream):
                answer += chunk  # until the server closes the connection
    assert answer.startswith(b"HTTP/1.1 400"), answer
    async with http(supervisor) as client:
        assert (await client.get("/apps/health")).status_code == 503  # answered: no app
    no_tracebacks(supervisor)


async def test_bytes_after_a_refusal_that_closes_the_connection_log_no_traceback(
    no_apps: SharedView,
) -> None:
    """A refusal that leaves the body unread closes the connection; a byte arriving meanwhile
    made Hypercorn's reading task close it too, at the same moment, and trio refused the
    second close with an error in our last `send` (logged as a traceback, often)."""
    supervisor = no_apps
    body = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
    port = supervisor.port
    head = request("POST", "/mcp", port, content_length=str(len(body)))
    refused = head.replace(b"\r\n\r\n", b"\r\nOrigin: http://evil.example\r\n\r\n", 1)
    for _ in range(20):
        stream = await trio.open_tcp_stream("127.0.0.1", port)
        async with stream:
            with trio.fail_after(HANG_GUARD_S):
                await stream.send_all(refused + body)
                answer = await _receive_or_reset(stream)
                assert answer.startswith(b"HTTP/1.1 403"), answer
                with contextlib.suppress(trio.BrokenResourceError):
                    await stream.send_all(b"X")
                while await _receive_or_reset(stream):
                    pass
    async with http(supervisor) as client:
        assert (await client.get("/apps/health")).status_code == 503  # answered: no app
    no_tracebacks(supervisor)


async def _receive_or_reset(stream: trio.SocketStream) -> bytes:
    try:
        return await stream.receive_some()
    except trio.BrokenResourceError:  # reset by the server
        return b""


# ---- limits: body size and deadline, sessions, idle connections ------------------------------

LIMITS = """
[limits]
max_body_bytes = 1000
body_timeout_s = 1
max_sessions = 2
keep_alive_s = 1
"""


@pytest.fixture(scope="module")
def _limited(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SharedSupervisor]:
    """The bundled app behind the limits above."""
    project = Project(tmp_path_factory.mktemp("hostile-limits"))
    write(project, "", extra=LIMITS)
    yield from shared_supervisor(project)


@pytest.fixture
def limited(_limited: SharedSupervisor) -> Iterator[SharedView]:
    yield from view_of(_limited)


async def test_one_body_limit_for_every_route(limited: SharedView) -> None:
    supervisor = limited
    big = json.dumps({"message": "x" * 1000}).encode()
    async with http(supervisor) as client:
        for path in ("/admin/call", "/apps/chat", "/mcp", "/apps/mcp/grocery-inventory"):
            response = await client.post(path, content=big, headers=MCP_HEADERS)
            assert response.status_code == 413, (path, response.text)
            # A body declared too large is refused as declared, before any of it comes (it
            # used to wait for the body until body_timeout_s and answer 408).
            async with raw_connection(supervisor.port) as connection:
                head = request("POST", path, supervisor.port, content_length="5000")
                with trio.fail_after(HANG_GUARD_S):
                    await connection.send(head)
                    refused = await connection.response()
                assert refused is not None
                assert refused.status == 413, (path, refused)
                assert refused.headers.get("connection") == "close"
        no_tracebacks(supervisor)


async def test_a_body_never_finished_is_refused_after_the_deadline(limited: SharedView) -> None:
    supervisor = limited
    for target in ("/admin/call", "/apps/mcp/grocery-inventory"):
        async with raw_connection(supervisor.port) as connection:
            head = request(
                "POST",
                target,
                supervisor.port,
                content_length="100",
                content_type="application/json",
            )
            with trio.fail_after(HANG_GUARD_S):
                await connection.send(head + b'{"name":')
                response = await connection.response()
            assert response is not None
            assert response.status == 408, response


async def test_sessions_beyond_the_cap_are_503_with_retry_after(project: Project) -> None:
    """Its own supervisor: the sessions it opens count against the cap until they expire."""
    write(project, "", extra=LIMITS)
    path = "/apps/mcp/grocery-inventory"
    async with supervisor_running(project) as supervisor, http(supervisor) as client:
        await open_session(client, path)
        await open_session(client, path)
        refused = await client.post(path, json=INITIALIZE, headers=MCP_HEADERS)
        assert refused.status_code == 503, refused.text
        assert int(refused.headers["retry-after"]) > 0
        # The other endpoint has its own sessions.
        await open_session(client, "/mcp")


async def test_an_idle_connection_is_closed_after_keep_alive_s(limited: SharedView) -> None:
    supervisor = limited
    for target in ("/apps/health", "/admin/apps", "/no/such/route"):
        async with raw_connection(supervisor.port) as connection:
            with trio.fail_after(HANG_GUARD_S):
                await connection.send(request("GET", target, supervisor.port))
                assert await connection.response() is not None
                assert await connection.response() is None  # closed by the server
