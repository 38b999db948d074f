"""A fake OpenAI-compatible chat-completions server: real HTTP on loopback (Hypercorn on Trio),
answering `POST <url>/chat/completions` with scripted replies and recording every request.

In a test, inside its Trio run:

    async with fake_openai(text("Hel", "lo")) as model:
        engine = OpenAIEngine(bridge, base_url=model.url, model="fake", ...)
        ...
        model.script(tool_calls(call("grocery_get_stores", '{"id": 1}')), text("Done"))
        assert model.requests[0]["messages"][-1] == {"role": "user", "content": "hi"}

As its own process (for a supervisor started as a subprocess):

    python tests/support/fake_openai.py --port N --script replies.json [--record requests.jsonl]

where replies.json is a JSON list of replies in `reply_from_json`'s form. Replies are used in
order, one per request; a request after the last one gets an HTTP 500 that says so.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import functools
import json
import logging
import signal
import sys
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import hypercorn.trio
import trio
from hypercorn.config import Config as HypercornConfig

logger = logging.getLogger("tests.support.fake_openai")

MODEL = "fake-model"
ARGUMENT_PIECES = 3  # tool-call arguments arrive in this many fragments, as real servers do


@attrs.frozen
class Reply:
    """One scripted HTTP answer: its status, its body as the pieces written one by one, and
    whether the connection is then dropped instead of the body being ended properly."""

    status: int = 200
    content_type: str = "text/event-stream"
    pieces: tuple[bytes, ...] = ()
    broken: bool = False


Script = Reply | Callable[[dict[str, Any]], Reply]  # a function gets the request body


@attrs.frozen
class Call:
    name: str
    arguments: str = "{}"
    id: str | None = None


def call(name: str, arguments: str | Mapping[str, Any] = "{}", id: str | None = None) -> Call:
    """A tool call the model makes; `arguments` as JSON text (it may be invalid) or a dict."""
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return Call(name, text, id)


# --- Replies --------------------------------------------------------------------------------------


def text(*pieces: str) -> Reply:
    """An answer streamed in `pieces`, one content delta each."""
    deltas = [{"role": "assistant", "content": ""}, *({"content": p} for p in pieces)]
    return _stream([*map(_chunk, deltas), _chunk({}, "stop")])


def tool_calls(*calls: Call, text: str = "") -> Reply:
    """An answer that asks for tools: each call's id and name in one chunk, its arguments
    split across the next ones (as OpenAI streams them)."""
    deltas: list[dict[str, Any]] = [{"role": "assistant", "content": text or None}]
    for index, c in enumerate(calls):
        head = {"index": index, "type": "function", "function": {"name": c.name, "arguments": ""}}
        deltas.append({"tool_calls": [{**head, "id": c.id or f"call_{index}"}]})
        deltas.extend(
            {"tool_calls": [{"index": index, "function": {"arguments": fragment}}]}
            for fragment in _split(c.arguments, ARGUMENT_PIECES)
        )
    return _stream([*map(_chunk, deltas), _chunk({}, "tool_calls")])


def http_error(status: int, message: str) -> Reply:
    """An HTTP error with OpenAI's JSON error body."""
    body = {"error": {"message": message, "type": "invalid_request_error", "code": None}}
    return Reply(status, "application/json", (json.dumps(body).encode(),))


def raw(body: str, *, status: int = 200, content_type: str = "text/event-stream") -> Reply:
    """Exactly `body`: for garbage, or for a stream written by hand."""
    return Reply(status, content_type, (body.encode(),))


def cut_short(*pieces: str) -> Reply:
    """Text deltas, then the end of the body: no finish_reason, no [DONE]."""
    return _stream([_chunk({"content": p}) for p in pieces], done=False)


def broken(*pieces: str) -> Reply:
    """Text deltas, then the connection drops in the middle of the body."""
    return attrs.evolve(cut_short(*pieces), broken=True)


def reply_from_json(data: Mapping[str, Any]) -> Reply:
    """A reply written as JSON, for `--script`: one of
    `{"text": ["Hel", "lo"]}`,
    `{"tool_calls": [{"name": "grocery_get_stores", "arguments": "{}", "id": "c1"}], "text": ""}`,
    `{"error": {"status": 500, "message": "..."}}`,
    `{"raw": "...", "status": 200, "content_type": "text/event-stream"}`,
    `{"cut_short": ["..."]}`, `{"broken": ["..."]}`."""
    if "text" in data and "tool_calls" not in data:
        return text(*data["text"])
    if "tool_calls" in data:
        calls = [call(c["name"], c.get("arguments", "{}"), c.get("id")) for c in data["tool_calls"]]
        return tool_calls(*calls, text=data.get("text", ""))
    if "error" in data:
        return http_error(data["error"]["status"], data["error"]["message"])
    if "raw" in data:
        return raw(
            data["raw"],
            status=data.get("status", 200),
            content_type=data.get("content_type", "text/event-stream"),
        )
    if "cut_short" in data:
        return cut_short(*data["cut_short"])
    if "broken" in data:
        return broken(*data["broken"])
    raise ValueError(f"not a scripted reply: {data!r}")


def _chunk(delta: Mapping[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": MODEL,
        "choices": [{"index": 0, "delta": dict(delta), "finish_reason": finish_reason}],
    }


def _stream(chunks: Iterable[Mapping[str, Any]], *, done: bool = True) -> Reply:
    pieces = [f"data: {json.dumps(chunk)}\n\n".encode() for chunk in chunks]
    if done:
        pieces.append(b"data: [DONE]\n\n")
    return Reply(pieces=tuple(pieces))


def _split(text: str, parts: int) -> list[str]:
    size = max(1, -(-len(text) // parts))
    return [text[i : i + size] for i in range(0, len(text), size)]


# --- The server -----------------------------------------------------------------------------------


class FakeOpenAI:
    """The ASGI app. `requests` holds every request body received (parsed), `headers` their
    headers (lower-case names), in the same order."""

    def __init__(self, replies: Iterable[Script] = (), record: Path | None = None) -> None:
        self.url = ""  # set once it listens: the base_url to configure, ending in /v1
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self._replies: collections.deque[Script] = collections.deque(replies)
        self._record = record

    def script(self, *replies: Script) -> None:
        """Add replies after those not used yet."""
        self._replies.extend(replies)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
        elif scope["type"] == "http":
            await self._http(scope, receive, send)

    async def _http(self, scope: Any, receive: Any, send: Any) -> None:
        body = await _body(receive)
        if scope["method"] != "POST" or not scope["path"].endswith("/v1/chat/completions"):
            await _send(send, http_error(404, f"no route {scope['method']} {scope['path']}"))
            return
        try:
            request = json.loads(body)
        except ValueError:
            await _send(send, http_error(400, "the request body is not JSON"))
            return
        self.requests.append(request)
        self.headers.append({k.decode().lower(): v.decode() for k, v in scope["headers"]})
        if self._record is not None:
            with self._record.open("a") as f:
                f.write(json.dumps(request) + "\n")
        await _send(send, self._next(request))

    def _next(self, request: dict[str, Any]) -> Reply:
        if not self._replies:
            return http_error(
                500, f"fake_openai: no scripted reply for request {len(self.requests)}"
            )
        reply = self._replies.popleft()
        return reply(request) if callable(reply) else reply


class Dropped(Exception):
    """Raised in the app to make Hypercorn drop the connection mid-body."""


async def _send(send: Any, reply: Reply) -> None:
    headers = [(b"content-type", reply.content_type.encode())]
    if reply.content_type == "text/event-stream":
        headers.append((b"cache-control", b"no-cache"))
    await send({"type": "http.response.start", "status": reply.status, "headers": headers})
    for piece in reply.pieces:
        await send({"type": "http.response.body", "body": piece, "more_body": True})
        await trio.sleep(0)  # its own write, so the client sees the stream arrive in pieces
    if reply.broken:
        raise Dropped("the scripted reply drops the connection here")
    await send({"type": "http.response.body", "body": b"", "more_body": False})


async def _body(receive: Any) -> bytes:
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            return body


async def _lifespan(receive: Any, send: Any) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


def _hypercorn_config(host: str, port: int) -> HypercornConfig:
    config = HypercornConfig()
    config.bind = [f"{host}:{port}"]
    config.accesslog = None
    config.errorlog = logger  # a dropped connection is logged as an app error: keep it quiet
    config.graceful_timeout = 1.0
    return config


@contextlib.asynccontextmanager
async def fake_openai(
    *replies: Script, host: str = "127.0.0.1", port: int = 0, record: Path | None = None
) -> AsyncIterator[FakeOpenAI]:
    """The server, listening (on a free port unless one is given) until the block ends."""
    server = FakeOpenAI(replies, record)
    shutdown = trio.Event()
    async with trio.open_nursery() as nursery:
        serve = functools.partial(
            hypercorn.trio.serve,
            server,
            _hypercorn_config(host, port),
            shutdown_trigger=shutdown.wait,
        )
        binds = await nursery.start(lambda task_status: serve(task_status=task_status))
        server.url = f"{binds[0]}/v1"
        try:
            yield server
        finally:
            shutdown.set()


async def _main(port: int, replies: Sequence[Script], record: Path | None) -> None:
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with fake_openai(*replies, port=port, record=record) as server:
            print(f"fake_openai listening on {server.url}", file=sys.stderr, flush=True)
            async for _ in signals:
                return


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--script", type=Path, help="a JSON list of replies")
    parser.add_argument("--record", type=Path, help="append each request body here as JSON")
    args = parser.parse_args(argv)
    replies = (
        [reply_from_json(r) for r in json.loads(args.script.read_text())] if args.script else []
    )
    trio.run(_main, args.port, replies, args.record)


if __name__ == "__main__":
    main()
