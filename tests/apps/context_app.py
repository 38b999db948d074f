"""An MCP App for the tests of the OpenAI model-context and message extensions: one UI tool,
`show_part`, whose view (context_probe.html) speaks the view protocol by hand, so that a test
can send `ui/update-model-context` and `ui/message` from inside it and read back what the host
told it. Run over stdio: `python context_app.py`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import trio
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server

UI_MIME = "text/html;profile=mcp-app"
PROBE_URI = "ui://context/probe.html"
PROBE = Path(__file__).with_name("context_probe.html").read_text()


def build() -> MCPServer:
    server = MCPServer("context")

    async def show_part(part: str = "hex-bolt") -> dict[str, Any]:
        return {"part": part}

    server.add_tool(show_part, name="show_part", meta={"ui": {"resourceUri": PROBE_URI}})

    @server.resource(PROBE_URI, mime_type=UI_MIME)
    def probe() -> str:
        return PROBE

    return server


def main() -> None:
    server = build()

    async def serve() -> None:
        async with stdio_server() as (read, write):
            await server._lowlevel_server.run(
                read, write, server._lowlevel_server.create_initialization_options()
            )

    trio.run(serve)


if __name__ == "__main__":
    main()
