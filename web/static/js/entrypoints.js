// Entry points (the openai/ui extension): what the Running apps offer to open without the model,
// read from GET /apps/entrypoints and shared with the chat's tabs (threadtabs.js), and the
// launcher of the global ones in the page's header. A global entry point opens fullscreen in the
// canvas: its tool called with {} by the server, the view given the result and, as
// hostContext["openai/deepLink"], the app-relative URL of the link that opened it.
//
// Links, so a person can bookmark them: `/?entry=<public tool name>[&path=<URL-encoded
// app-relative URL>]`. A link followed in the page (a launcher item, any link of the page's, back
// and forward) to the app already open does not reload its view: the view is told the new deep
// link (ui/notifications/host-context-changed). The server checks every path; a refused one is
// said above the canvas, and the view stays as it was.
import { currentView, openView } from "./canvas.js";
import { $, el } from "./dom.js";
import * as plugins from "./pluginapi.js";

let entries = [];  // the entry points, as GET /apps/entrypoints lists them
const listeners = [];
let shown = null;  // {publicName, view}: the global entry point the canvas shows
let timer = null;

export const entryPoints = () => entries;

// `draw()` is called again whenever the entry points were read.
export function onEntryPoints(draw) {
  listeners.push(draw);
}

export async function loadEntryPoints() {
  const body = await plugins.listEntryPoints();
  entries = body.entrypoints;
  drawLauncher();
  for (const draw of listeners) draw();
}

// Catalogs change in bursts: read the entry points once they settle.
export function loadEntryPointsSoon() {
  clearTimeout(timer);
  timer = setTimeout(() => loadEntryPoints().catch(() => {}), 200);
}

// An entry point's icon: its own or its server's (a data: image, the only kind the server
// passes on), else the first letter of its title.
export function entryIcon(entry) {
  if (entry.icon) return el("img", { class: "entry-icon", src: entry.icon.src, alt: "" });
  return el("span", { class: "entry-icon fallback", "aria-hidden": "true" }, (entry.title || "?").slice(0, 1).toUpperCase());
}

function linkTo(entry) {
  return `?${new URLSearchParams({ entry: entry.publicName })}`;
}

function drawLauncher() {
  const launcher = $("launcher");
  const global = entries.filter((e) => e.type === "global");
  launcher.hidden = global.length === 0;
  launcher.replaceChildren(...global.map((entry) => el("a", {
    class: "entry",
    href: linkTo(entry),
    "data-entry": entry.publicName,
    title: `${entry.title} (app ${entry.app}): opens full screen`,
  }, entryIcon(entry), el("span", { class: "entry-title" }, entry.title))));
}

// The link of a page URL, or null when it names no entry point. A fragment of the page's own
// URL is taken as part of the path (which the server refuses: a deep link has none).
export function entryLink(url) {
  const entry = url.searchParams.get("entry");
  if (!entry) return null;
  const path = url.searchParams.get("path");
  return { entry, path: url.hash ? `${path || ""}${url.hash}` : path };
}

function notice(text) {
  let slot = $("entry-refusal");
  if (!text) {
    if (slot) slot.remove();
    return;
  }
  if (!slot) {
    slot = el("p", { id: "entry-refusal", class: "refusal", role: "alert" });
    $("canvas").before(slot);
  }
  slot.textContent = text;
}

// Open the link's entry point, or tell its open view the new deep link.
export async function followEntryLink(link) {
  notice(null);
  const view = currentView();
  try {
    if (shown && view && shown.view === view && shown.publicName === link.entry) {
      const resolved = await plugins.resolveEntryPoint(link.entry, link.path);
      view.setContext(resolved.hostContext);
      view.setDisplayMode("fullscreen");
      return;
    }
    const opened = await plugins.openEntryPoint(link.entry, { type: "global", path: link.path ?? undefined });
    const next = await openView({
      appId: opened.app,
      toolName: opened.tool,
      publicName: opened.publicName,
      args: {},
      result: opened.result,
      resourceUri: opened.resourceUri,
      hostContext: opened.hostContext,
      displayMode: "fullscreen",
    });
    shown = next ? { publicName: opened.publicName, view: next } : null;
    if (next) $("canvas-title").textContent = opened.title;  // the entry point's, not the tool's name
  } catch (error) {
    notice(`The link to '${link.entry}' was not opened: ${error.message}`);
  }
}

// A link followed in the page: the page's address says it (the page's other parameters kept),
// so that back and forward follow it again.
function go(link) {
  const url = new URL(location.href);
  url.searchParams.set("entry", link.entry);
  if (link.path === null || link.path === undefined) url.searchParams.delete("path");
  else url.searchParams.set("path", link.path);
  url.hash = "";
  history.pushState(null, "", url);
  followEntryLink(link);
}

// A link of the page's to an entry point is followed in the page, not loaded again.
document.addEventListener("click", (event) => {
  if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey) return;
  const anchor = event.target.closest && event.target.closest("a[href]");
  if (!anchor) return;
  const url = new URL(anchor.href, location.href);
  if (url.origin !== location.origin || url.pathname !== location.pathname || !entryLink(url)) return;
  event.preventDefault();
  go(entryLink(url));
});

window.addEventListener("popstate", () => {
  const link = entryLink(new URL(location.href));
  if (link) followEntryLink(link);
});

// Closing the view leaves the link: a reload must not open it again.
$("canvas-close").addEventListener("click", () => {
  shown = null;
  notice(null);
  const url = new URL(location.href);
  if (!url.searchParams.has("entry")) return;
  url.searchParams.delete("entry");
  url.searchParams.delete("path");
  url.hash = "";
  history.pushState(null, "", url);
});

// The page's own link, once the entry points can be read.
export async function openLinkedEntry() {
  const link = entryLink(new URL(location.href));
  if (link) await followEntryLink(link);
}
