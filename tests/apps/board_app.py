"""An MCP App for the browser tests of a view's live call and of the tools a view registers:
`show_board` opens the board view at once, `slow_board` answers only when cancelled. The view
(board_view.html) reports what the host sent it and registers its own tool, `pick_color`.

Run over stdio: `python board_app.py`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import trio
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server

UI_MIME = "text/html;profile=mcp-app"
BOARD_URI = "ui://board/board.html"
BOARD = Path(__file__).with_name("board_view.html").read_text()


def build() -> MCPServer:
    server = MCPServer("board")
    ui = {"ui": {"resourceUri": BOARD_URI}}

    async def show_board(label: str = "") -> dict[str, Any]:
        return {"label": label}

    async def slow_board(label: str = "") -> dict[str, Any]:
        await trio.sleep(3600)  # until the call is cancelled
        return {"label": label}

    server.add_tool(show_board, name="show_board", meta=ui)
    server.add_tool(slow_board, name="slow_board", meta=ui)

    @server.resource(BOARD_URI, mime_type=UI_MIME)
    def board_page() -> str:
        return BOARD

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
