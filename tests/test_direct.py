"""A stdio app's requests that pass by the SDK session (actors/apps/direct.py), against the fixture
app with the real SDK: the same answers and errors as the SDK's own path, on the same pipe as
the SDK's requests, and the app told when a request is given up."""

from __future__ import annotations

import contextlib
import json
import math
import os
import signal
from collections.abc import AsyncIterator
from typing import Any

import mcp_types as types
import pytest
import trio

from actors.apps.direct import FIRST_ID, DirectRequests
from actors.apps.stdio import StdinWriter, StdoutReader
from actors.apps.upstream import Upstream
from supervisor.model.errors import UpstreamError, UpstreamLost, UpstreamTimeout
from tests.support.running import GUARD_S, fixture_upstream


def _sdk_path(upstream: Upstream) -> Upstream:
    """The same connection, every request through the SDK session."""
    return Upstream(upstream.client)


async def _outcome(upstream: Upstream, method: str, params: dict[str, Any]) -> Any:
    try:
        return await upstream.send(method, params, timeout=10)
    except UpstreamError as error:
        rpc = getattr(error, "rpc_error", None)
        return type(error).__name__, str(error), rpc.model_dump() if rpc else None


def _text(result: Any) -> str:
    return str(result["content"][0]["text"])


async def _until_logged(stderr: list[str], line: str) -> None:
    with trio.fail_after(GUARD_S):
        while not any(line in seen for seen in stderr):
            await trio.sleep(0.02)


async def test_the_direct_path_answers_as_the_sdk_path_does() -> None:
    cases: list[tuple[str, dict[str, Any]]] = [
        ("tools/call", {"name": "echo", "arguments": {"text": "hé \u2603"}}),
        ("tools/call", {"name": "fail", "arguments": {}}),  # a tool error: a result
        ("tools/call", {"name": "no_such_tool", "arguments": {}}),
        ("tools/call", {"name": "echo", "arguments": {"text": "m"}, "_meta": {}}),
        ("tools/call", {"name": "request_meta", "arguments": {}, "_meta": {"k": "v"}}),
        ("tools/call", {"arguments": {}}),  # no name: the app refuses the params
        ("no/such/method", {}),
        ("tools/list", {}),
        ("ping", {}),
    ]
    async with fixture_upstream("--report-client") as (_, upstream, _):
        sdk = _sdk_path(upstream)
        for method, params in cases:
            direct = await _outcome(upstream, method, params)
            through_sdk = await _outcome(sdk, method, params)
            assert direct == through_sdk, (method, params)
        # And each went its own way: the direct path with ids of its own.
        call = {"name": "request_id", "arguments": {}}
        assert json.loads(_text(await upstream.send("tools/call", call))) >= FIRST_ID
        assert json.loads(_text(await sdk.send("tools/call", call))) < FIRST_ID


async def test_both_paths_share_the_pipe_each_answer_reaching_its_own_request() -> None:
    async with fixture_upstream() as (_, upstream, _):
        sdk = _sdk_path(upstream)
        answers: dict[str, str] = {}

        async def echo(via: Upstream, text: str) -> None:
            params = {"name": "echo", "arguments": {"text": text}}
            answers[text] = _text(await via.send("tools/call", params, timeout=GUARD_S))

        async def slow() -> None:
            params = {"name": "sleep", "arguments": {"seconds": 0.3}}
            answers["slow"] = _text(await upstream.send("tools/call", params, timeout=GUARD_S))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(slow)
            for i in range(20):
                nursery.start_soon(echo, upstream, f"direct {i}")
                nursery.start_soon(echo, sdk, f"sdk {i}")
                nursery.start_soon(upstream.probe, GUARD_S)  # a ping, the SDK's own request
        expected = {f"{via} {i}": f"{via} {i}" for via in ("direct", "sdk") for i in range(20)}
        assert answers == {**expected, "slow": "slept"}


async def test_a_direct_request_that_times_out_is_cancelled_at_the_app() -> None:
    async with fixture_upstream() as (_, upstream, stderr):
        params = {"name": "sleep", "arguments": {"seconds": 30}}
        with pytest.raises(UpstreamTimeout):
            await upstream.send("tools/call", params, timeout=0.3)
        await _until_logged(stderr, "sleep cancelled")  # told notifications/cancelled
        echo = {"name": "echo", "arguments": {"text": "still here"}}
        assert _text(await upstream.send("tools/call", echo, timeout=GUARD_S)) == "still here"


async def test_a_caller_that_gives_up_cancels_the_direct_request_at_the_app() -> None:
    async with fixture_upstream() as (_, upstream, stderr):
        params = {"name": "sleep", "arguments": {"seconds": 30}}
        with trio.move_on_after(0.3) as gave_up:
            await upstream.send("tools/call", params, timeout=GUARD_S)
        assert gave_up.cancelled_caught
        await _until_logged(stderr, "sleep cancelled")


async def test_a_direct_request_in_flight_when_the_app_dies_is_lost() -> None:
    caught: list[BaseException] = []
    with trio.fail_after(GUARD_S):
        try:
            async with fixture_upstream(forked=False) as (child, upstream, stderr):

                async def call() -> None:
                    params = {"name": "sleep", "arguments": {"seconds": 30}}
                    try:
                        await upstream.send("tools/call", params, timeout=GUARD_S)
                    except Exception as error:
                        caught.append(error)

                async with trio.open_nursery() as nursery:
                    nursery.start_soon(call)
                    await _until_logged(stderr, "sleep started")
                    os.killpg(child.pid, signal.SIGKILL)
        except Exception:
            pass
    assert len(caught) == 1
    assert isinstance(caught[0], UpstreamLost), repr(caught[0])


# ---- on real pipes, the app's side written by hand -----------------------------------------


class _Pipes:
    """Stands in for a child process: the reader only reads its stdout."""

    def __init__(self, stdout: trio.lowlevel.FdStream) -> None:
        self.stdout = stdout


@contextlib.asynccontextmanager
async def _by_hand() -> AsyncIterator[tuple[DirectRequests, Any, Any]]:
    """Direct requests over real pipes; yields them, the app's stdin (to read what was sent)
    and the app's stdout (to answer), while the reader runs as the session's loop would."""
    stdin_r, stdin_w = os.pipe()
    stdout_r, stdout_w = os.pipe()
    writer = StdinWriter(trio.lowlevel.FdStream(stdin_w))
    direct = DirectRequests(writer.send_line, writer.send_later)
    reader = StdoutReader(_Pipes(trio.lowlevel.FdStream(stdout_r)), "app", lambda: None, direct)  # type: ignore[arg-type]
    app_in, app_out = trio.lowlevel.FdStream(stdin_r), trio.lowlevel.FdStream(stdout_w)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(writer.write_waiting)

        async def session_loop() -> None:
            async for _ in reader:
                pass

        nursery.start_soon(session_loop)
        yield direct, app_in, app_out
        nursery.cancel_scope.cancel()
    for stream in (app_in, app_out):
        await stream.aclose()


async def _line(app_in: Any) -> dict[str, Any]:
    data = b""
    while not data.endswith(b"\n"):
        data += await app_in.receive_some(65536)
    return json.loads(data)


async def test_an_answer_whose_id_comes_back_as_a_string_reaches_its_request() -> None:
    async with _by_hand() as (direct, app_in, app_out):
        async with trio.open_nursery() as nursery:
            answers: list[Any] = []

            async def call() -> None:
                answers.append(await direct.send("tools/call", {"name": "echo"}, GUARD_S))

            nursery.start_soon(call)
            sent = await _line(app_in)
            echoed = {"jsonrpc": "2.0", "id": str(sent["id"]), "result": {"content": []}}
            await app_out.send_all(json.dumps(echoed).encode() + b"\n")
        assert answers == [{"content": []}]


async def test_the_request_line_is_the_sdks_byte_for_byte() -> None:
    cases: list[dict[str, Any] | None] = [
        None,
        {},
        {"name": "echo", "arguments": {"text": "hé \u2603", "big": 2**70, "x": 1.5e300}},
        {"name": "echo", "arguments": {"nan": math.nan, "inf": math.inf, "ninf": -math.inf}},
        {"name": "echo", "_meta": {}},
        {"name": "echo", "_meta": None},
        {"name": "echo", "_meta": {"progress": 1}},
    ]
    async with _by_hand() as (direct, app_in, _):
        pending = b""
        for params in cases:
            with trio.move_on_after(0.2):  # sent, then given up: a cancel notice follows
                await direct.send("tools/call", params, GUARD_S)
            while pending.count(b"\n") < 2:
                pending += await app_in.receive_some(65536)
            line, notice, pending = pending.split(b"\n", 2)
            assert json.loads(notice)["method"] == "notifications/cancelled"
            request_id = json.loads(line)["id"]
            # What the SDK's `send_raw_request` writes for the same params.
            fields = dict(params or {})
            meta = dict(fields.get("_meta") or {})
            if meta:
                fields["_meta"] = meta
            else:
                fields.pop("_meta", None)
            request = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call"}
            sdk = types.JSONRPCRequest(**request, **({"params": fields} if fields else {}))
            assert line == sdk.model_dump_json(by_alias=True, exclude_unset=True).encode(), params


async def test_a_caller_cancelled_before_it_sends_sends_nothing() -> None:
    async with _by_hand() as (direct, app_in, _):
        with trio.CancelScope() as scope:
            scope.cancel()
            await direct.send("tools/call", {"name": "echo"}, GUARD_S)
        with trio.move_on_after(0.2):
            data = await app_in.receive_some(65536)
            raise AssertionError(f"the app was sent {data!r}")
