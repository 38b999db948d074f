// The plugin extensions' buttons on an app's card: "Settings" for an app that offers settings
// (its reason shown when the offer is not used), "Set up" for one with a setup skill.
import * as plugins from "./pluginapi.js";
import { el } from "./dom.js";
import { changed } from "./state.js";
import { setUpButton } from "./onboarding.js";
import { openSettings } from "./settings.js";

const offers = new Map();  // app id → null, or why its settings are not used
let startChat = null;
let timer = null;

export function connectCards(hooks) {
  startChat = hooks.startChat;
}

export async function loadSettingsOffers() {
  const body = await plugins.settingsOffers();
  offers.clear();
  for (const offer of body.apps) offers.set(offer.app, offer.problem);
  changed();
}

// Catalogs change in bursts: read the offers once they settle.
export function loadSettingsOffersSoon() {
  clearTimeout(timer);
  timer = setTimeout(() => loadSettingsOffers().catch(() => {}), 200);
}

function settingsButton(status) {
  if (!offers.has(status.id)) return null;
  return el("button", {
    type: "button",
    class: "settings",
    "data-command": "settings",
    title: offers.get(status.id) || "the app's settings",
    onclick: (event) => {
      event.stopPropagation();
      openSettings(status.id);
    },
  }, "Settings");
}

export function pluginButtons(status) {
  return [settingsButton(status), startChat ? setUpButton(status, startChat) : null];
}
