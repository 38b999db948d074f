"""An MCP App built with the OpenAI extensions SDK (`openai-mcp-extensions`), for the tests of
the plugin extensions: structured settings (read and update tools, a layout with a tool action),
composer @-mention search, and a view. Its settings live in this process only.

Run over stdio: `python extensions_app.py [--hostile KIND]`. A hostile KIND makes the app
advertise an extension the host must refuse, built by hand since the SDK would not build it:
`settings-not-read-only`, `settings-no-output-schema`, `settings-unsupported-type`,
`mentions-not-read-only`, `mentions-model-only`, `mentions-deprecated` (the deprecated
`_meta["openai/extensions"]["mentions/search"]` marker instead of the capability),
`mentions-slow` (a search that never answers in time).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, Literal

import trio
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from mcp_types import ResourceLink, ToolAnnotations
from openai_mcp_extensions import (
    OpenAIExtensions,
    OpenAIMentionSearchParams,
    OpenAIMentionSearchResult,
    OpenAISettings,
    OpenAISettingsGroup,
    OpenAISettingsProperty,
    OpenAISettingsTool,
)
from pydantic import BaseModel, ConfigDict, Field

UI_MIME = "text/html;profile=mcp-app"
PARTS = ("hex-bolt", "hex-nut", "washer", "wing-nut", "spring")


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

    server = MCPServer("extensions", extensions=kept, middleware=[advertise])
    add_hostile(server, hostile, advertised)

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
