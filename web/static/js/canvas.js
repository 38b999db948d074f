// The view canvas, and the one seam between the page's modules and the view host (host/, its
// entry host/host.js): no other module imports the host. The page calls the host through
// openView / closeView / currentView, and the host calls the page through the hooks given to
// connectHost(); the canvas's title, its Close button and the theme are wired here.
import { $, el } from "./dom.js";
import { closeView, currentView, hooks, openView } from "./host/host.js";
import { theme, watchTheme } from "./theme.js";

// openView(spec): `spec` is {appId, toolName, publicName, args, result?, resourceUri?,
// sessionId?, …} (host/host.js says them all); with `result` (one the chat already has) the
// tool is not called again. Resolves to the view, or null when it could not be opened (the
// canvas says why). currentView(): the view the canvas shows; closeView() closes it.
export { closeView, currentView, openView } from "./host/host.js";
// A workspace file (`path` from the root) in the viewer `tool` (a public name), or in the first
// viewer that opens it.
export const openFile = (path, tool) => openView({ file: { path, tool } });
// With a workspace, what views are told the host can do with files (hostCapabilities'
// `experimental`, as GET /apps/files says it).
export function setHostExtensions(extensions) {
  hooks.hostExtensions = extensions || null;
}
// The attached model contexts with these update ids are gone (removed, or taken by a turn).
export { contextRemoved } from "./host/host.js";

// What the host asks of the page:
//   confirm(text, yesLabel) → Promise<boolean>       a link to open, a message to send as the person
//   approve({appId, tool, arguments}) → Promise<"once" | "while-open" | "deny">
//   ask(request, answer)                              an app's question during a view's call
//   onMessage(appId, params) → Promise<result>        a view's ui/message (js/viewmessage.js)
//   onModelContext(view)                              a view's ui/update-model-context was kept
//   onAppEvent({tool, args, resultText})              what the person did in a view
//   onOpenFile(path)                                  a view asked to open a workspace file
export function connectHost(given) {
  Object.assign(hooks, given);
}

export function showRefusal(text) {
  $("canvas").replaceChildren(el("p", { class: "refusal" }, text));
}

hooks.theme = theme;
watchTheme(() => {
  const view = currentView();
  if (view) view.themeChanged();
});
hooks.onTitle = (title) => { $("canvas-title").textContent = title; };
$("canvas-close").addEventListener("click", () => {
  closeView();
  $("canvas-title").textContent = "App view";
});
