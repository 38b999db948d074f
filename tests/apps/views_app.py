"""An MCP App for the browser tests of the view host: one view that probes its sandbox, and
tools whose UI resources the host must refuse (not `ui://`, a wrong MIME type, over 2 MiB).

Run over stdio: `python views_app.py --declared-origin http://127.0.0.1:PORT`.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path
from typing import Any

import trio
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server

UI_MIME = "text/html;profile=mcp-app"
TWO_MIB = 2 * 1024 * 1024

# The probe: speaks the view protocol by hand, then reports what its sandbox lets it do.
PROBE = Path(__file__).with_name("views_probe.html").read_text()


LISTED_ONLY = "ui://views/listed-meta.html"  # its _meta.ui is on its resources/list entry only


class ViewsServer(MCPServer):
    async def read_resource(self, uri: Any, context: Any = None) -> Any:
        contents = await super().read_resource(uri, context)
        if str(uri) == LISTED_ONLY and isinstance(contents, list):
            return [dataclasses.replace(content, meta=None) for content in contents]
        return contents


def build(
    declared: str, undeclared: str, modes: list[str] | None = None, openai: str | None = None
) -> MCPServer:
    server = ViewsServer("views")
    probe_uri = "ui://views/probe.html"

    def ui(uri: str) -> dict[str, Any]:
        return {"ui": {"resourceUri": uri}}

    async def show_probe(label: str = "") -> dict[str, Any]:
        return {"label": label, "shown": True}

    async def note(text: str) -> str:
        print(f"views: note {text}", file=sys.stderr, flush=True)
        return f"noted {text}"

    async def plain() -> str:
        return "nothing to see"

    server.add_tool(show_probe, name="show_probe", meta=ui(probe_uri))
    server.add_tool(show_probe, name="show_listed_meta", meta=ui(LISTED_ONLY))
    model_only = {"ui": {"resourceUri": probe_uri, "visibility": ["model"]}}
    server.add_tool(show_probe, name="show_for_model", meta=model_only)
    server.add_tool(note, name="note", meta={"ui": {"visibility": ["app"]}})
    server.add_tool(plain, name="not_ui_scheme", meta=ui("https://views.example/page.html"))
    server.add_tool(plain, name="wrong_mime", meta=ui("ui://views/wrong-mime.html"))
    server.add_tool(plain, name="too_big", meta=ui("ui://views/big.html"))

    html = PROBE.replace("UNDECLARED", undeclared).replace("DECLARED", declared)

    @server.resource(
        probe_uri,
        mime_type=UI_MIME,
        meta={
            "ui": {
                "csp": {"connectDomains": [declared]},
                "prefersBorder": False,
                **({"availableDisplayModes": modes} if modes else {}),
            },
            # The older OpenAI Apps key, with a mode to open in.
            **({"openai/ui": {"preferredDisplayMode": openai}} if openai else {}),
        },
    )
    def probe_page() -> str:
        return html

    @server.resource(
        LISTED_ONLY, mime_type=UI_MIME, meta={"ui": {"csp": {"connectDomains": [declared]}}}
    )
    def listed_meta_page() -> str:
        return html

    @server.resource("ui://views/wrong-mime.html", mime_type="text/html")
    def wrong_mime_page() -> str:
        return "<p>served as plain text/html</p>"

    @server.resource("ui://views/big.html", mime_type=UI_MIME)
    def big_page() -> str:
        return "<p>" + "x" * TWO_MIB + "</p>"

    return server


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--declared-origin", required=True)
    parser.add_argument("--undeclared-origin", required=True)
    parser.add_argument("--display-modes", help="the probe's availableDisplayModes, a,b,...")
    parser.add_argument("--preferred-mode", help="the probe's openai/ui preferredDisplayMode")
    options = parser.parse_args()
    modes = options.display_modes.split(",") if options.display_modes else None
    server = build(
        options.declared_origin, options.undeclared_origin, modes, options.preferred_mode
    )

    async def serve() -> None:
        async with stdio_server() as (read, write):
            await server._lowlevel_server.run(
                read, write, server._lowlevel_server.create_initialization_options()
            )

    trio.run(serve)


if __name__ == "__main__":
    main()
