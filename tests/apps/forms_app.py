"""An MCP app that asks with rich forms (OpenAI form elicitation), built with the OpenAI
extensions SDK (`openai-mcp-extensions`), for the tests of rich forms.

`order_parts` asks during its call with one form that holds every extension the host renders:
a pattern, option descriptions and thumbnails, a suggested value and suggested array values,
and resource selection (single, explicit and implicit). On a handshake-era connection it asks
with `openai/elicitation/create` (the SDK's `elicit_form`), on 2026-07-28 by answering
`input_required` (`request_form_input`, the schema in `_meta["openai/elicitation"]`). Its text
result says what it got: `accepted {...}`, `declined`, `cancelled`, or `refused: <the host's
error>`.

`order_view` opens a view whose Order button calls `order_parts` from the view (its question
comes to the page on the view's call), and shows the call's text in `#result`.

Hostile tools, whose forms the SDK would not build, asked by hand the same two ways:
`unknown_input` (an `x-openai-input` of type "color"), `http_thumbnail` and `script_thumbnail`
(an option whose thumbnail is at an http: or a javascript: address).

    python forms_app.py                      # stdio; the host chooses the era
    python forms_app.py --http --port 8768   # Streamable HTTP at /mcp (loopback only)
"""

from __future__ import annotations

import argparse
import functools
import json
import signal
from typing import Any, Literal, cast

import trio
from hypercorn.config import Config as HypercornConfig
from hypercorn.trio import serve as hypercorn_serve
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.context import Context
from mcp.server.stdio import stdio_server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.shared.exceptions import MCPError
from mcp.shared.message import ServerMessageMetadata
from mcp_types import (
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitResult,
    InputRequiredResult,
    Request,
    Resource,
    ServerRequest,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from openai_mcp_extensions import OpenAIExtensions
from openai_mcp_extensions.form import elicit_form, request_form_input, resource_input
from openai_mcp_extensions.form._mrtr import request_schemas
from pydantic import AnyUrl, BaseModel, Field

UI_MIME = "text/html;profile=mcp-app"
VIEW_URI = "ui://forms/order.html"
# A view that speaks the view protocol by hand: initialize, then Order calls the tool.
VIEW = """<!doctype html><html><body>
<button id="order" type="button" disabled>Order</button><pre id="result"></pre>
<script>
let next = 1; const waiting = new Map();
function post(m) { window.parent.postMessage(Object.assign({jsonrpc: "2.0"}, m), "*"); }
function request(method, params) {
  const id = next++;
  return new Promise((resolve) => { waiting.set(id, resolve); post({id, method, params}); });
}
window.addEventListener("message", (event) => {
  const m = event.data;
  if (m.id === undefined || m.method || !waiting.has(m.id)) return;
  waiting.get(m.id)(m);
  waiting.delete(m.id);
});
const order = document.getElementById("order");
order.onclick = async () => {
  const m = await request("tools/call", {name: "order_parts", arguments: {}});
  const text = m.result ? m.result.content[0].text : JSON.stringify(m.error);
  document.getElementById("result").textContent = text;
};
(async () => {
  const app = {name: "order", version: "1"};
  const version = "2026-01-26";
  await request("ui/initialize", {protocolVersion: version, appInfo: app, appCapabilities: {}});
  post({method: "ui/notifications/initialized", params: {}});
  order.disabled = false;
})();
</script></body></html>"""

# A 1x1 PNG, as the data: thumbnail of an option.
DOT = (
    "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk"
    "+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)
PARTS = [
    Resource(
        uri="cad://parts/hex-bolt",
        name="hex-bolt",
        title="M6 hex bolt",
        _meta={"openai/thumbnail": {"src": DOT}},
    ),
    Resource(uri="cad://parts/washer", name="washer", title="M6 washer"),
    Resource(uri="cad://parts/spring", name="spring", title="Spring"),
]


class Order(BaseModel):
    code: str = Field(
        title="Order code",
        description="Three capitals, a dash, two digits",
        pattern="^[A-Z]{3}-[0-9]{2}$",
        json_schema_extra={"x-openai-suggestions": [{"const": "ABC-12", "title": "Last order"}]},
    )
    finish: str = Field(
        title="Finish",
        json_schema_extra={
            "oneOf": [
                {
                    "const": "zinc",
                    "title": "Zinc",
                    "description": "Grey, keeps rust away",
                    "x-openai-thumbnail": {"src": DOT},
                },
                {
                    "const": "black",
                    "title": "Black oxide",
                    "description": "Dark, for show",
                    "x-openai-thumbnail": {"src": "https://example.com/black.png"},
                },
                {"const": "plain", "title": "Plain steel", "description": "No coating"},
            ]
        },
    )
    tags: list[str] = Field(
        default=[],
        title="Tags",
        json_schema_extra={
            "items": {
                "type": "string",
                "x-openai-suggestions": [
                    {"const": "urgent", "title": "Urgent"},
                    {"const": "gift", "title": "Gift", "description": "Wrapped"},
                ],
            }
        },
    )
    part: AnyUrl = Field(title="Main part", json_schema_extra=resource_input(options=PARTS))
    extras: list[AnyUrl] = Field(
        default=[AnyUrl("cad://parts/washer")],
        title="Extras",
        json_schema_extra=resource_input(options=PARTS, selection="explicit"),
    )
    kit: list[AnyUrl] | None = Field(
        default=None,  # implicit selection takes no default
        title="Kit",
        json_schema_extra=resource_input(options=PARTS[:2], selection="implicit"),
    )


def hostile_schema(kind: str) -> dict[str, Any]:
    if kind == "unknown_input":
        colour = {
            "type": "string",
            "title": "Colour",
            "x-openai-input": {"type": "color", "options": []},
        }
        return {"type": "object", "properties": {"colour": colour}}
    src = "http://example.com/bolt.png" if kind == "http_thumbnail" else "javascript:alert(1)"
    option = {"const": "bolt", "title": "Bolt", "x-openai-thumbnail": {"src": src}}
    field = {"type": "string", "title": "Part", "oneOf": [option]}
    return {"type": "object", "properties": {"part": field}}


class _OpenAIFormRequest(Request[ElicitRequestFormParams, Literal["openai/elicitation/create"]]):
    method: Literal["openai/elicitation/create"] = "openai/elicitation/create"


def said(result: Any) -> str:
    if result.action == "accept":
        data = result.data.model_dump(mode="json") if isinstance(result.data, BaseModel) else {}
        return f"accepted {json.dumps(data, sort_keys=True)}"
    return {"decline": "declined", "cancel": "cancelled"}[result.action]


def modern(ctx: Context[Any, Any]) -> bool:
    return ctx.protocol_version in MODERN_PROTOCOL_VERSIONS


def build() -> MCPServer:
    extensions = OpenAIExtensions()
    server = MCPServer("forms", middleware=[extensions.middleware])

    @server.tool(structured_output=False)
    async def order_parts(ctx: Context[Any, Any]) -> InputRequiredResult | str:
        """Asks the person for an order with a rich form."""
        try:
            if modern(ctx):
                asked = request_form_input(ctx, key="order", message="Your order", schema=Order)
                if isinstance(asked, InputRequiredResult):
                    return asked
                return said(asked)
            return said(await elicit_form(ctx, message="Your order", schema=Order))
        except (MCPError, ValueError) as error:
            return f"refused: {error}"

    async def order_view() -> str:
        return "the order view"

    server.add_tool(order_view, name="order_view", meta={"ui": {"resourceUri": VIEW_URI}})

    @server.resource(VIEW_URI, mime_type=UI_MIME)
    def order_page() -> str:
        return VIEW

    for kind in ("unknown_input", "http_thumbnail", "script_thumbnail"):
        add_hostile(server, kind)
    return server


def add_hostile(server: MCPServer, kind: str) -> None:
    schema = hostile_schema(kind)

    async def hostile(ctx: Context[Any, Any]) -> InputRequiredResult | str:
        if modern(ctx):
            answers = ctx.input_responses or {}
            if "form" in answers:
                return f"answered {answers['form']!r}"  # the host must never get here
            # The SDK drops a form's `_meta` from `input_required`; its middleware puts back
            # those listed here (as `request_form_input` lists its own).
            schemas = request_schemas.get()
            assert schemas is not None, "the SDK's middleware is registered"
            schemas["form"] = schema
            params = ElicitRequestFormParams(
                message=kind,
                requested_schema={"type": "object", "properties": {}},
                _meta={"openai/elicitation": {"requestedSchema": schema}},
            )
            return InputRequiredResult(input_requests={"form": ElicitRequest(params=params)})
        request = _OpenAIFormRequest(
            params=ElicitRequestFormParams(message=kind, requested_schema=schema)
        )
        try:
            result = await ctx.session.send_request(
                cast(ServerRequest, request),
                ElicitResult,
                metadata=ServerMessageMetadata(related_request_id=ctx.request_context.request_id),
            )
        except MCPError as error:
            return f"refused: {error}"
        return f"answered {result.action}"  # the host must never get here

    description = f"Asks with a hostile form ({kind})"
    server.add_tool(hostile, name=kind, description=description, structured_output=False)


async def serve_http(server: MCPServer, port: int) -> None:
    """Streamable HTTP on loopback, with event-stream answers: only they carry a call's
    `openai/elicitation/create` to the host before the call's result."""
    manager = StreamableHTTPSessionManager(server._lowlevel_server, json_response=False)

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
        elif scope["type"] == "http" and scope["path"].rstrip("/") == "/mcp":
            await manager.handle_request(scope, receive, send)
        elif scope["type"] == "http":
            await send({"type": "http.response.start", "status": 404, "headers": []})
            await send({"type": "http.response.body", "body": b"the MCP endpoint is /mcp\n"})

    config = HypercornConfig()
    config.bind = [f"127.0.0.1:{port}"]
    config.accesslog = None
    config.graceful_timeout = 1.0
    stop = trio.Event()

    async def on_signal() -> None:
        with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
            async for _ in signals:
                stop.set()
                return

    async with manager.run(), trio.open_nursery() as nursery:
        nursery.start_soon(on_signal)
        await nursery.start(
            functools.partial(hypercorn_serve, app, config, shutdown_trigger=stop.wait)
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--http", action="store_true", help="serve Streamable HTTP, not stdio")
    parser.add_argument("--port", type=int, default=8768)
    args = parser.parse_args()
    server = build()

    async def serve() -> None:
        async with stdio_server() as (read, write):
            await server._lowlevel_server.run(
                read, write, server._lowlevel_server.create_initialization_options()
            )

    if args.http:
        trio.run(serve_http, server, args.port)
    else:
        trio.run(serve)


if __name__ == "__main__":
    main()
