// The Files pane: the workspace ([workspace] root) as a tree, folders first and hidden names
// left out (the server's order and choice), each file with a button per viewer that opens it
// (a UI tool of a Running app with a file entry point for its extension). It stays live: the
// workspace's changes (/apps/files/events) and the apps' tool tables (a viewer comes or goes
// with its app) redraw the folders shown. `/?file=<path>[&with=<tool>]` opens a file directly.
import * as api from "./api.js";
import { connectHost, openFile, setHostExtensions, showRefusal } from "./canvas.js";
import { $, el } from "./dom.js";
import { linked } from "./route.js";
import { frames } from "./sse.js";
import { onChange, state } from "./state.js";

const RECONNECT_MS = 2000;
const REDRAW_MS = 150;  // changes and tool tables within this time are one redraw
const open = new Set([""]);  // the folders shown open ("" the root)
let redrawing = null;
let toolsSeen = null;
const drawn = new WeakMap();  // a folder's list → the listing drawn in it (JSON)

// A view asked to open a workspace file (checked by the server): its first viewer opens it.
connectHost({ onOpenFile: (path) => openFile(path) });

// Read the root; without a workspace (the page's markup says whether one is set) the pane
// stays hidden. Then listen for changes.
export async function showFiles() {
  if (!document.body.dataset.workspace) return false;
  const root = await api.listFolder("");
  if (root === null) return false;
  setHostExtensions((root.hostCapabilities || {}).experimental);
  $("files-pane").hidden = false;
  draw($("files"), root);
  watchChanges();
  toolsSeen = state.tools;
  onChange(() => {
    if (state.tools !== toolsSeen) {
      toolsSeen = state.tools;
      redrawSoon();
    }
  });
  return true;
}

// The file a link names (`?file=`, in the viewer `?with=` or the first that opens it).
export function openLinkedFile() {
  if (!linked.file) return;
  if ($("files-pane").hidden) {
    showRefusal(`'${linked.file}' cannot be opened: no workspace is set ([workspace] root in config.toml)`);
    return;
  }
  openFile(linked.file, linked.with || undefined);
}

function entries(folder) {
  if (!folder.entries.length) return [el("li", { class: "empty" }, "(empty)")];
  return folder.entries.map((entry) => (entry.type === "folder" ? folderItem(entry) : fileItem(entry)));
}

function folderItem(entry) {
  const shown = open.has(entry.path);
  const children = el("ul", { class: "tree", hidden: !shown });
  const toggle = el("button", {
    type: "button",
    class: "folder",
    "aria-expanded": String(shown),
    "data-path": entry.path,
    onclick: async () => {
      const opening = !open.has(entry.path);
      if (opening) open.add(entry.path);
      else open.delete(entry.path);
      toggle.setAttribute("aria-expanded", String(opening));
      children.hidden = !opening;
      if (opening) await fill(children, entry.path);
    },
  }, `${entry.name}/`);
  if (shown) fill(children, entry.path);
  return el("li", { "data-path": entry.path }, toggle, children);
}

async function fill(list, path) {
  try {
    draw(list, await api.listFolder(path));
  } catch (error) {
    drawn.delete(list);
    list.replaceChildren(el("li", { class: "refusal" }, error.message));
  }
}

// A folder's list is drawn again only when its listing changed: redraws come often (each
// change on disk, each tool table, each reconnection), and a node replaced under the pointer
// loses the click that was landing on it.
function draw(list, folder) {
  const listing = JSON.stringify(folder ? folder.entries : null);
  if (drawn.get(list) === listing) return false;
  drawn.set(list, listing);
  list.replaceChildren(...(folder ? entries(folder) : []));
  return true;
}

function fileItem(entry) {
  const viewers = entry.viewers || [];
  const buttons = viewers.map((viewer) => el("button", {
    type: "button",
    class: "viewer",
    title: `open ${entry.path} in ${viewer.tool} (app ${viewer.app})`,
    onclick: () => openFile(entry.path, viewer.tool),
  }, viewer.title));
  return el(
    "li",
    { class: "file", "data-path": entry.path },
    el("span", { class: "name" }, entry.name),
    buttons.length ? buttons : el("span", { class: "muted" }, " no viewer"),
  );
}

// Every folder shown, read again (a change may add, remove or rename anything in them).
function redrawSoon() {
  if (redrawing) return;
  redrawing = setTimeout(async () => {
    redrawing = null;
    const root = await api.listFolder("").catch(() => null);
    if (!root) return;
    // A root drawn anew fills its open folders itself; else each open folder is read.
    if (draw($("files"), root)) return;
    for (const path of open) {
      const list = path && $("files").querySelector(`li[data-path="${CSS.escape(path)}"] > ul`);
      if (list && !list.closest("[hidden]")) fill(list, path);
    }
  }, REDRAW_MS);
}

async function watchChanges() {
  for (;;) {
    try {
      const response = await api.workspaceEvents();
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      for await (const { event } of frames(response)) {
        // After `ready` the folders are read again: what changed while the stream was down.
        if (event === "changed" || event === "ready") redrawSoon();
      }
    } catch (error) {
      // The server went away or restarted: listen again in a moment.
    }
    await new Promise((resolve) => setTimeout(resolve, RECONNECT_MS));
  }
}
