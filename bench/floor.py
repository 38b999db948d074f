"""The floor of a stdio gateway on Hypercorn's Trio worker: the least such a gateway can do.

One stdio app behind one raw ASGI function served by Hypercorn's Trio worker, configured as
mcpapps configures it. A request's JSON-RPC message goes to the app's stdin with an id of the
gateway's own, and the app's answer comes back as one JSON body: no Quart, no MCP SDK on the
server side, no actors, no checks of any kind (the first `initialize` is the app's, later ones
get its answer again). It is not a gateway anyone should run; it is what the HTTP server and
the event loop cost on a call's way when nothing else is done, measured with the same client
as the real gateways (`bench/steady.sh --floor`).

    python bench/floor.py --port PORT -- APP_COMMAND...
"""

from __future__ import annotations

import argparse
import itertools
import json
import subprocess
import sys
import uuid
from typing import Any

import hypercorn.trio
import trio
from floorserver import hypercorn_config, lifespan


class Pipe:
    """The app's stdio: requests written with ids of our own, answers matched back by id."""

    def __init__(self, process: trio.Process) -> None:
        assert process.stdin is not None
        assert process.stdout is not None
        self._stdin = process.stdin
        self._stdout = process.stdout
        self._ids = itertools.count(1)
        self._waiting: dict[int, tuple[trio.Event, list[Any]]] = {}
        self._lock = trio.Lock()

    async def read_answers(self) -> None:
        buffer = b""
        while chunk := await self._stdout.receive_some(65536):
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                message = json.loads(line)
                waiter = self._waiting.pop(message.get("id"), None)
                if waiter is not None:
                    waiter[1].append(message)
                    waiter[0].set()

    async def request(self, message: dict[str, Any]) -> dict[str, Any]:
        own = next(self._ids)
        answered, box = self._waiting[own] = (trio.Event(), [])
        await self.tell({**message, "id": own})
        await answered.wait()
        return box[0]

    async def tell(self, message: dict[str, Any]) -> None:
        async with self._lock:
            await self._stdin.send_all(json.dumps(message).encode() + b"\n")


class Floor:
    def __init__(self, pipe: Pipe) -> None:
        self.pipe = pipe
        self.initialized: dict[str, Any] | None = None

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await lifespan(receive, send)
            return
        body = b""
        while True:
            event = await receive()
            body += event.get("body", b"")
            if not event.get("more_body"):
                break
        session = dict(scope["headers"]).get(b"mcp-session-id") or uuid.uuid4().hex.encode()
        if scope["method"] != "POST":
            await _answer(send, 200, b"", session)
            return
        message = json.loads(body)
        if "id" not in message:
            if message.get("method") != "notifications/initialized" or not self.initialized:
                await self.pipe.tell(message)
            await _answer(send, 202, b"", session)
            return
        if message.get("method") == "initialize" and self.initialized is not None:
            answer = {**self.initialized, "id": message["id"]}
        else:
            answer = {**await self.pipe.request(message), "id": message["id"]}
            if message.get("method") == "initialize":
                self.initialized = answer
        await _answer(send, 200, json.dumps(answer).encode(), session)


async def _answer(send: Any, status: int, body: bytes, session: bytes) -> None:
    headers = [(b"content-length", str(len(body)).encode()), (b"mcp-session-id", session)]
    if body:
        headers.append((b"content-type", b"application/json"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def main(port: int, command: list[str]) -> None:
    config = hypercorn_config(port)
    async with trio.open_nursery() as nursery:
        process = await nursery.start(
            lambda task_status: trio.run_process(
                command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, task_status=task_status
            )
        )
        pipe = Pipe(process)
        nursery.start_soon(pipe.read_answers)
        await hypercorn.trio.serve(Floor(pipe), config)  # type: ignore[arg-type]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("command", nargs="+")
    args = parser.parse_args()
    try:
        trio.run(main, args.port, args.command)
    except KeyboardInterrupt:
        sys.exit(130)
