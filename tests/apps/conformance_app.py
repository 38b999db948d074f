"""The fixture server for the official MCP conformance suite (@modelcontextprotocol/conformance).

It offers what the suite's server scenarios call, under the names and with the content their
sources ask for (`test_simple_text`, `test://static-text`, `test_simple_prompt`, ...): tools with
every content type, logging, progress, sampling, elicitation and an SSE reconnection probe;
static resources, a resource template and subscriptions; prompts; completions.

    python conformance_app.py                                   # stdio (how mcpapps hosts it)
    python conformance_app.py --http --port 8766 [--host H]     # Streamable HTTP at /mcp

Both transports run the same handlers, so a client sees the same server either way. Only
JSON-RPC goes to stdout in stdio mode; diagnostics go to stderr.

The suite's client speaks the handshake era (2025-11-25). The handlers also serve 2026-07-28
clients, where a server cannot send requests: there sampling and elicitation come back as an
`InputRequiredResult` that the client answers by retrying the call.
"""

from __future__ import annotations

import argparse
import base64
import functools
import json
import logging
import os
import signal
import sys
import warnings
from collections import defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, Any, TypeVar

import anyio
import trio
from hypercorn.config import Config as HypercornConfig
from hypercorn.trio import serve as hypercorn_serve
from mcp.server import ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer, UserMessage
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.server.streamable_http import EventCallback, EventId, EventMessage, EventStore, StreamId
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp.types import (
    AudioContent,
    Completion,
    CompletionArgument,
    CompletionContext,
    CreateMessageRequest,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitResult,
    EmbeddedResource,
    EmptyResult,
    ImageContent,
    InputRequiredResult,
    JSONRPCError,
    JSONRPCMessage,
    JSONRPCResponse,
    LoggingLevel,
    PromptReference,
    ResourceTemplateReference,
    SamplingMessage,
    SetLevelRequestParams,
    SubscribeRequestParams,
    TextContent,
    TextResourceContents,
    UnsubscribeRequestParams,
)
from mcp.types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import Field
from scenario_schemas import DEFAULTS_SCHEMA, ENUMS_SCHEMA, USER_INFO_SCHEMA

log = logging.getLogger("conformance-app")

# The suite's client speaks 2025-11-25, where logging and sampling are current features; the
# SDK's warnings that 2026-07-28 deprecates them would only be noise on stderr here.
warnings.filterwarnings("ignore", category=MCPDeprecationWarning)

# A 1x1 red PNG and a minimal (silent) WAV, as the scenarios suggest.
PNG_BASE64 = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJ"
    "AAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)
WAV_BASE64 = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="

LOG_LEVELS: tuple[LoggingLevel, ...] = (
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
)


# --- Per-client state ---------------------------------------------------------------------------


@dataclass
class ClientState:
    """What one client asked for with the handshake era's `logging/setLevel` and
    `resources/subscribe` (2026-07-28 has neither)."""

    log_level: LoggingLevel | None = None  # None: every level, until the client sets one
    subscriptions: set[str] = field(default_factory=set)


def _client_key(request: object) -> str | None:
    """Which client a request came from: its HTTP session id, or None for the one stdio client.

    The SDK offers handlers no public handle on their connection, but the HTTP request (when
    there is one) carries the session id. Entries are never dropped: this is a test fixture.
    """
    headers = getattr(request, "headers", None)
    return headers.get("mcp-session-id") if headers is not None else None


clients: defaultdict[str | None, ClientState] = defaultdict(ClientState)


def client_state(ctx: Context) -> ClientState:
    return clients[_client_key(ctx.request_context.request)]


# --- Tools: content of every type ---------------------------------------------------------------

# A JSON Schema 2020-12 inputSchema with the keywords SEP-1613 says must survive listing
# unchanged: `$schema`, `$defs` (with a `$ref` into it) and `additionalProperties`.
JSON_SCHEMA_2020_12 = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
    "additionalProperties": False,
}


def json_schema_2020_12_tool(name: str | None = None, address: dict[str, str] | None = None) -> str:
    """Tool with JSON Schema 2020-12 features"""
    return json.dumps({"name": name, "address": address})


def _tool_with_schema(fn: Callable[..., Any], input_schema: dict[str, Any]) -> Tool:
    """A tool that advertises `input_schema` verbatim instead of the one derived from `fn`.

    The SDK derives schemas with pydantic, which has no way to say `$schema` or `$defs` like
    this; arguments are still validated against `fn`'s own signature.
    """
    return Tool.from_function(fn, structured_output=False).model_copy(
        update={"parameters": input_schema}
    )


server = MCPServer(
    "mcp-conformance-fixture",
    version="1.0.0",
    instructions="Fixture for the MCP conformance suite's server scenarios.",
    tools=[_tool_with_schema(json_schema_2020_12_tool, JSON_SCHEMA_2020_12)],
)
# Plain text results: without this the SDK would add an outputSchema and structuredContent
# {"result": ...} to every `-> str` tool, which no scenario asks for.
tool = functools.partial(server.tool, structured_output=False)


@tool()
def test_simple_text() -> str:
    """Returns simple text content"""
    return "This is a simple text response for testing."


@tool()
def test_image_content() -> list[ImageContent]:
    """Returns image content (a 1x1 PNG)"""
    return [ImageContent(type="image", data=PNG_BASE64, mime_type="image/png")]


@tool()
def test_audio_content() -> list[AudioContent]:
    """Returns audio content (a tiny WAV)"""
    return [AudioContent(type="audio", data=WAV_BASE64, mime_type="audio/wav")]


@tool()
def test_embedded_resource() -> list[EmbeddedResource]:
    """Returns an embedded text resource"""
    return [
        EmbeddedResource(
            type="resource",
            resource=TextResourceContents(
                uri="test://embedded-resource",
                mime_type="text/plain",
                text="This is an embedded resource content.",
            ),
        )
    ]


@tool()
def test_multiple_content_types() -> list[TextContent | ImageContent | EmbeddedResource]:
    """Returns text, image and embedded resource content together"""
    return [
        TextContent(type="text", text="Multiple content types test:"),
        ImageContent(type="image", data=PNG_BASE64, mime_type="image/png"),
        EmbeddedResource(
            type="resource",
            resource=TextResourceContents(
                uri="test://mixed-content-resource",
                mime_type="application/json",
                text=json.dumps({"test": "data", "value": 123}),
            ),
        ),
    ]


@tool()
def test_error_handling() -> str:
    """Always fails with an isError result"""
    # A ToolError's text reaches the client; the SDK hides any other exception's text.
    raise ToolError("This tool intentionally returns an error for testing")


# --- Tools: notifications during a call ---------------------------------------------------------


async def log_to_client(ctx: Context, level: LoggingLevel, message: str) -> None:
    """Send `notifications/message` on the call's own stream, if the client's level allows it.

    Handshake era: the SDK sends every level and leaves `logging/setLevel` filtering to the
    application (here). 2026-07-28: the SDK itself sends only what the request's `_meta`
    opted into.
    """
    wanted = client_state(ctx).log_level
    if wanted is not None and LOG_LEVELS.index(level) < LOG_LEVELS.index(wanted):
        return
    await ctx.log(level, message, logger_name="conformance-app")


@tool()
async def test_tool_with_logging(ctx: Context) -> str:
    """Sends three info log notifications about 50 ms apart while it runs"""
    # anyio, not trio: the SDK may run this server under either (its in-process Client does).
    await log_to_client(ctx, "info", "Tool execution started")
    await anyio.sleep(0.05)
    await log_to_client(ctx, "info", "Tool processing data")
    await anyio.sleep(0.05)
    await log_to_client(ctx, "info", "Tool execution completed")
    return "Tool with logging executed successfully"


@tool()
async def test_tool_with_progress(ctx: Context) -> str:
    """Reports progress 0, 50 and 100 of 100 (when the call has a progress token)"""
    # A no-op without `_meta.progressToken`: then the call just takes its time.
    await ctx.report_progress(0, 100, "Starting")
    await anyio.sleep(0.05)
    await ctx.report_progress(50, 100, "Halfway")
    await anyio.sleep(0.05)
    await ctx.report_progress(100, 100, "Done")
    return "Tool with progress executed successfully"


@tool()
async def test_reconnection(ctx: Context) -> str:
    """Closes its SSE stream mid-call, then answers on the stream the client resumes (SEP-1699)"""
    await log_to_client(ctx, "info", "Before disconnect")
    # The SDK closes the stream at once, even before its writer has sent the priming event
    # (the event id a client resumes from); give that and the log above time to go out.
    await anyio.sleep(0.1)
    # Only does something over Streamable HTTP with an event store and a client at 2025-11-25
    # or later (it must understand priming events); elsewhere the call simply goes on.
    await ctx.close_sse_stream()
    await anyio.sleep(0.2)  # time for the client to reconnect with Last-Event-ID
    await log_to_client(ctx, "info", "After reconnect")
    return "Reconnection test completed"


# --- Tools: asking the client (sampling, elicitation) -------------------------------------------


def _require_capability(ctx: Context, name: str) -> None:
    """Fail the call (isError) when the client did not declare `sampling` or `elicitation`."""
    capabilities = ctx.client_capabilities
    if capabilities is None or getattr(capabilities, name) is None:
        raise ToolError(f"This tool needs a client with the {name} capability")


AnswerT = TypeVar("AnswerT", CreateMessageResult, ElicitResult)


def _answer_or_ask(
    ctx: Context,
    key: str,
    request: CreateMessageRequest | ElicitRequest,
    answer_type: type[AnswerT],
) -> AnswerT | InputRequiredResult:
    """2026-07-28 has no server-to-client requests: the question goes back in an
    `InputRequiredResult`, and the client's retry carries the answer under `key`."""
    answer = (ctx.input_responses or {}).get(key)
    if isinstance(answer, answer_type):
        return answer
    return InputRequiredResult(input_requests={key: request})


async def sample(ctx: Context, prompt: str) -> CreateMessageResult | InputRequiredResult:
    _require_capability(ctx, "sampling")
    messages = [SamplingMessage(role="user", content=TextContent(type="text", text=prompt))]
    if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
        request = CreateMessageRequest(
            params=CreateMessageRequestParams(messages=messages, max_tokens=100)
        )
        return _answer_or_ask(ctx, "sampling", request, CreateMessageResult)
    # related_request_id: the request rides this call's own stream. Without it the SDK would
    # use the standalone GET stream, which a client need not have open.
    return await ctx.session.create_message(
        messages, max_tokens=100, related_request_id=ctx.request_id
    )


async def elicit(
    ctx: Context, message: str, schema: dict[str, Any]
) -> ElicitResult | InputRequiredResult:
    # Schemas are written out rather than derived from pydantic models so that they are on the
    # wire exactly as the scenarios check them (enumNames, oneOf without enum, defaults, ...).
    _require_capability(ctx, "elicitation")
    if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
        request = ElicitRequest(
            params=ElicitRequestFormParams(message=message, requested_schema=schema)
        )
        return _answer_or_ask(ctx, "elicitation", request, ElicitResult)
    return await ctx.session.elicit_form(message, schema, related_request_id=ctx.request_id)


def _describe(result: ElicitResult) -> str:
    return f"action={result.action}, content={json.dumps(result.content or {})}"


@tool()
async def test_sampling(
    prompt: Annotated[str, Field(description="The prompt to send to the LLM")], ctx: Context
) -> str | InputRequiredResult:
    """Asks the client's LLM (sampling/createMessage) and returns its answer"""
    result = await sample(ctx, prompt)
    if isinstance(result, InputRequiredResult):
        return result
    reply = result.content.text if isinstance(result.content, TextContent) else "(not text)"
    return f"LLM response: {reply}"


@tool()
async def test_elicitation(
    message: Annotated[str, Field(description="The message to show the user")], ctx: Context
) -> str | InputRequiredResult:
    """Asks the user for a username and email (elicitation/create)"""
    result = await elicit(ctx, message, USER_INFO_SCHEMA)
    if isinstance(result, InputRequiredResult):
        return result
    return f"User response: {_describe(result)}"


@tool()
async def test_elicitation_sep1034_defaults(ctx: Context) -> str | InputRequiredResult:
    """Elicits with a default value for every primitive type (SEP-1034)"""
    result = await elicit(ctx, "Please review and update the form fields", DEFAULTS_SCHEMA)
    if isinstance(result, InputRequiredResult):
        return result
    return f"Elicitation completed: {_describe(result)}"


@tool()
async def test_elicitation_sep1330_enums(ctx: Context) -> str | InputRequiredResult:
    """Elicits with all five enum schema variants (SEP-1330)"""
    result = await elicit(ctx, "Please choose from the options", ENUMS_SCHEMA)
    if isinstance(result, InputRequiredResult):
        return result
    return f"Elicitation completed: {_describe(result)}"


# --- Resources ----------------------------------------------------------------------------------


@server.resource(
    "test://static-text",
    name="static-text",
    description="A static text resource",
    mime_type="text/plain",
)
def static_text() -> str:
    return "This is the content of the static text resource."


@server.resource(
    "test://static-binary",
    name="static-binary",
    description="A static binary resource (a 1x1 PNG)",
    mime_type="image/png",
)
def static_binary() -> bytes:
    return base64.b64decode(PNG_BASE64)


@server.resource(
    "test://template/{id}/data",
    name="template-data",
    description="Data for an id, substituted from the URI",
    mime_type="application/json",
)
def template_data(id: str) -> str:
    return json.dumps({"id": id, "templateTest": True, "data": f"Data for ID: {id}"})


@server.resource(
    "test://watched-resource",
    name="watched-resource",
    description="A resource clients may subscribe to",
    mime_type="text/plain",
)
def watched_resource() -> str:
    return "Watched resource content"


# --- Prompts ------------------------------------------------------------------------------------


@server.prompt()
def test_simple_prompt() -> list[UserMessage]:
    """A simple prompt without arguments"""
    return [UserMessage(TextContent(type="text", text="This is a simple prompt for testing."))]


@server.prompt()
def test_prompt_with_arguments(
    arg1: Annotated[str, Field(description="First test argument")],
    arg2: Annotated[str, Field(description="Second test argument")],
) -> list[UserMessage]:
    """A prompt with two required arguments"""
    text = f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"
    return [UserMessage(TextContent(type="text", text=text))]


@server.prompt()
def test_prompt_with_embedded_resource(
    resourceUri: Annotated[str, Field(description="URI of the resource to embed")],
) -> list[UserMessage]:
    """A prompt that embeds a resource"""
    resource = TextResourceContents(
        uri=resourceUri, mime_type="text/plain", text="Embedded resource content for testing."
    )
    return [
        UserMessage(EmbeddedResource(type="resource", resource=resource)),
        UserMessage(TextContent(type="text", text="Please process the embedded resource above.")),
    ]


@server.prompt()
def test_prompt_with_image() -> list[UserMessage]:
    """A prompt with image content"""
    return [
        UserMessage(ImageContent(type="image", data=PNG_BASE64, mime_type="image/png")),
        UserMessage(TextContent(type="text", text="Please analyze the image above.")),
    ]


# --- Completions --------------------------------------------------------------------------------

COMPLETIONS: dict[tuple[str, str], list[str]] = {
    ("test_prompt_with_arguments", "arg1"): ["paris", "park", "party", "test1", "testValue1"],
    ("test_prompt_with_arguments", "arg2"): ["test2", "testValue2", "world"],
    ("test_prompt_with_embedded_resource", "resourceUri"): [
        "test://static-text",
        "test://example-resource",
    ],
    ("test://template/{id}/data", "id"): ["1", "2", "3", "123"],
}


@server.completion()
async def complete(
    ref: PromptReference | ResourceTemplateReference,
    argument: CompletionArgument,
    context: CompletionContext | None,
) -> Completion:
    """Known values that start with what was typed; none for anything else."""
    key = ref.name if isinstance(ref, PromptReference) else ref.uri
    values = [v for v in COMPLETIONS.get((key, argument.name), []) if v.startswith(argument.value)]
    return Completion(values=values, total=len(values), has_more=False)


# --- logging/setLevel and resources/(un)subscribe (handshake era only) --------------------------
# MCPServer has no public API for these; its low-level server takes them as plain handlers (the
# SDK's own conformance server does the same). Registering them also makes the server declare
# the `logging` and `resources.subscribe` capabilities.


async def set_logging_level(
    ctx: ServerRequestContext, params: SetLevelRequestParams
) -> EmptyResult:
    clients[_client_key(ctx.request)].log_level = params.level
    return EmptyResult()


async def subscribe(ctx: ServerRequestContext, params: SubscribeRequestParams) -> EmptyResult:
    # Remembered only: nothing here changes, so no notifications/resources/updated is ever due.
    clients[_client_key(ctx.request)].subscriptions.add(str(params.uri))
    return EmptyResult()


async def unsubscribe(ctx: ServerRequestContext, params: UnsubscribeRequestParams) -> EmptyResult:
    clients[_client_key(ctx.request)].subscriptions.discard(str(params.uri))
    return EmptyResult()


_lowlevel = server._lowlevel_server
_lowlevel.add_request_handler("logging/setLevel", SetLevelRequestParams, set_logging_level)
_lowlevel.add_request_handler("resources/subscribe", SubscribeRequestParams, subscribe)
_lowlevel.add_request_handler("resources/unsubscribe", UnsubscribeRequestParams, unsubscribe)


# --- Transports ---------------------------------------------------------------------------------


class InMemoryEventStore(EventStore):
    """SSE events kept for replay after a client reconnects with Last-Event-ID (SEP-1699).

    With an event store the SDK starts each SSE response with a priming event (an id, empty
    data, and the retry interval) and lets `test_reconnection` close its stream mid-call.
    Bounded, as the events of every session pile up here. Stream ids are JSON-RPC request ids,
    which repeat across sessions, so two clients resuming the same id at the same moment could
    see each other's events: good enough for a fixture that serves one test client at a time.
    """

    def __init__(self, max_events: int = 10_000) -> None:
        self._events: deque[tuple[int, StreamId, JSONRPCMessage | None]] = deque(maxlen=max_events)
        self._next_id = 1

    async def store_event(self, stream_id: StreamId, message: JSONRPCMessage | None) -> EventId:
        event_id = self._next_id
        self._next_id += 1
        self._events.append((event_id, stream_id, message))
        return str(event_id)

    async def replay_events_after(
        self, last_event_id: EventId, send_callback: EventCallback
    ) -> StreamId | None:
        try:
            after = int(last_event_id)
        except ValueError:
            return None
        stream = next((s for i, s, _ in self._events if i == after), None)
        if stream is None:
            return None
        for event_id, stream_id, message in list(self._events):
            # Priming events (no message) only mark a position; there is nothing to resend.
            if stream_id != stream or event_id <= after or message is None:
                continue
            await send_callback(EventMessage(message, str(event_id)))
            if isinstance(message, JSONRPCResponse | JSONRPCError):
                break  # the response ends the stream; what follows is a later request's
        return stream


def _security(host: str) -> TransportSecuritySettings | None:
    """Host/Origin checks against DNS rebinding for loopback binds, as the SDK does by default
    (the suite's dns-rebinding-protection scenario wants a 4xx for `Host: evil.example.com`)."""
    if host not in ("127.0.0.1", "localhost", "::1"):
        return None
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
        allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
    )


async def _on_signal(shut_down: Callable[[], object]) -> None:
    """Wait for SIGTERM or SIGINT, then begin the shutdown."""
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async for signum in signals:
            log.info("%s received, shutting down", signal.Signals(signum).name)
            shut_down()
            return


async def _not_found(send: Any) -> None:
    body = b"Not found: the MCP endpoint is /mcp\n"
    headers = [(b"content-type", b"text/plain"), (b"content-length", b"%d" % len(body))]
    await send({"type": "http.response.start", "status": 404, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def serve_http(host: str, port: int) -> None:
    """Streamable HTTP at /mcp on Hypercorn's Trio worker (the SDK's own `run` needs uvicorn)."""
    manager = StreamableHTTPSessionManager(
        server._lowlevel_server,
        # SSE responses, not JSON: only an SSE response can carry this call's log and progress
        # notifications and its sampling/elicitation requests before the result.
        json_response=False,
        event_store=InMemoryEventStore(),
        retry_interval=100,  # ms: how soon a client should reconnect to a closed stream
        security_settings=_security(host),
    )

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
        elif scope["type"] != "http":
            return  # no websockets here; Hypercorn refuses the upgrade
        elif scope["path"].rstrip("/") == "/mcp":
            await manager.handle_request(scope, receive, send)
        else:
            await _not_found(send)

    config = HypercornConfig()
    config.bind = [f"[{host}]:{port}" if ":" in host else f"{host}:{port}"]
    config.accesslog = None
    config.errorlog = logging.getLogger("hypercorn.error")  # our stderr format, not a second one
    # Open GET streams would otherwise hold a shutdown for the default graceful timeout.
    config.graceful_timeout = 1.0

    stop = trio.Event()
    async with manager.run(), trio.open_nursery() as nursery:
        nursery.start_soon(_on_signal, stop.set)
        binds = await nursery.start(
            functools.partial(hypercorn_serve, app, config, shutdown_trigger=stop.wait)
        )
        for bind in binds:
            log.info("listening on %s/mcp", bind)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--http", action="store_true", help="serve Streamable HTTP, not stdio")
    parser.add_argument("--host", default="127.0.0.1", help="HTTP bind address (127.0.0.1)")
    parser.add_argument("--port", type=int, default=8766, help="HTTP port (8766; 0 = any free)")
    args = parser.parse_args(argv)
    # force: `MCPServer()` already installed its own handler. Ours is plain and on stderr,
    # because in stdio mode stdout carries JSON-RPC and nothing else.
    logging.basicConfig(
        force=True,
        stream=sys.stderr,
        level=os.environ.get("CONFORMANCE_APP_LOG_LEVEL", "INFO").upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    if args.http:
        trio.run(serve_http, args.host, args.port)
    else:
        trio.run(server.run_stdio_async)


if __name__ == "__main__":
    main()
