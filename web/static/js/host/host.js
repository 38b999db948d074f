// The MCP Apps view host of the control page, and its one entry: it renders an app's UI
// resource in the sandbox (an outer frame from the sandbox origin, which renders the HTML in an
// inner frame with an opaque origin) and speaks the view protocol with it through the official
// host library, AppBridge (vendored as static/app-bridge.js by scripts/vendor-app-bridge.sh).
// What the modules of this folder do is what AppBridge leaves to a host (docs/decisions.md):
// the view's own MCP requests go to /apps/views/<viewId>/mcp, where the server holds each open
// view as a lease and checks its requests before they reach the app's one upstream session, the
// one the agent uses too (viewclient.js); the person's confirmations; the display modes, host
// context and styles of this page. The page reaches the host through canvas.js only, which
// imports this module and sets `hooks`.
import { el } from "../dom.js";
import { closeView, currentView, showInCanvas } from "./canvasview.js";
import { hooks } from "./hooks.js";
import { hostLibrary } from "./library.js";
import { Refusal } from "./refusal.js";
import { loadResource, uiUri } from "./resource.js";
import { SANDBOX_ORIGIN } from "./sandboxframe.js";
import { View } from "./view.js";
import { ViewClient } from "./viewclient.js";

export { closeView, currentView, hooks };

let opening = null;  // the lease of a view being opened, closed if it cannot be shown

// The attached contexts with these update ids are gone: the view that sent one is told.
export function contextRemoved(updateIds) {
  const view = currentView();
  if (view) view.contextRemoved(updateIds);
}

// Open the view of `toolName` of `appId`. With `result` (a result the chat already has) the
// tool is not called again; without, it is called with `args`.
// `restored`: the view is rebuilt from a saved chat with its saved `result`; it is marked so
// and inactive until the person presses Run, which opens it afresh (a new call).
// `hostContext`: what the page adds to the view's host context; `displayMode`: the mode it
// opens in (an entry point's fullscreen); `place` ({element, close}): a place of the page's own
// for the view (a chat's tab), where it stays inline, beside the canvas's view.
// `file` ({path, tool?}): a workspace file, in its viewer.
export async function openView(options) {
  let { appId, toolName, publicName, args } = options;
  const { result, resourceUri, sessionId, toolCallId, restored, file } = options;
  // `pending` and `input`: promises of the result and of the whole arguments of a chat's call
  // still under way (the view opens as it starts).
  const { pending: later, input } = options;
  const place = options.place || null;
  if (!place) await closeView();
  const canvas = place ? place.element : document.getElementById("canvas");
  canvas.replaceChildren(el("p", { class: "empty" }, "Opening…"));
  if (!place) hooks.onTitle(file ? file.path : publicName || `${appId}/${toolName}`);
  try {
    if (!SANDBOX_ORIGIN) throw new Refusal("the app sandbox is off ([sandbox] enabled = false): views are not rendered");
    // Loaded while the view's lease, tool and resource are fetched (once per page).
    const loadingLibrary = hostLibrary();
    loadingLibrary.catch(() => {});  // awaited below, unless the view fails first
    let client;
    if (file) {
      // A workspace file: the server picks or checks the viewer and says the viewer tool's
      // arguments, the file's name and opaque URI.
      client = await ViewClient.openFile(file.path, file.tool, sessionId);
      ({ toolName, publicName, arguments: args } = client.toolCall);
      appId = client.appId;
      hooks.onTitle(`${file.path} — ${publicName}`);
    } else {
      client = await ViewClient.open(appId, sessionId, {
        toolName, publicName, resourceUri, arguments: args || {}, toolCallId,
      }, result === undefined && !later && !restored, Boolean(restored));
    }
    opening = client;
    const listed = await client.request("tools/list", {});
    if (listed.error) throw new Refusal(`app '${appId}': ${listed.error.message}`);
    let tool = ((listed.result && listed.result.tools) || []).find((t) => t.name === toolName);
    // A tool for the model only is not listed to views, but its view still opens (with the
    // chat's result, or with the opening call the server lets through once); the view gets
    // what the page knows of the tool.
    if (!tool && resourceUri) {
      tool = { name: toolName, inputSchema: { type: "object" }, _meta: { ui: { resourceUri, visibility: ["model"] } } };
    }
    if (!tool) throw new Refusal(`app '${appId}' has no tool '${toolName}'`);
    const uri = resourceUri || uiUri(tool);
    if (!uri) throw new Refusal(`tool '${toolName}' of app '${appId}' has no UI`);
    const resource = await loadResource(client, uri);
    const pending = later || (result !== undefined
      ? Promise.resolve(result)
      : client.forward("tools/call", { name: toolName, arguments: args || {} }));
    pending.catch(() => {});  // reported to the view as tool-cancelled
    const library = await loadingLibrary;
    const view = new View({
      client, appId, tool, publicName, args: args || {}, result: pending, resource, toolCallId,
      restored: Boolean(restored), modelContext: client.attached, input, library,
    });
    Object.assign(view, { place, extraContext: options.hostContext || {}, openIn: options.displayMode });
    if (!place) showInCanvas(view);
    opening = null;
    view.mount(canvas);
    if (restored) canvas.prepend(restoredNote(options));
    if (!place) document.getElementById("canvas-close").hidden = false;
    return view;
  } catch (error) {
    const message = error instanceof Refusal ? error.message : `the view could not be opened: ${error.message || error}`;
    canvas.replaceChildren(el("p", { class: "refusal" }, message));
    if (opening) opening.close();
    opening = null;
    return null;
  }
}

// A restored view says so, with Run to open it afresh.
function restoredNote(options) {
  const run = el("button", {
    type: "button",
    id: "canvas-run",
    onclick: () => openView({ ...options, result: undefined, restored: false }),
  }, "Run");
  return el("p", { class: "restored" }, "Restored from the saved chat: it shows what it showed, and cannot"
    + " use its app until you run it again. ", run);
}

// The browser tests read the view the canvas shows (`window.McpHost.current()`); the page's
// modules import this one instead.
window.McpHost = { current: currentView };
