// The app list: the apps and their tools as the admin API says, and a card per app with its
// state and its start / stop / restart / sign in / sign out buttons.
import * as api from "./api.js";
import { $, el } from "./dom.js";
import { pluginButtons } from "./plugincards.js";
import { select } from "./select.js";
import { changed, onChange, state } from "./state.js";

export async function loadApps() {
  const body = await api.listApps();
  state.apps.clear();
  for (const status of body.apps) state.apps.set(status.id, status);
  changed();
}

export async function loadTools() {
  state.tools = (await api.listTools()).tools;
  changed();
}

// The tool table changes in bursts (an app's catalog, then the table): read it once they settle.
let toolsTimer = null;
export function loadToolsSoon() {
  clearTimeout(toolsTimer);
  toolsTimer = setTimeout(() => loadTools().catch(() => {}), 150);
}

export function hasUi(status) {
  return state.catalogUi.has(status.id) ? state.catalogUi.get(status.id) : status.hasUi;
}

function control(id, name) {
  return async (event) => {
    event.stopPropagation();
    try {
      await api.command(id, name);
    } catch (error) {
      alert(`${name} ${id}: ${error.message}`);
    }
  };
}

// The app's authorization server's own page, in a tab of its own: once the person signs in
// there, it sends the browser back to the server's callback, and the app starts (its state
// arrives here through /admin/events). The page hands the server nothing of this one.
function signIn(status) {
  return (event) => {
    event.stopPropagation();
    window.open(status.signInUrl, "_blank", "noopener");
  };
}

function card(s) {
  return el(
    "li",
    {
      "data-app-id": s.id,
      "data-state": s.state,
      class: s.id === state.selected ? "selected" : "",
      onclick: () => select(s.id),
    },
    el("div", { class: "app-head" },
      el("strong", {}, s.name || s.id),
      el("span", { class: `state state-${s.state}` }, s.state)),
    el("div", { class: "meta" },
      [
        s.id,
        s.pid ? `pid ${s.pid}` : null,
        `restarts ${s.restarts}`,
        s.protocolVersion ? `protocol ${s.protocolVersion}` : null,
        hasUi(s) ? "has a UI" : null,
      ].filter(Boolean).join(" · ")),
    s.lastError ? el("div", { class: "error" }, s.lastError) : null,
    s.previousError ? el("div", { class: "meta" }, `previous failure: ${s.previousError}`) : null,
    el("div", { class: "buttons" },
      s.state === "NeedsSignIn" && s.signInUrl
        ? el("button", { type: "button", class: "sign-in", "data-command": "sign-in", onclick: signIn(s) }, "Sign in")
        : null,
      el("button", { type: "button", "data-command": "start", onclick: control(s.id, "start") }, "Start"),
      el("button", { type: "button", "data-command": "stop", onclick: control(s.id, "stop") }, "Stop"),
      el("button", { type: "button", "data-command": "restart", onclick: control(s.id, "restart") }, "Restart"),
      s.auth === "oauth"
        ? el("button", { type: "button", "data-command": "logout", onclick: control(s.id, "logout") }, "Sign out")
        : null,
      pluginButtons(s)),
  );
}

function renderApps() {
  $("apps").replaceChildren(...[...state.apps.values()].map(card));
}

onChange(renderApps);
