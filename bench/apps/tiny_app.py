"""The smallest real MCP app, for bench/manyapps.py: the SDK's low-level server on stdio with one
tool, `echo`. Its start is what any Python MCP app pays (importing the SDK), nothing more.

Usage: python tiny_app.py [--name NAME]
"""

from __future__ import annotations

import argparse
from typing import Any

import mcp_types as types
import trio
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server

ECHO = types.Tool(
    name="echo",
    description="Says the text back.",
    input_schema={"type": "object", "properties": {"text": {"type": "string"}}},
)


async def main(name: str) -> None:
    async def list_tools(ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[ECHO])

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        text = str((params.arguments or {}).get("text", ""))
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)])

    server = Server(name, on_list_tools=list_tools, on_call_tool=call_tool)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--name", default="tiny")
    trio.run(main, parser.parse_args().name)
