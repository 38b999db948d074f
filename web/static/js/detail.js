// The selected app's detail: its tools (offered to the model, with an "Open view" button where
// they have a UI; app-only; not offered, with the reason the tool table gave), whether a
// claimed UI is missing, and the tail of its stderr.
import * as api from "./api.js";
import { openView } from "./canvas.js";
import { $, el } from "./dom.js";
import { onChange, state } from "./state.js";

export async function loadStderr(id) {
  try {
    const body = await api.appDetail(id);
    state.stderr = { id, lines: body.stderr || [] };
    renderDetail();
  } catch (error) { /* shown by the list */ }
}

function split(appId) {
  const mine = state.tools.filter((t) => t.app === appId);
  return {
    modelVisible: mine.filter((t) => t.offered),
    appOnly: mine.filter((t) => !t.offered && !t.visibility.includes("model")),
    notOffered: mine.filter((t) => !t.offered && t.visibility.includes("model")),
  };
}

function uiWarning(status) {
  if (!status.hasUi || status.state !== "Running" || state.catalogUi.get(status.id) !== false) return null;
  return `app '${status.id}' says hasUi in its manifest but serves no UI: no tool's `
    + "_meta.ui.resourceUri names a ui:// resource of type text/html;profile=mcp-app";
}

function toolItem(tool, options) {
  const open = options.open && tool.uiResourceUri
    ? el("button", {
        type: "button",
        class: "open-view",
        "data-tool": tool.name,
        onclick: () => openView({
          appId: tool.app, toolName: tool.name, publicName: tool.publicName, args: {}, resourceUri: tool.uiResourceUri,
        }),
      }, "Open view")
    : null;
  const name = options.open ? tool.publicName : tool.name;
  const why = options.reason ? el("span", { class: "error" }, tool.reason) : "";
  return el("li", { "data-tool": tool.name }, el("code", {}, name), " ", why, " ", open);
}

function toolList(id, items) {
  return el("ul", { id, class: "tools" }, items);
}

// An empty tail says so: an empty box would look like something failed to load.
function stderrTail(id) {
  const { stderr } = state;
  if (stderr.id !== id) return el("pre", { id: "stderr" }, "…");
  if (!stderr.lines.length) return el("pre", { id: "stderr", class: "none" }, "(no stderr lines yet)");
  return el("pre", { id: "stderr" }, stderr.lines.slice(-50).join("\n"));
}

// What the panel shows, last rendered: its tools and warnings, and apart from them its stderr
// tail. The page's state changes far more often than either (each app's state, the tool table,
// the chat), and rebuilding the panel for nothing replaced its buttons under the pointer, so
// that a click pressed on one and released on its replacement did nothing. A new stderr tail
// (read after each of the app's state changes) replaces only the tail.
let shownTools = null;
let shownStderr = null;

function renderDetail() {
  const detail = $("detail");
  const status = state.apps.get(state.selected);
  const groups = status ? split(state.selected) : null;
  const warning = status ? uiWarning(status) : null;
  const tools = JSON.stringify([status?.id, warning, state.linkWarning, groups]);
  const stderr = JSON.stringify(
    status && state.stderr.id === status.id ? state.stderr.lines.slice(-50) : null,
  );
  if (tools === shownTools) {
    if (stderr !== shownStderr && status) $("stderr").replaceWith(stderrTail(status.id));
    shownStderr = stderr;
    return;
  }
  shownTools = tools;
  shownStderr = stderr;
  if (!status) {
    detail.replaceChildren();
    return;
  }
  detail.replaceChildren(
    state.linkWarning ? el("p", { class: "error", id: "link-warning" }, state.linkWarning) : "",
    el("h3", {}, `Tools of ${status.id}`),
    el("div", { class: "meta" }, "Model-visible"),
    toolList("tools-visible", groups.modelVisible.map((t) => toolItem(t, { open: true }))),
    el("div", { class: "meta" }, "App-only (for the app's own view)"),
    toolList("tools-app-only", groups.appOnly.map((t) => toolItem(t, {}))),
    el("div", { class: "meta" }, "Not offered to the model"),
    toolList("tools-not-offered", groups.notOffered.map((t) => toolItem(t, { reason: true }))),
    // replaceChildren() would show a null child as the text "null".
    warning ? el("p", { class: "error", id: "ui-warning" }, warning) : "",
    el("h3", {}, "stderr (last lines)"),
    stderrTail(status.id),
  );
}

onChange(renderDetail);
