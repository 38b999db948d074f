// The sandbox's double frame, on the page's side: the outer frame, from the sandbox origin (the
// app's own with [sandbox] app_origins), which renders the view's HTML in an inner frame with an
// opaque origin; messages posted to that origin only; and the sandbox's own notifications (what
// CSP it applied, what that CSP blocked), which are the page's, not the view's.
import { el } from "../dom.js";
import { violationText } from "./cspnotice.js";

// The shared sandbox origin, from the page's markup ("" when [sandbox] is off).
export const SANDBOX_ORIGIN = document.body.dataset.sandbox || "";

// The app's own sandbox origin when the server gives it one ([sandbox] app_origins), else the
// shared one.
export function sandboxOrigin(view) {
  return view.client.ui.sandboxOrigin || SANDBOX_ORIGIN;
}

export function sandboxFrame(view) {
  const frame = document.createElement("iframe");
  frame.setAttribute("sandbox", "allow-scripts allow-same-origin");
  frame.setAttribute("title", `view of ${view.publicName || view.tool.name}`);
  const csp = encodeURIComponent(JSON.stringify(view.resource.csp || {}));
  frame.src = `${sandboxOrigin(view)}/sandbox?app=${encodeURIComponent(view.appId)}&csp=${csp}`;
  if (view.resource.ui.prefersBorder === false) frame.classList.add("borderless");
  return frame;
}

// A message of the view's bridge, to the sandbox page at its own origin only (AppBridge's
// transport would post it to any origin the frame might have been navigated to).
export function postToSandbox(view, message) {
  if (!view.frame || !view.frame.contentWindow) return;
  if (view.initialized && message.method && message.id === undefined && view.sent.length < 200) {
    view.sent.push(message.method);
  }
  view.frame.contentWindow.postMessage(message, sandboxOrigin(view));
}

// A message to the page from the view's sandbox page: its own notifications are taken here.
export function sandboxMessage(view, event) {
  if (!view.frame || event.source !== view.frame.contentWindow || event.origin !== sandboxOrigin(view)) return;
  const m = event.data;
  if (!m || m.jsonrpc !== "2.0" || typeof m.method !== "string") return;
  if (m.method === "ui/notifications/sandbox-proxy-ready") {
    if (view.rendered) return;  // one view per proxy page: a reloaded page gets nothing
    // The sandbox says what its CSP applied, which is what the view is told it has.
    const applied = (m.params && m.params.applied) || {};
    view.capabilities.sandbox.csp = applied.csp || {};
    view.applied = applied;
    view.contextChanged();
    view.rendered = true;
    view.bridge.sendSandboxResourceReady({
      html: view.resource.html,
      csp: view.resource.csp || undefined,
      permissions: view.resource.permissions || undefined,
    });
  } else if (m.method === "ui/notifications/sandbox-csp-violation") {
    cspViolation(view, m.params || {});
  }
}

function cspViolation(view, violation) {
  view.violations.push(violation);
  if (view.violations.length > 1 || !view.frame) return;  // one notice per view is enough
  view.frame.before(el("p", { class: "csp-notice" }, violationText(view.appId, violation)));
}
