// The view canvas, and the one seam between the page's modules and the view host. The host is
// host.js, a classic script loaded before the modules that sets window.McpHost; no other module
// reads that global. The page calls the host through openView / closeView / currentView, and the
// host calls the page through the hooks given to connectHost(); the canvas's title, its Close
// button and the theme are wired here.
import { $, el } from "./dom.js";
import { frames, parse } from "./sse.js";
import { theme, watchTheme } from "./theme.js";

const Host = window.McpHost;
// host.js reads a held view call's events with the page's one SSE reader, by this global name.
window.McpSse = { frames, parse };

// `spec`: {appId, toolName, publicName, args, result?, resourceUri?, sessionId?}; with `result`
// (one the chat already has) the tool is not called again. Resolves to the view, or null when
// it could not be opened (the canvas says why).
export const openView = (spec) => Host.openView(spec);
// A workspace file (`path` from the root) in the viewer `tool` (a public name), or in the first
// viewer that opens it.
export const openFile = (path, tool) => Host.openView({ file: { path, tool } });
// With a workspace, what views are told the host can do with files (hostCapabilities'
// `experimental`, as GET /apps/files says it).
export function setHostExtensions(extensions) {
  Host.hostExtensions = extensions || null;
}
export const closeView = () => Host.closeView();
export const currentView = () => Host.current();
// The attached model contexts with these update ids are gone (removed, or taken by a turn).
export const contextRemoved = (updateIds) => Host.contextRemoved(updateIds);

// What the host asks of the page:
//   confirm(text, yesLabel) → Promise<boolean>       a link to open, a message to send as the person
//   approve({appId, tool, arguments}) → Promise<"once" | "while-open" | "deny">
//   ask(request, answer)                              an app's question during a view's call
//   onMessage(appId, params) → Promise<result>        a view's ui/message (js/viewmessage.js)
//   onModelContext(view)                              a view's ui/update-model-context was kept
//   onAppEvent({tool, args, resultText})              what the person did in a view
//   onOpenFile(path)                                  a view asked to open a workspace file
export function connectHost(hooks) {
  Object.assign(Host, hooks);
}

export function showRefusal(text) {
  $("canvas").replaceChildren(el("p", { class: "refusal" }, text));
}

Host.theme = theme;
watchTheme(() => {
  const view = Host.current();
  if (view) view.themeChanged();
});
Host.onTitle = (title) => { $("canvas-title").textContent = title; };
$("canvas-close").addEventListener("click", () => {
  closeView();
  $("canvas-title").textContent = "App view";
});
