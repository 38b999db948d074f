// Live updates: the /admin/events WebSocket, each message applied to what the page knows of
// the apps, and the badge that says whether the page is live. A closed socket is opened again
// once the apps can be read again (they may have changed meanwhile).
import { loadApps, loadToolsSoon } from "./apps.js";
import { loadStderr } from "./detail.js";
import { loadSettingsOffersSoon } from "./plugincards.js";
import { loadEntryPointsSoon } from "./entrypoints.js";
import { $ } from "./dom.js";
import { selectDefault } from "./select.js";
import { changed, state } from "./state.js";

function apply(message) {
  if (message.type === "app") {
    const before = state.apps.get(message.app.id);
    state.apps.set(message.app.id, message.app);
    changed();
    if (message.app.id === state.selected && (!before || before.state !== message.app.state)) loadStderr(state.selected);
    if (!state.apps.has(state.selected) && message.app.state === "Running") selectDefault().catch(() => {});
    if (before && before.state !== message.app.state) loadEntryPointsSoon();
  } else if (message.type === "catalog") {
    state.catalogUi.set(message.appId, message.hasUi);
    changed();
    loadToolsSoon();
    loadSettingsOffersSoon();
    loadEntryPointsSoon();
  } else if (message.type === "toolTable") {
    loadToolsSoon();
  } else if (message.type === "reloaded") {
    loadApps().catch(() => {});  // apps may have come or gone
    loadToolsSoon();
  }
}

export function connectEvents() {
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
    apply(message);
  };
  socket.onclose = () => {
    live.textContent = "reconnecting…";
    live.classList.remove("live");
    setTimeout(() => {
      loadApps().then(connectEvents, () => setTimeout(connectEvents, 2000));
    }, 1000);
  };
}
