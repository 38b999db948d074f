"""A stdio MCP app that misbehaves on demand, for the supervisor's tests.

Run as `python tests/apps/fixture_app.py [options]`. It speaks MCP over stdio with the real SDK (the
low-level `mcp.server.Server`, under Trio), in both protocol eras: the handshake (`initialize`) and
2026-07-28 (`server/discover`). Only JSON-RPC goes to stdout unless `--garbage` asks otherwise;
diagnostics go to stderr. See `--help` for the options; each one is explained where it is handled.

Tools always served:
  echo(text) -> text              add(a, b) -> a + b          sleep(seconds) -> "slept"
  pid() -> this process's pid     fail() -> isError "fixture failure"
  crash(code=3): os._exit(code) mid-call, no answer
  freeze(): blocks the whole process (time.sleep), so nothing is answered any more, not even ping
  exit_clean(): answers "exiting", then the process exits with code 0
"""

from __future__ import annotations

import argparse
import io
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import mcp_types as types
import trio
from mcp.server import NotificationOptions, Server, ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.server.subscriptions import (
    InMemorySubscriptionBus,
    ListenHandler,
    PromptsListChanged,
    ToolsListChanged,
)
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

UI_EXTENSION = "io.modelcontextprotocol/ui"
UI_MIME = "text/html;profile=mcp-app"
UI_URI = "ui://fixture/view.html"
UI_HTML = "<!doctype html><html><body><p>fixture view</p></body></html>"
GARBAGE_LINES = ("this is not json", "{broken", "fixture: still not json ]]")

Ctx = ServerRequestContext[Any, Any]
ToolFn = Callable[[Ctx, dict[str, Any]], Awaitable[types.CallToolResult]]


def log(message: str) -> None:
    sys.stderr.write(f"fixture: {message}\n")
    sys.stderr.flush()


def die(code: int, message: str) -> None:
    """Exit at once, without unwinding: what a crashing app looks like from outside."""
    log(message)
    os._exit(code)


def text(value: str, *, is_error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=value)], is_error=is_error
    )


def schema(**properties: str) -> dict[str, Any]:
    """An object inputSchema whose properties are all required, e.g. schema(text="string")."""
    return {
        "type": "object",
        "properties": {name: {"type": kind} for name, kind in properties.items()},
        "required": list(properties),
    }


@dataclass
class FixtureTool:
    tool: types.Tool
    run: ToolFn


class Wire:
    """The stdin/stdout handed to the SDK's `stdio_server` instead of the process's own.

    The SDK transport reads lines from `async for line in stdin` and writes each message with
    `await stdout.write(line)` then `await stdout.flush()`; this class is those two objects. It sees
    every frame, so it can put garbage on the real stdout right after a tools/call response
    (`--garbage`) and exit with code 0 right after the `exit_clean` response is out. (Passing our
    own streams also keeps fd 1 the real stdout, where the SDK would divert it to stderr.)
    """

    def __init__(self, *, garbage: bool, updates: bool = False) -> None:
        self._in = io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace")
        self._out = sys.stdout.buffer
        self._garbage = garbage
        # --subscribable: ids of resources/subscribe requests not answered yet → their uri; the
        # answer and `notifications/resources/updated` for that uri go out in one write, as an
        # app that sends an update the moment it agrees does.
        self._updates = updates
        self._subscribes: dict[Any, str] = {}
        self._tool_calls: set[Any] = set()  # ids of tools/call requests not answered yet
        self._tool_lists: set[Any] = set()  # ids of tools/list requests not answered yet
        self.exit_after: set[Any] = set()  # ids whose response is followed by exit code 0
        # tool name -> the inputSchema to put on the wire in tools/list results, for schemas the
        # SDK refuses to serialize (it validates every result against the protocol version).
        self.raw_schemas: dict[str, Any] = {}

    def __aiter__(self) -> Wire:
        return self

    async def __anext__(self) -> str:
        line = await trio.to_thread.run_sync(self._in.readline, abandon_on_cancel=True)
        if not line:
            raise StopAsyncIteration
        message = _parse(line)
        if "id" in message and message.get("method") == "tools/call":
            self._tool_calls.add(message["id"])
        if "id" in message and message.get("method") == "tools/list":
            self._tool_lists.add(message["id"])
        if self._updates and "id" in message and message.get("method") == "resources/subscribe":
            self._subscribes[message["id"]] = str(message.get("params", {}).get("uri"))
        return line

    async def write(self, data: str) -> None:
        await trio.to_thread.run_sync(self._write_frame, data)

    async def flush(self) -> None:
        pass  # every write is flushed in _write_frame

    def _write_frame(self, data: str) -> None:
        message = _parse(data)
        is_response = "id" in message and ("result" in message or "error" in message)
        request_id = message.get("id") if is_response else None
        if is_response and request_id in self._tool_lists:
            self._tool_lists.discard(request_id)
            if self.raw_schemas and "result" in message:
                for tool in message["result"].get("tools", []):
                    if tool.get("name") in self.raw_schemas:
                        tool["inputSchema"] = self.raw_schemas[tool["name"]]
                data = json.dumps(message, separators=(",", ":")) + "\n"
        if is_response and (uri := self._subscribes.pop(request_id, None)) is not None:
            update = {"method": "notifications/resources/updated", "params": {"uri": uri}}
            data += json.dumps({"jsonrpc": "2.0", **update}) + "\n"
        self._out.write(data.encode())
        self._out.flush()
        if not is_response:
            return
        if request_id in self._tool_calls:
            self._tool_calls.discard(request_id)
            if self._garbage:
                write_garbage()
        if request_id in self.exit_after:
            die(0, "exit_clean: answered, exiting with code 0")


def _parse(line: str) -> dict[str, Any]:
    try:
        message = json.loads(line)
    except ValueError:
        return {}
    return message if isinstance(message, dict) else {}


def write_garbage() -> None:
    sys.stdout.buffer.write("".join(f"{line}\n" for line in GARBAGE_LINES).encode())
    sys.stdout.buffer.flush()


@dataclass
class Fixture:
    options: argparse.Namespace
    wire: Wire
    tools: dict[str, FixtureTool] = field(default_factory=dict)
    hidden: set[str] = field(default_factory=set)  # removed at run time by remove_tool
    resources: list[types.Resource] = field(default_factory=list)
    templates: list[types.ResourceTemplate] = field(default_factory=list)
    prompts: list[types.Prompt] = field(default_factory=list)
    calls: int = 0
    gated: int = 0  # gate calls waiting now
    log_level: str | None = None  # --logging: the level the last logging/setLevel set
    bus: InMemorySubscriptionBus = field(default_factory=InMemorySubscriptionBus)

    def add(self, name: str, input_schema: dict[str, Any], run: ToolFn, **extra: Any) -> None:
        self.tools[name] = FixtureTool(
            types.Tool(name=name, input_schema=input_schema, **extra), run
        )

    # --- the catalog -------------------------------------------------------------------------

    def build(self) -> None:
        opts = self.options
        self.add("echo", schema(text="string"), self._echo, description="Returns its text.")
        self.add("add", schema(a="integer", b="integer"), self._add, description="a + b")
        self.add(
            "sleep", schema(seconds="number"), self._sleep, description="Sleeps, then answers."
        )
        self.add("pid", schema(), self._pid, description="This process's pid.")
        self.add("crash", {**schema(code="integer"), "required": []}, self._crash)
        self.add("freeze", schema(), self._freeze, description="Blocks the whole process.")
        self.add("exit_clean", schema(), self._exit_clean, description="Answers, then exits 0.")
        self.add("fail", schema(), self._fail, description="A tool error.")

        # --report-client: what the client declared, to check what a host advertises, and the
        # `_meta` a tools/call arrived with, to check what a host adds to it.
        if opts.report_client:
            self.add("client_capabilities", schema(), self._client_capabilities)
            self.add("request_meta", schema(), self._request_meta)
            self.add("request_id", schema(), self._request_id)
            self.add("call_count", schema(), self._call_count)
            # An argument a 2026-07-28 client mirrors in a header (`Mcp-Param-Region`).
            routed = schema(region="string", text="string")
            routed["properties"]["region"]["x-mcp-header"] = "Region"
            self.add("routed", routed, self._echo_arguments)

        # --gates: a call that waits until the test creates a file, and one that says how many
        # wait now, so tests can order events without timing anything.
        if opts.gates:
            self.add("gate", schema(path="string"), self._gate)
            self.add("gated", schema(), self._gated)

        # --logging: logging/setLevel, and a tool that says the level this process was given,
        # to see what a host tells a new process of the app.
        if opts.logging:
            self.add("log_level", schema(), self._log_level)

        # --changing-prompts: the prompt list changes at run time (prompts/list_changed).
        if opts.changing_prompts:
            self.add("add_prompt", schema(name="string"), self._add_prompt)

        # --changing-tools: the tool list changes at run time, with list_changed notifications.
        if opts.changing_tools:
            self.add("add_tool", schema(name="string"), self._add_tool)
            self.add("remove_tool", schema(name="string"), self._remove_tool)

        # --bad-schema: an inputSchema that is not an object, which a bridge must survive. The SDK
        # will not serialize it, so the tool is listed with an object schema that the Wire then
        # replaces on its way out.
        if opts.bad_schema:
            self.add("no_schema_tool", schema(), self._named)
            self.wire.raw_schemas["no_schema_tool"] = {"type": "string"}

        # --app-only: MCP Apps metadata (a tool only the app may call, a tool bound to a view).
        if opts.app_only:
            self.add("app_only_tool", schema(), self._named, _meta={"ui": {"visibility": ["app"]}})
            self.add(
                "model_only_tool", schema(), self._named, _meta={"ui": {"visibility": ["model"]}}
            )
            self.add("ui_tool", schema(), self._ui_tool, _meta={"ui": {"resourceUri": UI_URI}})
            self.resources.append(
                types.Resource(uri=UI_URI, name="fixture view", mime_type=UI_MIME)
            )

        # --tools N: a large catalog, served in pages of --page-size.
        for i in range(opts.tools):
            self.add(f"tool_{i:04d}", schema(), self._named, description=f"Catalog tool {i}.")
            self.resources.append(
                types.Resource(uri=f"fixture://item/{i}", name=f"item {i}", mime_type="text/plain")
            )
        for j in range(opts.tools // 10):
            self.templates.append(
                types.ResourceTemplate(uri_template=f"fixture://template/{j}/{{id}}", name=f"t{j}")
            )
            self.prompts.append(types.Prompt(name=f"prompt_{j:04d}", description=f"Prompt {j}."))

    def page(
        self, items: Sequence[Any], params: types.PaginatedRequestParams | None
    ) -> tuple[list[Any], str | None]:
        """One page of `items` and the next cursor (an offset), or all of them without a size."""
        size = self.options.page_size
        cursor = params.cursor if params is not None else None
        try:
            start = int(cursor) if cursor else 0
        except ValueError:
            start = -1
        if not 0 <= start <= len(items):
            raise MCPError(types.INVALID_PARAMS, f"invalid cursor {cursor!r}")
        if not size:
            return list(items[start:]), None
        end = start + size
        return list(items[start:end]), (str(end) if end < len(items) else None)

    def visible_tools(self) -> list[types.Tool]:
        return [t.tool for name, t in self.tools.items() if name not in self.hidden]

    # --- request handlers --------------------------------------------------------------------

    async def list_tools(
        self, ctx: Ctx, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        tools, cursor = self.page(self.visible_tools(), params)
        return types.ListToolsResult(tools=tools, next_cursor=cursor)

    async def list_resources(
        self, ctx: Ctx, params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        resources, cursor = self.page(self.resources, params)
        return types.ListResourcesResult(resources=resources, next_cursor=cursor)

    async def list_templates(
        self, ctx: Ctx, params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        templates, cursor = self.page(self.templates, params)
        return types.ListResourceTemplatesResult(resource_templates=templates, next_cursor=cursor)

    async def list_prompts(
        self, ctx: Ctx, params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        prompts, cursor = self.page(self.prompts, params)
        return types.ListPromptsResult(prompts=prompts, next_cursor=cursor)

    async def read_resource(
        self, ctx: Ctx, params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        for resource in self.resources:
            if resource.uri == str(params.uri):
                body = UI_HTML if resource.uri == UI_URI else f"content of {resource.uri}"
                contents = types.TextResourceContents(
                    uri=resource.uri, mime_type=resource.mime_type, text=body
                )
                return types.ReadResourceResult(contents=[contents])
        raise MCPError(types.INVALID_PARAMS, f"unknown resource {params.uri}")

    async def get_prompt(
        self, ctx: Ctx, params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        if not any(p.name == params.name for p in self.prompts):
            raise MCPError(types.INVALID_PARAMS, f"unknown prompt {params.name}")
        message = types.PromptMessage(
            role="user", content=types.TextContent(type="text", text=f"prompt {params.name}")
        )
        return types.GetPromptResult(messages=[message])

    async def call_tool(
        self, ctx: Ctx, params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        # --crash-after N: the N-th tools/call (whichever tool) kills the process unanswered.
        self.calls += 1
        if self.calls == self.options.crash_after:
            die(3, f"crashing on tools/call number {self.calls} (--crash-after)")
        tool = self.tools.get(params.name)
        if tool is None or params.name in self.hidden:
            raise MCPError(types.INVALID_PARAMS, f"unknown tool {params.name}")
        try:
            return await tool.run(ctx, {"__name__": params.name, **(params.arguments or {})})
        except (KeyError, TypeError, ValueError) as exc:
            return text(f"bad arguments for {params.name}: {exc!r}", is_error=True)

    def input_schema(self, name: str) -> dict[str, Any] | None:
        tool = self.tools.get(name)
        return tool.tool.input_schema if tool is not None else None

    # --- tools ---------------------------------------------------------------------------------

    async def _echo(self, ctx: Ctx, args: dict[str, Any]) -> types.CallToolResult:
        return text(str(args["text"]))

    async def _add(self, ctx: Ctx, args: dict[str, Any]) -> types.CallToolResult:
        return text(str(int(args["a"]) + int(args["b"])))

    async def _sleep(self, ctx: Ctx, args: dict[str, Any]) -> types.CallToolResult:
        # Logged, so tests can see from outside how many run at once and which were cancelled.
        log("sleep started")
        try:
            await trio.sleep(float(args["seconds"]))
        except trio.Cancelled:
            log("sleep cancelled")
            raise
        return text("slept")

    async def _client_capabilities(self, ctx: Ctx, args: dict[str, Any]) -> types.CallToolResult:
        # Handshake era: declared once in `initialize`; 2026-07-28: carried by every request.
        params = getattr(ctx.session, "client_params", None)
        if params is not None:
            caps = params.capabilities.model_dump(mode="json", by_alias=True, exclude_none=True)
            return text(json.dumps(caps))
        meta = ctx.meta.model_dump(mode="json", by_alias=True) if ctx.meta else {}
        found = [v for k, v in meta.items() if k.endswith("clientCapabilities")]
        return text(json.dumps(found[0] if found else meta))

    async def _request_meta(self, ctx: Ctx, args: dict[str, Any]) -> types.CallToolResult:
        # As the request carried it (in 2026-07-28 with the era's envelope keys beside). The SDK
        # gives a plain dict or a model, depending on the era.
        meta: Any = ctx.meta or {}
        if not isinstance(meta, dict):
            meta = meta.model_dump(mode="json", by_alias=True, exclude_none=True)
        return text(json.dumps(meta, default=str))

    async def _echo_arguments(self, ctx: Ctx, args: dict[str, Any]) -> types.CallToolResult:
        return text(json.dumps(args, sort_keys=True))

    async def _request_id(self, ctx: Ctx, args: dict[str, Any]) -> types.CallToolResult:
        # The JSON-RPC id the request arrived with: which of a host's paths sent it.
        return text(json.dumps(ctx.request_id))

    async def _set_level(self, ctx: Ctx, params: types.SetLevelRequestParams) -> types.EmptyResult:
        self.log_level = params.level
        return types.EmptyResult()

    async def _log_level(self, ctx: Ctx, args: dict[str, Any]) -> types.CallToolResult:
        return text(self.log_level or "none")

    async def _subscribed(
        self, ctx: Ctx, params: types.SubscribeRequestParams
    ) -> types.EmptyResult:
        return types.EmptyResult()  # the update that follows is the wire's (`Wire`)

    async def _call_count(self, ctx: Ctx, args: dict[str, Any]) -> types.CallToolResult:
        # Every tools/call this process was sent, this one included: what reached the app.
        return text(str(self.calls))

    async def _pid(self, ctx: Ctx, args: dict[str, Any]) -> types.CallToolResult:
        # The process the supervisor started: when the tests' fork server forked this app, its
        # launcher (tests/support/forklauncher.py), which stands in for it and says its pid here.
        return text(os.environ.get("MCPAPPS_TESTS_LAUNCHER_PID") or str(os.getpid()))

    async def _crash(self, ctx: Ctx, args: dict[str, Any]) -> types.CallToolResult:
        code = int(args.get("code", 3))
        die(code, f"crash tool: exiting with code {code}")
        raise AssertionError("unreachable")

    async def _gate(self, ctx: Ctx, args: dict[str, Any]) -> types.CallToolResult:
        self.gated += 1
        log("gate waiting")
        try:
            while not os.path.exists(args["path"]):
                await trio.sleep(0.02)
        except trio.Cancelled:
            log("gate cancelled")
            raise
        finally:
            self.gated -= 1
        return text("opened")

    async def _gated(self, ctx: Ctx, args: dict[str, Any]) -> types.CallToolResult:
        return text(str(self.gated))

    async def _freeze(self, ctx: Ctx, args: dict[str, Any]) -> types.CallToolResult:
        log("freeze tool: blocking the whole process")
        time.sleep(3600)  # synchronous on purpose: the event loop stops with it
        return text("thawed")

    async def _exit_clean(self, ctx: Ctx, args: dict[str, Any]) -> types.CallToolResult:
        self.wire.exit_after.add(ctx.request_id)  # Wire exits once this answer is written
        return text("exiting")

    async def _fail(self, ctx: Ctx, args: dict[str, Any]) -> types.CallToolResult:
        return text("fixture failure", is_error=True)

    async def _named(self, ctx: Ctx, args: dict[str, Any]) -> types.CallToolResult:
        return text(args["__name__"])

    async def _ui_tool(self, ctx: Ctx, args: dict[str, Any]) -> types.CallToolResult:
        result = text("ui shown")
        result.structured_content = {"shown": True}
        return result

    async def _add_tool(self, ctx: Ctx, args: dict[str, Any]) -> types.CallToolResult:
        name = str(args["name"])
        self.hidden.discard(name)
        if name not in self.tools:
            self.add(name, schema(), self._named, description="Added at run time.")
        await self._tools_changed(ctx)
        return text(f"added {name}")

    async def _remove_tool(self, ctx: Ctx, args: dict[str, Any]) -> types.CallToolResult:
        name = str(args["name"])
        if name not in self.tools or name in self.hidden:
            return text(f"no tool {name}", is_error=True)
        self.hidden.add(name)
        await self._tools_changed(ctx)
        return text(f"removed {name}")

    async def _add_prompt(self, ctx: Ctx, args: dict[str, Any]) -> types.CallToolResult:
        self.prompts.append(types.Prompt(name=str(args["name"]), description="Added at run time."))
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            await self.bus.publish(PromptsListChanged())
        else:
            await ctx.session.send_prompt_list_changed()
        return text(f"added prompt {args['name']}")

    async def _tools_changed(self, ctx: Ctx) -> None:
        # Handshake era: a plain notifications/tools/list_changed on the connection. 2026-07-28:
        # change notifications travel only on subscriptions/listen streams (fed by the bus).
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            await self.bus.publish(ToolsListChanged())
        else:
            await ctx.session.send_tool_list_changed()

    # --- serving ---------------------------------------------------------------------------------

    def server(self) -> Server[Any]:
        server: Server[Any] = Server(
            self.options.name,
            version="1.0.0",
            get_tool_input_schema=self.input_schema,
            on_list_tools=self.list_tools,
            on_call_tool=self.call_tool,
            on_list_resources=self.list_resources,
            on_list_resource_templates=self.list_templates,
            on_read_resource=self.read_resource,
            on_list_prompts=self.list_prompts,
            on_get_prompt=self.get_prompt,
            # 2026-07-28 delivers list changes only on subscriptions/listen streams; serving it
            # also makes the modern-era capabilities say tools.listChanged.
            on_subscriptions_listen=ListenHandler(self.bus)
            if self.options.changing_tools or self.options.changing_prompts
            else None,
        )
        if self.options.app_only:
            server.extensions[UI_EXTENSION] = {"mimeTypes": [UI_MIME]}
        if self.options.subscribable:
            server.add_request_handler(
                "resources/subscribe", types.SubscribeRequestParams, self._subscribed
            )
        if self.options.logging:
            server.add_request_handler(
                "logging/setLevel", types.SetLevelRequestParams, self._set_level
            )
        return server

    async def serve(self) -> None:
        server = self.server()
        notify = NotificationOptions(
            tools_changed=self.options.changing_tools,
            prompts_changed=self.options.changing_prompts,
        )
        async with stdio_server(stdin=self.wire, stdout=self.wire) as (read, write):  # type: ignore[arg-type]
            if not self.options.modern_only:
                await server.run(read, write, server.create_initialization_options(notify))
                return
            async with trio.open_nursery() as nursery:
                inbound, filtered = trio.open_memory_channel[Any](16)
                nursery.start_soon(_refuse_the_handshake, read, write, inbound)
                await server.run(filtered, write, server.create_initialization_options(notify))
                nursery.cancel_scope.cancel()


async def _refuse_the_handshake(read: Any, write: Any, inbound: Any) -> None:
    """--modern-only: an app of the 2026-07-28 revision alone, as some SDKs build them. It
    answers `initialize` with "unsupported protocol version" naming the revisions it serves."""
    async with inbound:
        async for message in read:
            request = getattr(message, "message", None)
            if isinstance(request, types.JSONRPCRequest) and request.method == "initialize":
                log("refusing initialize: this app serves 2026-07-28 only")
                error = types.JSONRPCError(
                    jsonrpc="2.0",
                    id=request.id,
                    error=types.ErrorData(
                        code=types.UNSUPPORTED_PROTOCOL_VERSION,
                        message="this server speaks 2026-07-28 only",
                        data={"supported": list(MODERN_PROTOCOL_VERSIONS)},
                    ),
                )
                await write.send(SessionMessage(error))
                continue
            await inbound.send(message)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add = parser.add_argument
    add("--name", default="fixture", help="server name (serverInfo.name)")
    add("--crash-at-start", action="store_true", help="print to stderr and exit 2 before serving")
    add("--crash-after", type=int, default=0, metavar="N", help="the N-th tools/call exits 3")
    add("--hang-at-start", action="store_true", help="read stdin, never answer (exit on EOF)")
    add("--stubborn", action="store_true", help="ignore SIGTERM, stay after stdin closes")
    add("--report-client", action="store_true", help="tools client_capabilities, request_meta")
    add("--slow-start", type=float, default=0.0, metavar="SECONDS", help="sleep before serving")
    add("--stderr-lines", type=int, default=0, metavar="N", help="write N stderr lines at start")
    add("--grandchild", metavar="PIDFILE", help="spawn `sleep 1000`; write its pid to PIDFILE")
    add("--stubborn-grandchild", action="store_true", help="the grandchild ignores SIGTERM")
    add("--garbage", action="store_true", help="non-JSON lines on stdout at start, after calls")
    add("--tools", type=int, default=0, metavar="N", help="N extra tools, resources, ...")
    add("--page-size", type=int, default=0, metavar="K", help="list results in pages of K")
    add("--changing-prompts", action="store_true", help="add_prompt + list_changed")
    add("--changing-tools", action="store_true", help="add_tool/remove_tool + list_changed")
    add("--bad-schema", action="store_true", help="a tool whose inputSchema is not an object")
    add("--app-only", action="store_true", help="MCP Apps tools (app-only, ui-bound) + ui resource")
    add("--modern-only", action="store_true", help="refuse initialize (2026-07-28 only)")
    add("--gates", action="store_true", help="tools gate (waits for a file) and gated (how many)")
    add("--subscribable", action="store_true", help="resources/subscribe, answered with an update")
    add("--logging", action="store_true", help="logging/setLevel; tool log_level says the level")
    return parser.parse_args(argv)


def _ignore_sigterm() -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)


def write_atomically(path: str, content: str) -> None:
    with open(path + ".tmp", "w") as f:
        f.write(content)
    os.replace(path + ".tmp", path)


def main(argv: Sequence[str] | None = None) -> None:
    options = parse_args(argv)

    # --stderr-lines N: stderr volume for the supervisor's ring buffer of recent stderr lines.
    for i in range(1, options.stderr_lines + 1):
        sys.stderr.write(f"fixture stderr line {i}\n")
    sys.stderr.flush()

    # --grandchild PIDFILE: a process left in our process group (no new session), for
    # "stopping an app stops everything it started". Its standard streams are /dev/null, so it holds
    # none of our pipes open. PIDFILE appears last, so once it exists both files are complete.
    # --stubborn-grandchild: it ignores SIGTERM (a disposition exec keeps), so only SIGKILL, at
    # the end of the stop ladder, ends it.
    if options.grandchild:
        child = subprocess.Popen(
            ["sleep", "1000"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=_ignore_sigterm if options.stubborn_grandchild else None,
        )
        write_atomically(options.grandchild + ".self", f"{os.getpid()}\n")
        write_atomically(options.grandchild, f"{child.pid}\n")

    # --stubborn: an app that ignores SIGTERM and stays after its stdin closes, so only the
    # last step of the stop ladder (SIGKILL) ends it.
    if options.stubborn:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        log("stubborn: ignoring SIGTERM")

    # --crash-at-start: an app that dies before it ever answers (exit code 2, with a reason).
    if options.crash_at_start:
        die(2, "crashing at start")

    # --slow-start SECONDS: an app that takes a while before it answers initialize.
    if options.slow_start > 0:
        time.sleep(options.slow_start)

    # --hang-at-start: an app that reads its requests and never answers (start-up timeouts).
    if options.hang_at_start:
        log("hanging at start: reading stdin, answering nothing")
        for _ in sys.stdin.buffer:
            pass
        return

    # --garbage: non-JSON lines on stdout, which a client must skip without losing the session.
    if options.garbage:
        write_garbage()

    fixture = Fixture(options, Wire(garbage=options.garbage, updates=options.subscribable))
    fixture.build()
    trio.run(fixture.serve)
    if options.stubborn:
        log("stubborn: stdin closed, staying anyway")
        time.sleep(3600)


if __name__ == "__main__":
    main()
