"""An MCP App with file viewers, for the tests of the workspace: UI tools with file entry points
(the OpenAI MCP extensions' `_meta["openai/ui"].entrypoints`), and tools that must not count as
viewers (no UI, malformed entry points).

Run over stdio: `python files_app.py`.
"""

from __future__ import annotations

from typing import Any

import trio
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server

UI_MIME = "text/html;profile=mcp-app"
PAGE = "<!doctype html><p>a file viewer</p>"


def file_entry(*extensions: Any) -> dict[str, Any]:
    return {"type": "file", "extensions": list(extensions)}


def meta(uri: str | None, *entrypoints: Any) -> dict[str, Any]:
    found: dict[str, Any] = {"openai/ui": {"entrypoints": list(entrypoints)}}
    if uri is not None:
        found["ui"] = {"resourceUri": uri, "visibility": ["app"]}
    return found


def build() -> MCPServer:
    server = MCPServer("files")

    async def view(file: dict[str, str]) -> str:
        return f"opened {file.get('name')}"

    sheet, notes = "ui://files/sheet.html", "ui://files/notes.html"
    # Upper case on purpose: extensions compare without regard to case.
    server.add_tool(view, name="sheet", title="Sheet", meta=meta(sheet, file_entry(".CSV", ".tsv")))
    server.add_tool(
        view,
        name="notes",
        meta=meta(notes, {"type": "global"}, file_entry(".md", ".tar.gz")),
    )
    server.add_tool(view, name="no_ui", meta=meta(None, file_entry(".csv")))
    server.add_tool(
        view, name="odd", meta=meta(sheet, file_entry("csv", "text/csv", ".", 7), "junk")
    )
    for uri in (sheet, notes):
        server.resource(uri, name=uri.removeprefix("ui://files/"), mime_type=UI_MIME)(lambda: PAGE)
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
