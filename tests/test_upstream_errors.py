"""The SDK's and the transport's errors enter as our own family, mapped once in
`actors/apps/upstream.py`: against the fixture app over stdio with the real SDK, and the mapping
itself for the errors a live app does not produce on demand."""

from __future__ import annotations

import contextlib
import os
import signal

import httpx2
import mcp_types as types
import pytest
import trio
from mcp.shared.exceptions import MCPError

from actors.apps.upstream import upstream_error
from supervisor.model.errors import (
    McpappsError,
    UpstreamLost,
    UpstreamRejected,
    UpstreamTimeout,
)
from tests.support.running import fixture_upstream


async def test_an_error_answer_is_rejected_with_the_apps_error() -> None:
    async with fixture_upstream() as (_, upstream, _):
        with pytest.raises(UpstreamRejected) as caught:
            await upstream.send("no/such/method", {}, timeout=10)
    assert caught.value.rpc_error.code == types.METHOD_NOT_FOUND  # type: ignore[attr-defined]
    assert "JSON-RPC error" in str(caught.value)


async def test_no_answer_in_time_is_a_timeout() -> None:
    async with fixture_upstream() as (_, upstream, _):
        params = {"name": "sleep", "arguments": {"seconds": 30}}
        with pytest.raises(UpstreamTimeout):
            await upstream.send("tools/call", params, timeout=0.2)
        await upstream.probe(5.0)  # the connection itself is fine


async def test_a_dead_app_is_a_lost_connection() -> None:
    caught: list[BaseException] = []
    with contextlib.suppress(Exception):  # the SDK's teardown of a dead session may raise too
        async with fixture_upstream(forked=False) as (child, upstream, _):
            os.killpg(child.pid, signal.SIGKILL)
            await child.wait()
            try:
                await upstream.send("tools/call", {"name": "echo", "arguments": {}}, timeout=5)
            except Exception as error:
                caught.append(error)
    assert len(caught) == 1
    assert isinstance(caught[0], UpstreamLost), repr(caught[0])


def test_the_mapping_of_what_a_live_app_does_not_produce_on_demand() -> None:
    closed = MCPError(types.CONNECTION_CLOSED, "Connection closed")
    terminated = MCPError(types.INVALID_REQUEST, "Session terminated")
    assert isinstance(upstream_error(closed), UpstreamLost)
    assert isinstance(upstream_error(terminated), UpstreamLost)
    assert isinstance(upstream_error(httpx2.ConnectError("refused")), UpstreamLost)
    assert isinstance(upstream_error(trio.BrokenResourceError()), UpstreamLost)
    assert isinstance(upstream_error(MCPError(types.REQUEST_TIMEOUT, "late")), UpstreamTimeout)
    assert str(upstream_error(closed)) == "the connection closed"
    for error in (upstream_error(closed), upstream_error(MCPError(1, "x"))):
        assert isinstance(error, McpappsError)
    bug = ValueError("ours")
    assert upstream_error(bug) is bug  # not the SDK's: given back as it is
