"""An MCP App with a file editor, for the tests of file views: `edit` opens `.txt` and `.bin` files
(its view reads and saves them through the host), `inspect` says what the host told the app's
server about the file (`_meta["openai/resource"]`) and reads the file by that path, and `seen`
lists every request this server was sent, so a test can show the host's own requests (reads and
saves of `host-resource://` URIs) never reach it.

Run over stdio: `python editor_app.py`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import trio
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.stdio import stdio_server
from mcp.types import ToolAnnotations

UI_MIME = "text/html;profile=mcp-app"
EDITOR = "ui://editor/edit.html"
# The view, on the view protocol's postMessage JSON-RPC as it is: it shows what the host said it
# can do with files (`hostCapabilities.experimental`) and the file it was opened on, and its
# button asks the host to open `other.txt` beside that file (`openai/files/open`), by the path
# the app's server was told (`inspect`).
PAGE = """<!doctype html><meta charset="utf-8"><body>
<p id="caps">waiting</p><p id="file"></p><p id="said"></p>
<button id="open-other" type="button">Open other.txt</button>
<script>
let next = 1;
const waiting = new Map();
function request(method, params) {
  const id = next++;
  parent.postMessage({ jsonrpc: "2.0", id, method, params }, "*");
  return new Promise((resolve, reject) => waiting.set(id, { resolve, reject }));
}
addEventListener("message", (event) => {
  const m = event.data;
  if (!m || m.jsonrpc !== "2.0") return;
  if (m.method === undefined && waiting.has(m.id)) {
    const { resolve, reject } = waiting.get(m.id);
    waiting.delete(m.id);
    if (m.error) reject(m.error); else resolve(m.result);
  } else if (m.method === "ui/notifications/tool-input") {
    document.getElementById("file").textContent = m.params.arguments.file.name;
  }
});
(async () => {
  const init = await request("ui/initialize", {
    protocolVersion: "2026-01-26", appInfo: { name: "editor", version: "1" }, appCapabilities: {},
  });
  const caps = (init.hostCapabilities || {}).experimental || null;
  document.getElementById("caps").textContent = JSON.stringify(caps);
  parent.postMessage({ jsonrpc: "2.0", method: "ui/notifications/initialized", params: {} }, "*");
})();
document.getElementById("open-other").onclick = async () => {
  try {
    const told = await request("tools/call", { name: "inspect", arguments: {} });
    const path = told.structuredContent.resource.path.replace(/[^/]+$/, "other.txt");
    await request("openai/files/open", { path });
    document.getElementById("said").textContent = "asked";
  } catch (error) {
    document.getElementById("said").textContent = error.message;
  }
};
</script>"""
READ_ONLY = ToolAnnotations(read_only_hint=True)

seen: list[dict[str, Any]] = []


async def remember(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
    params = ctx.params or {}
    seen.append({"method": ctx.method, "uri": params.get("uri"), "name": params.get("name")})
    return await call_next(ctx)


def build() -> MCPServer:
    server = MCPServer("editor")
    server.middleware.append(remember)

    async def edit(file: dict[str, str]) -> str:
        return f"editing {file.get('name')}"

    async def inspect(ctx: Context) -> dict[str, Any]:
        meta: Any = ctx.request_context.meta or {}
        if not isinstance(meta, dict):
            meta = meta.model_dump(mode="json", by_alias=True, exclude_none=True)
        resource = meta.get("openai/resource") or {}
        path = resource.get("path")
        content = Path(path).read_text() if isinstance(path, str) else None
        return {"resource": resource, "content": content}

    async def requests() -> dict[str, Any]:
        return {"seen": list(seen)}

    entry = {"openai/ui": {"entrypoints": [{"type": "file", "extensions": [".txt", ".bin"]}]}}
    ui = {"ui": {"resourceUri": EDITOR, "visibility": ["app"]}}
    server.add_tool(edit, name="edit", title="Editor", annotations=READ_ONLY, meta={**ui, **entry})
    server.add_tool(inspect, name="inspect", annotations=READ_ONLY)
    server.add_tool(requests, name="seen", annotations=READ_ONLY)
    server.resource(EDITOR, name="edit.html", mime_type=UI_MIME)(lambda: PAGE)
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
