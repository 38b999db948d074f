"""An app that speaks only the HTTP+SSE transport (protocol revision 2024-11-05), as many hosted
servers still do: the SDK's `MCPServer` and its own SSE app (a GET stream at /sse, messages
POSTed to /messages/), served by Hypercorn's Trio worker (the SDK's `run_sse_async` needs
uvicorn, which is asyncio-only).

    python sse_app.py --port 8768 [--host H]     # the stream at http://H:8768/sse

Its tools: `echo` (the text back), `add` (two integers), `whoami` (the X-Key header it got,
so a test can see the manifest's headers arrive) and `serial` (a number the process draws once at
start, so a test can tell a restarted server from the old one).
"""

from __future__ import annotations

import argparse
import contextvars
import functools
import logging
import random
import signal
import sys
import warnings
from typing import Any

import trio
from hypercorn.config import Config as HypercornConfig
from hypercorn.trio import serve as hypercorn_serve
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPDeprecationWarning

log = logging.getLogger("sse-app")
warnings.filterwarnings("ignore", category=MCPDeprecationWarning)

server = MCPServer("sse-app", version="1.0.0")
tool = functools.partial(server.tool, structured_output=False)
SERIAL = random.randrange(1, 1_000_000)
# The X-Key header of the request a message came with (the client sends its headers with the
# GET stream and with every POST alike).
KEY: contextvars.ContextVar[str] = contextvars.ContextVar("key", default="")


@tool()
def echo(text: str) -> str:
    """Returns the text it is given"""
    return text


@tool()
def add(a: int, b: int) -> str:
    """Adds two integers"""
    return str(a + b)


@tool()
def whoami() -> str:
    """The X-Key header the client sent"""
    return KEY.get() or "(none)"


@tool()
def serial() -> str:
    """A number drawn when this process started"""
    return str(SERIAL)


async def _on_signal(shut_down: Any) -> None:
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async for signum in signals:
            log.info("%s received, shutting down", signal.Signals(signum).name)
            shut_down()
            return


async def serve(host: str, port: int) -> None:
    sse = server.sse_app(host=host)

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await sse(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        KEY.set(headers.get(b"x-key", b"").decode("latin-1"))
        started = False

        async def once(message: dict[str, Any]) -> None:
            # The SDK's SSE route answers a second time (an empty response) after its stream
            # ends, which Hypercorn refuses with a traceback: the stream's answer was the one.
            nonlocal started
            if message["type"] == "http.response.start":
                if started:
                    return
                started = True
            await send(message)

        await sse(scope, receive, once)

    config = HypercornConfig()
    config.bind = [f"{host}:{port}"]
    config.accesslog = None
    config.errorlog = logging.getLogger("hypercorn.error")
    config.graceful_timeout = 1.0  # the open GET streams would hold a shutdown
    config.keep_alive_timeout = 75.0  # longer than any client keeps an idle connection
    stop = trio.Event()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_on_signal, stop.set)
        await nursery.start(
            functools.partial(hypercorn_serve, app, config, shutdown_trigger=stop.wait)
        )
        log.info("listening on http://%s:%d/sse", host, port)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    logging.basicConfig(
        force=True, stream=sys.stderr, level=logging.INFO, format="%(levelname)s %(message)s"
    )
    trio.run(serve, args.host, args.port)


if __name__ == "__main__":
    main()
