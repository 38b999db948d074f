"""Talking to `/apps/chat` as a browser does: POST, then read the server-sent events as they come,
with a standard SSE parser (httpx2's, derived from httpx-sse)."""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import AsyncIterator
from typing import Any

import httpx2
import trio

from tests.support.running import GUARD_S


class Timeline:
    """The order in which events of several concurrent streams were received."""

    def __init__(self) -> None:
        self._counter = itertools.count()
        self.seen: list[tuple[int, str, dict[str, Any]]] = []

    def note(self, stream: str, data: dict[str, Any]) -> int:
        position = next(self._counter)
        self.seen.append((position, stream, data))
        return position

    def first(self, stream: str, kind: str) -> int:
        return next(p for p, s, data in self.seen if s == stream and data["type"] == kind)


def body(message: str, session_id: str | None = None, **extra: Any) -> dict[str, Any]:
    payload: dict[str, Any] = {"message": message, **extra}
    if session_id is not None:
        payload["sessionId"] = session_id
    return payload


@contextlib.asynccontextmanager
async def chat_stream(
    client: httpx2.AsyncClient, payload: dict[str, Any]
) -> AsyncIterator[AsyncIterator[httpx2.ServerSentEvent]]:
    async with client.stream("POST", "/apps/chat", json=payload, timeout=GUARD_S) as response:
        assert response.status_code == 200, await response.aread()
        assert response.headers["content-type"].startswith("text/event-stream")
        yield aiter(httpx2.EventSource(response))


async def chat(client: httpx2.AsyncClient, payload: dict[str, Any]) -> list[httpx2.ServerSentEvent]:
    """A whole turn's events, `session` to `done`."""
    with trio.fail_after(GUARD_S):
        async with chat_stream(client, payload) as frames:
            return [frame async for frame in frames]


async def chat_data(client: httpx2.AsyncClient, payload: dict[str, Any]) -> list[dict[str, Any]]:
    return [frame.json() for frame in await chat(client, payload)]


async def chat_into(
    client: httpx2.AsyncClient, payload: dict[str, Any], timeline: Timeline, name: str
) -> None:
    """A whole turn, each event noted on `timeline` as it arrives."""
    async with chat_stream(client, payload) as frames:
        async for frame in frames:
            timeline.note(name, frame.json())
