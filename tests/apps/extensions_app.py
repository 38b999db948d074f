"""An MCP App built with the OpenAI extensions SDK (`openai-mcp-extensions`), for the tests of
the plugin extensions: structured settings (read and update tools, a layout with a tool action),
composer @-mention search, entry points (a global one whose tool is for the model only, since
entry points ignore visibility, and a thread one), and views. Its settings live in this process
only. The entry points' view reports what the host told it: the deep link at `ui/initialize`, the
ones sent after (`host-context-changed`), and the tool's result.

Run over stdio: `python extensions_app.py [--hostile KIND]`. A hostile KIND makes the app
advertise an extension the host must refuse, built by hand since the SDK would not build it:
`settings-not-read-only`, `settings-no-output-schema`, `settings-unsupported-type`,
`mentions-not-read-only`, `mentions-model-only`, `mentions-deprecated` (the deprecated
`_meta["openai/extensions"]["mentions/search"]` marker instead of the capability),
`mentions-slow` (a search that never answers in time), `entry-refuses-empty` (entry points whose
tools do not accept `{}`: one requires an argument, one fails when called).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, Literal

import trio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.stdio import stdio_server
from mcp_types import Icon, ResourceLink, ToolAnnotations
from openai_mcp_extensions import (
    OpenAIExtensions,
    OpenAIGlobalEntrypoint,
    OpenAIMentionSearchParams,
    OpenAIMentionSearchResult,
    OpenAISettings,
    OpenAISettingsGroup,
    OpenAISettingsProperty,
    OpenAISettingsTool,
    OpenAIThreadEntrypoint,
    OpenAIUiToolMetadata,
)
from pydantic import BaseModel, ConfigDict, Field

UI_MIME = "text/html;profile=mcp-app"
PARTS = ("hex-bolt", "hex-nut", "washer", "wing-nut", "spring")
ENTRY_URI = "ui://extensions/entry"
# Icons as data: URIs (the control page shows no other): the catalog's own, and the server's.
TOOL_ICON = (
    "data:image/svg+xml;base64,PHN2ZyB4bWxucz0naHR0cDovL3d3dy53My5vcmcvMjAwMC9zdmcnIHZpZXdCb3g9"
    "JzAgMCAxNiAxNic+PHBhdGggZmlsbD0nIzNhN2JkNScgZD0nTTggMWw2IDMuNXY3TDggMTVsLTYtMy41di03eicvPjwvc3ZnPg=="
)
SERVER_ICON = (
    "data:image/svg+xml;base64,PHN2ZyB4bWxucz0naHR0cDovL3d3dy53My5vcmcvMjAwMC9zdmcnIHZpZXdCb3g9"
    "JzAgMCAxNiAxNic+PGNpcmNsZSBjeD0nOCcgY3k9JzgnIHI9JzcnIGZpbGw9JyNkNTg1M2EnLz48L3N2Zz4="
)
# The entry points' view: speaks the view protocol by hand and shows what it was told.
ENTRY_PAGE = """<!doctype html><html><body><h1 id=title>entry</h1><pre id=report>starting</pre>
<script>
const report = {instance: Math.random().toString(36).slice(2), deepLink: null, links: [],
  result: null, inits: 0};
const show = () => { document.getElementById("report").textContent = JSON.stringify(report); };
let next = 1; const waiting = new Map();
function post(m) { window.parent.postMessage(Object.assign({jsonrpc: "2.0"}, m), "*"); }
function request(method, params) {
  const id = next++;
  return new Promise((resolve) => { waiting.set(id, resolve); post({id, method, params}); });
}
window.addEventListener("message", (event) => {
  const m = event.data;
  if (m.id !== undefined && !m.method) { waiting.get(m.id)(m); waiting.delete(m.id); return; }
  if (m.method === "ui/notifications/tool-result") report.result = m.params.structuredContent;
  if (m.method === "ui/notifications/host-context-changed" && m.params["openai/deepLink"]) {
    report.links.push(m.params["openai/deepLink"].url);
    report.deepLink = m.params["openai/deepLink"].url;
  }
  if (m.method === "ui/resource-teardown") post({id: m.id, result: {}});
  show();
});
(async () => {
  const init = await request("ui/initialize", {protocolVersion: "2026-01-26",
    appInfo: {name: "entry", version: "1"}, appCapabilities: {}});
  report.inits += 1;
  const link = init.result.hostContext["openai/deepLink"];
  report.deepLink = link ? link.url : null;
  report.displayMode = init.result.hostContext.displayMode;
  post({method: "ui/notifications/initialized", params: {}});
  show();
})();
</script></body></html>"""


def entry_meta(*kinds: OpenAIGlobalEntrypoint | OpenAIThreadEntrypoint, **ui: Any) -> Any:
    openai = OpenAIUiToolMetadata(entrypoints=list(kinds))
    return {
        "ui": {"resourceUri": ENTRY_URI, **ui},
        "openai/ui": openai.model_dump(by_alias=True, exclude_none=True, mode="json"),
    }


class Prefs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    units: Literal["mm", "in"] = Field(title="Measurement units")
    show_grid: bool = Field(alias="showGrid", title="Show grid")
    label: str = Field(
        title="Label",
        description="Lower-case letters",
        min_length=1,
        max_length=12,
        pattern="^[a-z]+$",
    )
    zoom: int = Field(title="Zoom", ge=1, le=10, multiple_of=1)
    step: float = Field(title="Step", ge=0, le=5, multiple_of=0.5)


def settings_extension(values: dict[str, Any]) -> OpenAISettings[Prefs]:
    layout = [
        OpenAISettingsGroup(
            title="Display",
            items=[
                OpenAISettingsProperty(property="units"),
                OpenAISettingsProperty(property="showGrid"),
                OpenAISettingsTool(tool="reset_cache", description="Forget the cached parts"),
            ],
        ),
        OpenAISettingsGroup(title="Library", items=[OpenAISettingsTool(tool="library")]),
    ]
    settings = OpenAISettings(schema=Prefs, layout=layout)

    @settings.read
    async def read(ctx: Any) -> Prefs:
        return Prefs.model_validate(values)

    @settings.update
    async def update(changed: dict[str, Any], ctx: Any) -> Prefs:
        print(f"extensions: update {sorted(changed)}", file=sys.stderr, flush=True)
        for name, value in changed.items():
            values[Prefs.model_fields[name].alias or name] = value
        return Prefs.model_validate(values)

    return settings


def build(hostile: str | None) -> MCPServer:
    values: dict[str, Any] = {
        "units": "in",
        "showGrid": False,
        "label": "bolts",
        "zoom": 2,
        "step": 1.5,
    }
    extensions = OpenAIExtensions()
    advertised: dict[str, Any] = {}
    kept: list[Any] = [extensions]
    if hostile is None or not hostile.startswith("settings-"):
        settings = settings_extension(values)
        kept.append(settings)
        advertised["openai/settings"] = settings.settings()
    if hostile is None:

        @extensions.mentions.search
        async def search(params: OpenAIMentionSearchParams, ctx: Any) -> OpenAIMentionSearchResult:
            found = [p for p in PARTS if params.query.lower() in p]
            links = [ResourceLink(uri=f"cad://parts/{p}", name=p, title=p.title()) for p in found]
            return OpenAIMentionSearchResult(items=links)

        advertised["openai/mentions"] = extensions.mentions.settings()

    async def advertise(ctx: Any, call_next: Any) -> Any:
        # The SDK leaves `extensions` out of a handshake-era `initialize`: the spec's legacy
        # place for them is `experimental`.
        result = await call_next(ctx)
        if ctx.method == "initialize" and advertised:
            result = (
                dict(result)
                if isinstance(result, dict)
                else result.model_dump(by_alias=True, exclude_none=True, mode="json")
            )
            caps = result.setdefault("capabilities", {})
            caps["experimental"] = {**caps.get("experimental", {}), **advertised}
        return result

    server = MCPServer(
        "extensions",
        icons=[Icon(src=SERVER_ICON, mime_type="image/svg+xml")],
        extensions=kept,
        middleware=[advertise],
    )
    add_hostile(server, hostile, advertised)
    add_entry_points(server, hostile)

    async def reset_cache() -> str:
        return "cache cleared (5 parts)"

    async def show_library() -> dict[str, Any]:
        return {"parts": list(PARTS)}

    async def read_settings_values() -> dict[str, Any]:
        return dict(values)

    server.add_tool(reset_cache, name="reset_cache", title="Reset the cache")
    server.add_tool(
        read_settings_values,
        name="current_settings",
        annotations=ToolAnnotations(read_only_hint=True),
    )
    server.add_tool(
        show_library, name="library", meta={"ui": {"resourceUri": "ui://extensions/library"}}
    )

    @server.resource("ui://extensions/library", mime_type=UI_MIME)
    def library_page() -> str:
        return "<!doctype html><p id=library>parts library</p>"

    return server


def add_entry_points(server: MCPServer, hostile: str | None) -> None:
    async def parts_catalog() -> dict[str, Any]:
        return {"opened": "catalog", "parts": len(PARTS)}

    async def parts_tray(ctx: Context) -> dict[str, Any]:
        meta: Any = ctx.request_context.meta or {}
        if not isinstance(meta, dict):
            meta = meta.model_dump(by_alias=True, exclude_none=True)
        return {"opened": "tray", "session": meta.get("sessionId")}

    async def pick_part(part: str) -> dict[str, Any]:
        return {"part": part}

    async def broken_entry() -> dict[str, Any]:
        raise ToolError("no part is chosen yet")

    @server.resource(ENTRY_URI, mime_type=UI_MIME)
    def entry_page() -> str:
        return ENTRY_PAGE

    if hostile == "entry-refuses-empty":
        server.add_tool(pick_part, name="pick_part", meta=entry_meta(OpenAIGlobalEntrypoint()))
        server.add_tool(
            broken_entry, name="broken_entry", meta=entry_meta(OpenAIGlobalEntrypoint())
        )
        return
    # For the model only: an entry point opens it anyway (the spec ignores visibility there).
    server.add_tool(
        parts_catalog,
        name="parts_catalog",
        title="Parts catalog",
        icons=[Icon(src=TOOL_ICON, mime_type="image/svg+xml")],
        meta=entry_meta(OpenAIGlobalEntrypoint(), visibility=["model"]),
    )
    server.add_tool(
        parts_tray,
        name="parts_tray",
        annotations=ToolAnnotations(title="Parts tray", read_only_hint=True),
        meta=entry_meta(OpenAIThreadEntrypoint()),
    )


def add_hostile(server: MCPServer, hostile: str | None, advertised: dict[str, Any]) -> None:
    read_only = ToolAnnotations(read_only_hint=True)

    async def read(ctx: Any = None) -> dict[str, Any]:
        schema: dict[str, Any] = {"type": "object", "properties": {"when": {"type": "string"}}}
        if hostile == "settings-unsupported-type":
            schema["properties"]["when"] = {"type": "array", "title": "When"}
        return {"schema": schema, "values": {"when": "now"}}

    async def update(set: dict[str, Any]) -> dict[str, Any]:
        return {"values": set}

    async def search(query: str) -> dict[str, Any]:
        if hostile == "mentions-slow":
            await trio.sleep_forever()
        return {"items": [{"type": "resource_link", "uri": "bad://one", "name": "one"}]}

    app_only = {"ui": {"visibility": ["app"]}}
    if hostile in (
        "settings-not-read-only",
        "settings-no-output-schema",
        "settings-unsupported-type",
    ):
        server.add_tool(
            read,
            name="settings.read",
            annotations=None if hostile == "settings-not-read-only" else read_only,
            structured_output=hostile != "settings-no-output-schema",
        )
        server.add_tool(update, name="settings.update")
        advertised["openai/settings"] = {
            "readTool": "settings.read",
            "updateTool": "settings.update",
        }
    elif hostile in ("mentions-not-read-only", "mentions-model-only", "mentions-slow"):
        server.add_tool(
            search,
            name="find",
            annotations=None if hostile == "mentions-not-read-only" else read_only,
            meta={"ui": {"visibility": ["model"]}}
            if hostile == "mentions-model-only"
            else app_only,
        )
        advertised["openai/mentions"] = {"searchTool": "find"}
    elif hostile == "mentions-deprecated":
        server.add_tool(
            search,
            name="find",
            annotations=read_only,
            meta={**app_only, "openai/extensions": {"mentions/search": {}}},
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hostile")
    options = parser.parse_args()
    server = build(options.hostile)

    async def serve() -> None:
        async with stdio_server() as (read, write):
            await server._lowlevel_server.run(
                read, write, server._lowlevel_server.create_initialization_options()
            )

    trio.run(serve)


if __name__ == "__main__":
    main()
