"""The floor of an idle MCP session on the SDK and Hypercorn: the least memory such a session
can hold, with and without its standing stream.

One MCP endpoint, the SDK's `StreamableHTTPSessionManager` made as mcpapps makes its endpoints'
(stateful, event-stream answers, an idle timeout; web/mcpdoor/endpoints.py), with a low-level
SDK `Server` that has one tool, served by Hypercorn's Trio worker configured as mcpapps
configures it (web/serve.py). A session's GET (its standing stream) is held by the least there
is: the response's head is sent, then the request's task waits for the client to go: no task,
queue or timer of its own, no bookkeeping with the session. Nothing of mcpapps runs here: no
Quart, no actors, no apps, no front door. `bench/idle.py --floor` opens the same idle sessions
on it as on the supervisor and sets its memory per session beside the supervisor's.

    python bench/idlefloor.py --port PORT
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import hypercorn.trio
import mcp_types as types
import trio
from floorserver import hypercorn_config, lifespan
from mcp.server.lowlevel.server import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

IDLE_S = 1800.0  # mcpapps's default `[limits] session_idle_s`


async def _list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
    schema = {"type": "object", "properties": {}}
    return types.ListToolsResult(tools=[types.Tool(name="noop", input_schema=schema)])


async def _call_tool(ctx: Any, params: Any) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text="ok")])


class Floor:
    def __init__(self, manager: StreamableHTTPSessionManager) -> None:
        self.manager = manager

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await lifespan(receive, send)
            return
        if scope["method"] == "GET":
            await send(
                {
                    "type": "http.response.start",
                    "status": 200,
                    "headers": [(b"content-type", b"text/event-stream")],
                }
            )
            await send({"type": "http.response.body", "body": b"", "more_body": True})
            while (await receive())["type"] != "http.disconnect":
                pass
            return
        await self.manager.handle_request(scope, receive, send)


async def main(port: int) -> None:
    server: Server[Any] = Server("floor", on_list_tools=_list_tools, on_call_tool=_call_tool)
    # No cap on sessions: the benchmark opens as many as it is told.
    manager = StreamableHTTPSessionManager(
        server, json_response=False, session_idle_timeout=IDLE_S, max_sessions=None
    )
    config = hypercorn_config(port)
    async with manager.run():
        await hypercorn.trio.serve(Floor(manager), config)  # type: ignore[arg-type]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    try:
        trio.run(main, args.port)
    except KeyboardInterrupt:
        sys.exit(130)
