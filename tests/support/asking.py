"""Chat turns in which an app asks: reading a turn as it comes, answering its questions."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Mapping
from typing import Any

import httpx2
import trio

from tests.support.chatting import chat_stream
from tests.support.running import GUARD_S


def command(tool: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
    return {"message": f"/call {tool} {json.dumps(arguments)}"}


class Turn:
    """A chat turn read as it comes: `until(kind)` reads up to the first event of that kind."""

    def __init__(self, frames: AsyncIterator[httpx2.ServerSentEvent]) -> None:
        self._frames = frames
        self.seen: list[dict[str, Any]] = []

    async def until(self, kind: str) -> dict[str, Any]:
        with trio.fail_after(GUARD_S):
            async for frame in self._frames:
                self.seen.append(frame.json())
                if frame.event == kind:
                    return self.seen[-1]
        raise AssertionError(f"the turn ended without a {kind} event: {self.seen}")

    async def rest(self) -> list[dict[str, Any]]:
        await self.until("done")
        return self.seen


@contextlib.asynccontextmanager
async def turn(client: httpx2.AsyncClient, payload: dict[str, Any]) -> AsyncIterator[Turn]:
    async with chat_stream(client, payload) as frames:
        yield Turn(frames)


async def answer(
    client: httpx2.AsyncClient, session_id: str, request_id: str, action: str, **extra: Any
) -> httpx2.Response:
    body = {"requestId": request_id, "action": action, **extra}
    return await client.post(f"/apps/chat/{session_id}/answers", json=body)


def result_text(events: list[dict[str, Any]]) -> str:
    [result] = [e for e in events if e["type"] == "result"]
    return result["text"]
