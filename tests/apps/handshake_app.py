"""An app written in the handshake style: its tools ask the client (sampling, elicitation) with
server-to-client requests from inside the call, as the Python SDK's everything-server example
and most apps written before 2026-07-28 do. It never returns `input_required`, so a client that
reaches it on 2026-07-28 gets the SDK's "no back-channel" error from these tools.

It serves the conformance suite's scenarios for those tools under the names and with the
schemas they ask for (`test_sampling`, `test_elicitation`, `test_elicitation_sep1034_defaults`,
`test_elicitation_sep1330_enums`), plus `test_simple_text`, a prompt and a resource.

    python handshake_app.py                                  # stdio (how mcpapps hosts it)
    python handshake_app.py --http --port 8767 [--host H]    # Streamable HTTP at /mcp
"""

from __future__ import annotations

import argparse
import functools
import json
import logging
import signal
import sys
import warnings
from typing import Annotated, Any

import trio
from hypercorn.config import Config as HypercornConfig
from hypercorn.trio import serve as hypercorn_serve
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp.types import ElicitResult, SamplingMessage, TextContent
from pydantic import Field
from scenario_schemas import DEFAULTS_SCHEMA, ENUMS_SCHEMA, USER_INFO_SCHEMA

log = logging.getLogger("handshake-app")
warnings.filterwarnings("ignore", category=MCPDeprecationWarning)

server = MCPServer("handshake-style-app", version="1.0.0")
tool = functools.partial(server.tool, structured_output=False)


@tool()
def test_simple_text() -> str:
    """Returns simple text content"""
    return "This is a simple text response for testing."


@tool()
async def test_sampling(
    prompt: Annotated[str, Field(description="The prompt to send to the LLM")], ctx: Context
) -> str:
    """Asks the client's LLM (sampling/createMessage) and returns its answer"""
    messages = [SamplingMessage(role="user", content=TextContent(type="text", text=prompt))]
    result = await ctx.session.create_message(
        messages, max_tokens=100, related_request_id=ctx.request_id
    )
    reply = result.content.text if isinstance(result.content, TextContent) else "(not text)"
    return f"LLM response: {reply}"


async def _elicit(ctx: Context, message: str, schema: dict[str, Any]) -> str:
    result: ElicitResult = await ctx.session.elicit_form(
        message, schema, related_request_id=ctx.request_id
    )
    return f"action={result.action}, content={json.dumps(result.content or {})}"


@tool()
async def test_elicitation(
    message: Annotated[str, Field(description="The message to show the user")], ctx: Context
) -> str:
    """Asks the user for a username and email (elicitation/create)"""
    return f"User response: {await _elicit(ctx, message, USER_INFO_SCHEMA)}"


@tool()
async def test_elicitation_sep1034_defaults(ctx: Context) -> str:
    """Elicits with a default value for every primitive type (SEP-1034)"""
    answer = await _elicit(ctx, "Please review and update the form fields", DEFAULTS_SCHEMA)
    return f"Elicitation completed: {answer}"


@tool()
async def test_elicitation_sep1330_enums(ctx: Context) -> str:
    """Elicits with all five enum schema variants (SEP-1330)"""
    answer = await _elicit(ctx, "Please choose from the options", ENUMS_SCHEMA)
    return f"Elicitation completed: {answer}"


@tool()
async def test_elicitation_url(ctx: Context) -> str:
    """Asks the user to open a link (URL-mode elicitation)"""
    result = await ctx.session.elicit_url(
        "Please sign in",
        "https://example.com/sign-in",
        "sign-in-1",
        related_request_id=ctx.request_id,
    )
    return f"URL response: action={result.action}"


@tool()
async def ask_twice(ctx: Context) -> str:
    """Asks the client's LLM, then the user: two questions in one call"""
    messages = [SamplingMessage(role="user", content=TextContent(type="text", text="first"))]
    sampled = await ctx.session.create_message(
        messages, max_tokens=10, related_request_id=ctx.request_id
    )
    said = sampled.content.text if isinstance(sampled.content, TextContent) else "(not text)"
    answer = await _elicit(ctx, f"The LLM said {said}; who are you?", USER_INFO_SCHEMA)
    return f"LLM said {said}; user: {answer}"


@server.prompt(name="test_simple_prompt", description="A simple prompt without arguments")
def test_simple_prompt() -> str:
    return "This is a simple prompt for testing."


@server.resource("test://static-text", name="static-text", mime_type="text/plain")
def static_text() -> str:
    return "This is the content of the static text resource."


# --- Streamable HTTP (the same server, for running the suite against the app directly) -------


async def serve_http(host: str, port: int) -> None:
    loopback = host in ("127.0.0.1", "localhost", "::1")
    security = (
        TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
            allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
        )
        if loopback
        else None
    )
    # SSE responses: only they carry a call's sampling/elicitation requests before its result.
    manager = StreamableHTTPSessionManager(
        server._lowlevel_server, json_response=False, security_settings=security
    )

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
    config.bind = [f"[{host}]:{port}" if ":" in host else f"{host}:{port}"]
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
        log.info("listening on %s:%d/mcp", host, port)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--http", action="store_true", help="serve Streamable HTTP, not stdio")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8767)
    args = parser.parse_args()
    # stdout carries JSON-RPC in stdio mode: diagnostics go to stderr.
    logging.basicConfig(force=True, stream=sys.stderr, level=logging.INFO)
    if args.http:
        trio.run(serve_http, args.host, args.port)
    else:
        trio.run(server.run_stdio_async)


if __name__ == "__main__":
    main()
