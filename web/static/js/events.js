// Live updates: the /admin/events WebSocket, each message applied to what the page knows of
// the apps, and the badge that says whether the page is live. A closed socket is opened again
// once the apps can be read again (they may have changed meanwhile).
//
// A connection first says how things stand, ending with a toolTable message. On the page's first
// connection that picture only updates the apps: the page reads its tools, settings, entry points
// and the selected app once, after it (main.js), instead of once for the picture and once more for
// its own start. A reconnection's picture reads them again, as a change would.
import { loadApps, loadToolsSoon } from "./apps.js";
import { loadStderr } from "./detail.js";
import { loadSettingsOffersSoon } from "./plugincards.js";
import { loadEntryPointsSoon } from "./entrypoints.js";
import { $ } from "./dom.js";
import { selectDefault } from "./select.js";
import { changed, state } from "./state.js";

function apply(message, quiet) {
  if (message.type === "app") {
    const before = state.apps.get(message.app.id);
    state.apps.set(message.app.id, message.app);
    changed();
    if (quiet) return;
    if (message.app.id === state.selected && (!before || before.state !== message.app.state)) loadStderr(state.selected);
    if (!state.apps.has(state.selected) && message.app.state === "Running") selectDefault().catch(() => {});
    if (before && before.state !== message.app.state) loadEntryPointsSoon();
  } else if (message.type === "catalog") {
    state.catalogUi.set(message.appId, message.hasUi);
    changed();
    if (quiet) return;
    loadToolsSoon();
    loadSettingsOffersSoon();
    loadEntryPointsSoon();
  } else if (message.type === "toolTable") {
    if (!quiet) loadToolsSoon();
  } else if (message.type === "reloaded") {
    loadApps().catch(() => {});  // apps may have come or gone
    loadToolsSoon();
  }
}

// A socket that neither answers nor fails (a proxy that holds it) must not hold the page's start.
const PICTURE_WAIT_MS = 5000;

// Resolves once the picture has arrived, or the socket has closed or kept silent without one.
export function connectEvents({ first = false } = {}) {
  return new Promise((resolve) => {
    let quiet = first;
    const pictured = () => {
      quiet = false;  // from now on, as on any later message, changes are read
      resolve();
    };
    setTimeout(pictured, PICTURE_WAIT_MS);
    const url = new URL("admin/events", location.href);
    url.protocol = location.protocol === "https:" ? "wss:" : "ws:";
    const socket = new WebSocket(url);
    const live = $("live");
    socket.onopen = () => {
      live.textContent = "live";
      live.classList.add("live");
    };
    socket.onmessage = (event) => {
      const message = JSON.parse(event.data);
      live.dataset.seq = String(message.seq);
      apply(message, quiet);
      if (message.type === "toolTable") pictured();
    };
    socket.onclose = () => {
      pictured();
      live.textContent = "reconnecting…";
      live.classList.remove("live");
      setTimeout(() => {
        loadApps().then(() => connectEvents(), () => setTimeout(connectEvents, 2000));
      }, 1000);
    };
  });
}
