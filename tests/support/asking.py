"""Chat turns in which an app asks: reading a turn as it comes, answering its questions."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Mapping
from typing import Any

import httpx2
import trio

from tests.support import forkserver
from tests.support.chatting import chat_stream
from tests.support.frontdoor import CONFORMANCE_APP, HANDSHAKE_APP
from tests.support.helpers import Project
from tests.support.running import FAST, GUARD_S


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


def asking_project(
    project: Project,
    *,
    timeout_s: int = 60,
    entries: Mapping[str, Mapping[str, Any]] | None = None,
    agent: str = "",
) -> None:
    """`hs` (handshake era, `hs.` tools) and `cf` (the conformance app on 2026-07-28, `cf.`)."""
    for app_id, script in (("hs", HANDSHAKE_APP), ("cf", CONFORMANCE_APP)):
        project.manifest(
            f"apps/{app_id}",
            {
                "id": app_id,
                "command": forkserver.python(),
                "arguments": [str(script)],
                "toolNamePrefix": f"{app_id}.",
                "requestTimeoutSeconds": timeout_s,
            },
        )
    lines = ["[apps]", 'discovery_paths = ["./apps"]', "", "[supervision]"]
    lines += [f"{key} = {value}" for key, value in FAST.items()]
    all_entries = {"cf": {"protocol": "stateless"}, **(entries or {})}
    for app_id, entry in all_entries.items():
        lines += ["", f"[apps.entries.{app_id}]"]
        lines += [f"{key} = {json.dumps(value)}" for key, value in entry.items()]
    project.config("\n".join(lines) + "\n" + agent)


def openai_agent(url: str) -> str:
    return (
        f'\n[agent]\nengine = "openai"\nbase_url = "{url}"\nmodel = "fake-model"\nmax_steps = 4\n'
    )
