"""What the two MCP endpoints share (web/mcpdoor/relay.py), as pure functions: the params an app is
sent, the error a client reads, and a handshake-era client's input rounds."""

from __future__ import annotations

import types as pytypes
from typing import Any

import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError

from actors.asking import MAX_ROUNDS
from actors.catalog import Wire
from actors.messages import CallFailed, CallTimeout, UnknownApp
from actors.runtime import AskTimeout, Overloaded
from web.mcpdoor.relay import APP_ERROR, app_params, complete_input, mcp_error


def test_app_params_drop_the_clients_envelope_and_progress_token() -> None:
    params = {
        "name": "t",
        "_meta": {
            types.PROTOCOL_VERSION_META_KEY: "2026-07-28",
            types.LOG_LEVEL_META_KEY: "debug",
            "progressToken": 5,
            "sessionId": "s1",
        },
    }
    forwarded, token = app_params(params)
    assert forwarded == {"name": "t", "_meta": {"sessionId": "s1"}}
    assert token == 5
    assert params["_meta"]["progressToken"] == 5  # the client's own params are left as they are


def test_app_params_without_meta_of_their_own_have_none() -> None:
    assert app_params({"uri": "x", "_meta": {"progressToken": "p"}}) == ({"uri": "x"}, "p")
    assert app_params(None) == (None, None)


def test_an_error_the_app_answered_with_passes_through() -> None:
    error = mcp_error(CallFailed("fx", "bad", rpc_error=types.ErrorData(code=-32602, message="x")))
    assert (error.error.code, error.error.message) == (-32602, "x")


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (CallTimeout("fx", "tool 'sleep' of app 'fx' timed out"), types.REQUEST_TIMEOUT),
        (UnknownApp("fx", "unknown app 'fx'"), APP_ERROR),
        (AskTimeout("no answer within 10 s"), APP_ERROR),
        (Overloaded("too busy: its mailbox is full"), APP_ERROR),
    ],
)
def test_errors_of_ours_name_the_cause(error: Exception, code: int) -> None:
    mapped = mcp_error(error)
    assert mapped.error.code == code
    assert str(error) in mapped.error.message


def test_an_unexpected_error_is_not_disguised() -> None:
    with pytest.raises(ZeroDivisionError):
        mcp_error(ZeroDivisionError())


class _Client:
    """A handshake-era client that answers every question with its count."""

    owner = "client-1"
    on_progress = None

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def ask(self, method: str, params: Wire) -> Wire:
        self.asked.append(method)
        return {"answer": len(self.asked)}


def _context(protocol_version: str) -> Any:
    return pytypes.SimpleNamespace(protocol_version=protocol_version)


def _input_required(n: int) -> Wire:
    request = {"method": "elicitation/create", "params": {"message": "?"}}
    return {"resultType": "input_required", "inputRequests": {"q": request}, "requestState": n}


async def test_a_handshake_client_is_asked_and_the_request_retried_for_it() -> None:
    client = _Client()
    retried: list[Wire] = []

    async def retry(params: Wire) -> Wire:
        retried.append(params)
        return {"content": []} if len(retried) == 2 else _input_required(len(retried))

    ctx = _context("2025-11-25")
    result = await complete_input(ctx, client, {"name": "t"}, _input_required(0), retry)
    assert result == {"content": []}
    assert client.asked == ["elicitation/create", "elicitation/create"]
    assert retried[0] == {"name": "t", "inputResponses": {"q": {"answer": 1}}, "requestState": 0}
    assert retried[1]["requestState"] == 1


async def test_a_2026_client_gets_input_required_as_it_is() -> None:
    async def retry(params: Wire) -> Wire:
        raise AssertionError("a 2026-07-28 client retries by itself")

    asked = _input_required(0)
    ctx = _context("2026-07-28")
    assert await complete_input(ctx, _Client(), None, asked, retry) is asked


async def test_an_app_that_keeps_asking_is_stopped() -> None:
    async def retry(params: Wire) -> Wire:
        return _input_required(0)

    ctx = _context("2025-11-25")
    with pytest.raises(MCPError, match=f"more than {MAX_ROUNDS} times"):
        await complete_input(ctx, _Client(), None, _input_required(0), retry)
