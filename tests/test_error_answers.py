"""Each kind of the one error family reaches a client of a real `mcpapps run` as the front door's
tables say (web/errors.py): over HTTP, the table's status, machine code and headers; over
JSON-RPC (the MCP endpoints), the table's error code, in an answer with the HTTP table's status
when the front door refuses the request before the SDK reads it. Bad requests only: what a
client can send."""

from __future__ import annotations

import json
from typing import Any

import httpx2

from actors.messages import UnknownApp, UnknownTool
from actors.tls import client_tls
from supervisor.model.errors import (
    BadRequest,
    BodyTooLarge,
    Conflict,
    Forbidden,
    InvalidParams,
    NotFound,
    ResourceNotFound,
    Unauthorized,
    Unavailable,
    Unparsable,
    UnsupportedVersion,
    WrongHost,
    WrongMediaType,
)
from tests.support.frontdoor import MCP_HEADERS, TOKEN, http, open_session, write
from tests.support.helpers import Project
from tests.support.running import supervisor_running
from web.errors import HTTP_ERRORS, RPC_ERRORS, row_of

AUTH = {"authorization": f"Bearer {TOKEN}"}
MAX_BODY = 10_000


def assert_http(response: httpx2.Response, error: BaseException, code: str | None = None) -> None:
    row = row_of(HTTP_ERRORS, error)
    assert row is not None
    assert response.status_code == row.status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()["error"]
    assert body["code"] == (code or row.code), body
    assert isinstance(body["message"], str)
    assert body["message"]
    for name, value in row.headers:
        assert response.headers[name.decode()] == value.decode()


def assert_rpc(
    response: httpx2.Response, error: BaseException, status: int | None = None
) -> dict[str, Any]:
    """The JSON-RPC error of `response`; `status` is the HTTP table's for a refusal before the
    SDK (None: an answer of the SDK's server, 200, possibly as an event stream)."""
    http_row = row_of(HTTP_ERRORS, error)
    assert http_row is not None
    assert response.status_code == (status or 200), response.text
    if response.headers["content-type"].startswith("text/event-stream"):
        data = [line[5:] for line in response.text.splitlines() if line.startswith("data:")]
        message = json.loads(data[-1])
    else:
        message = response.json()
    rpc_row = row_of(RPC_ERRORS, error)
    assert rpc_row is not None
    assert message["error"]["code"] == rpc_row.code, message
    return message["error"]  # type: ignore[no-any-return]


def rpc(method: str, params: dict[str, Any] | None = None, request_id: int = 7) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params or {}}


async def test_each_error_reaches_the_client_as_the_tables_say(project: Project) -> None:
    write(
        project,
        f'always_require_auth = true\ntoken = "{TOKEN}"',
        ("fx", ()),
        ("off", ()),
        extra=f"[apps.entries.off]\nenabled = false\n[limits]\nmax_body_bytes = {MAX_BODY}\n",
        grocery=False,
    )
    async with supervisor_running(project) as supervisor, http(supervisor) as client:
        client.headers.update(AUTH)

        # --- over HTTP: the checks in front of Quart (web/asgi.py) ---
        assert_http(
            await client.get("/admin/apps", headers={"host": "evil.example"}), WrongHost("")
        )
        origin = {"origin": "http://evil.example"}
        assert_http(
            await client.get("/admin/apps", headers=origin), Forbidden(""), "origin_not_allowed"
        )
        async with httpx2.AsyncClient(verify=client_tls(), base_url=supervisor.url()) as anonymous:
            assert_http(await anonymous.get("/admin/apps"), Unauthorized(""))
            # The same kind raised by a route (Quart's one handler): the same answer.
            assert_http(await anonymous.get("/login?token=wrong"), Unauthorized(""))
        big = b"x" * (MAX_BODY + 1)
        assert_http(await client.post("/apps/chat", content=big), BodyTooLarge(""))
        text = {"content-type": "text/plain"}
        assert_http(await client.post("/mcp", content=b"{}", headers=text), WrongMediaType(""))
        assert_http(await client.post("/apps/mcp/nosuch", json={}), UnknownApp(None, ""))
        assert_http(await client.post("/apps/mcp/fx?sessionId=%20", json={}), BadRequest(""))

        # --- over HTTP: routes raising the family, answered by the one Quart handler ---
        assert_http(await client.post("/apps/chat", content=b"not json"), BadRequest(""))
        assert_http(await client.get("/apps/chat/bad%20id"), BadRequest(""))
        assert_http(await client.get("/apps/chat/nosuch"), NotFound(""))
        assert_http(await client.get("/static/nosuch.js"), NotFound(""))
        assert_http(await client.delete("/admin/sessions/nosuch"), NotFound(""))
        answer = {"requestId": "r1", "action": "accept"}
        assert_http(await client.post("/apps/chat/s1/answers", json=answer), NotFound(""))
        assert_http(await client.post("/apps/sampling/nosuch", json={}), UnknownApp(None, ""))
        assert_http(await client.get("/admin/apps/nosuch"), UnknownApp(None, ""))
        assert_http(await client.post("/admin/apps/off/start"), Conflict(""), "app_cannot_run")
        assert_http(
            await client.post("/admin/call", content=b"{}", headers=text), WrongMediaType("")
        )
        assert_http(await client.post("/admin/call", json={"nom": 1}), BadRequest(""))
        assert_http(
            await client.post("/admin/call", json={"name": "no.such"}), UnknownTool(None, "")
        )

        # --- over JSON-RPC: refused by the front door before the SDK reads the request ---
        headers = {**MCP_HEADERS, **AUTH}
        nan = b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"x": NaN}}'
        refused = await client.post("/mcp", content=nan, headers=headers)
        assert_rpc(refused, Unparsable(""), 400)
        refused = await client.post("/mcp", json=[rpc("ping")], headers=headers)
        assert_rpc(refused, BadRequest(""), 400)
        old = {**headers, "mcp-protocol-version": "1999-01-01"}
        error = assert_rpc(
            await client.post("/mcp", json=rpc("ping"), headers=old), UnsupportedVersion(""), 400
        )
        assert error["data"]["requested"] == "1999-01-01"
        stranger = {**headers, "mcp-session-id": "not-ours"}
        assert_rpc(await client.post("/mcp", json=rpc("ping"), headers=stranger), NotFound(""), 404)
        down = await client.post("/apps/mcp/off", json=rpc("ping"), headers=headers)
        error = assert_rpc(down, Unavailable(""), 503)
        assert error["data"]["reason"] == "app_unavailable"
        assert down.json()["id"] == 7

        # --- over JSON-RPC: raised in the SDK's handlers, answered as the table says ---
        session = {**await open_session(client, "/mcp"), **AUTH}
        unknown = rpc("tools/call", {"name": "no.such", "arguments": {}})
        assert_rpc(await client.post("/mcp", json=unknown, headers=session), UnknownTool(None, ""))
        prompt = rpc("prompts/get", {"name": "no.such"})
        assert_rpc(await client.post("/mcp", json=prompt, headers=session), InvalidParams(""))
        cursor = rpc("tools/list", {"cursor": "never-given"})
        assert_rpc(await client.post("/mcp", json=cursor, headers=session), InvalidParams(""))
        read = rpc("resources/read", {"uri": "ui://no/such"})
        error = assert_rpc(
            await client.post("/mcp", json=read, headers=session), ResourceNotFound("")
        )
        assert error["data"] == {"uri": "ui://no/such"}
