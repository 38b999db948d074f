"""The standing stream of an MCP session (its GET), served by web/mcpdoor/standing.py: what the
SDK's stream gives, with one keep-alive sweep for all streams instead of a timer each."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import trio
import trio.testing

from actors.tls import client_tls
from tests.support.frontdoor import open_session, write
from tests.support.helpers import Project
from tests.support.running import GUARD_S, supervisor_running
from web.mcpdoor.standing import KEEP_ALIVE_S, Standing, StandingStreams

PATH = "/apps/mcp/fx"


async def test_a_standing_stream_opens_carries_notifications_and_ends_with_its_session(
    project: Project,
) -> None:
    write(project, "", ("fx", ()), grocery=False)
    async with (
        supervisor_running(project) as supervisor,
        httpx2.AsyncClient(
            verify=client_tls(), base_url=supervisor.url(), timeout=GUARD_S
        ) as client,
    ):
        session = await open_session(client, PATH)
        standing = {**session, "accept": "text/event-stream"}
        with trio.fail_after(GUARD_S):
            async with client.stream("GET", PATH, headers=standing) as stream:
                # The SDK's status and headers, the session id tagged as every answer's.
                assert stream.status_code == 200
                assert stream.headers["content-type"] == "text/event-stream"
                assert stream.headers["cache-control"] == "no-cache, no-transform"
                assert stream.headers["x-accel-buffering"] == "no"
                assert stream.headers["mcp-session-id"] == session["mcp-session-id"]
                # One standing stream per session: a second is refused as the SDK refuses it.
                second = await client.get(PATH, headers=standing)
                assert second.status_code == 409, second.text
                # What the session sends outside any request reaches the stream, as SDK frames.
                restarted = await client.post("/admin/apps/fx/restart")
                assert restarted.status_code == 200, restarted.text
                chunks = stream.aiter_text()
                text = ""
                while "list_changed" not in text:
                    text += await anext(chunks)
                assert text.startswith("event: message\r\ndata: "), text
                frame = text.split("\r\n\r\n")[0]
                message = json.loads(frame.split("data: ", 1)[1])
                assert message["method"].endswith("/list_changed"), message
                # The client ends its session: the stream ends, cleanly (no broken chunking).
                deleted = await client.delete(PATH, headers=session)
                assert deleted.status_code == 200, deleted.text
                async for _ in chunks:  # ends (a broken end would raise here)
                    pass

        # A client that leaves frees the session's stream: it can open it again.
        session = await open_session(client, PATH)
        standing = {**session, "accept": "text/event-stream"}
        for _ in range(2):
            with trio.fail_after(GUARD_S):
                async with client.stream("GET", PATH, headers=standing) as stream:
                    assert stream.status_code == 200
            with trio.fail_after(GUARD_S):
                while (await _probe(client, standing)) != 200:
                    await trio.sleep(0.05)  # the front door hears of the leaving at once


async def _probe(client: httpx2.AsyncClient, headers: dict[str, str]) -> int:
    async with client.stream("GET", PATH, headers=headers) as stream:
        return stream.status_code


class _Recorded:
    """An ASGI `send` that keeps the bodies it is given."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []

    async def __call__(self, message: dict[str, Any]) -> None:
        self.bodies.append(message["body"])


async def test_one_sweep_pings_each_quiet_stream_every_keep_alive_period(
    autojump_clock: trio.testing.MockClock,
) -> None:
    streams = StandingStreams()
    async with trio.open_nursery() as nursery:
        await nursery.start(streams.run)
        quiet, busy = _Recorded(), _Recorded()
        for send in (quiet, busy):
            stream = Standing(None, send, nursery)  # type: ignore[arg-type]
            streams._streams.add(stream)
            if send is busy:
                busy_stream = stream
        # Nothing runs per stream while it waits: the only sleeping task is the sweep's.
        await trio.sleep(KEEP_ALIVE_S * 0.6)
        busy_stream.write(b"event: message\r\ndata: {}\r\n\r\n")
        await trio.sleep(KEEP_ALIVE_S * 0.5)  # the first sweep: the busy one sent something
        assert [b[:8] for b in quiet.bodies] == [b": ping -"]
        assert busy.bodies == [b"event: message\r\ndata: {}\r\n\r\n"]
        await trio.sleep(KEEP_ALIVE_S)  # the second: both quiet since the first
        assert len(quiet.bodies) == 2
        assert len(busy.bodies) == 2
        assert busy.bodies[1].startswith(b": ping - ")
        assert busy.bodies[1].endswith(b"\r\n\r\n")
        nursery.cancel_scope.cancel()
