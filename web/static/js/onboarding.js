// Onboarding: an app whose manifest names a setup skill gets a "Set up" button on its card,
// which starts a new chat whose first turn carries the skill (POST /apps/onboarding/<appId>).
// Nothing else ever starts one: a skill runs only when the person asks.
import { el } from "./dom.js";
import * as plugins from "./pluginapi.js";

// `startChat(label, start)`: the chat pane's new chat, whose first turn is `start()`.
export function setUpButton(status, startChat) {
  if (!status.onboardingSkill) return null;
  return el("button", {
    type: "button",
    class: "set-up",
    "data-command": "set-up",
    onclick: (event) => {
      event.stopPropagation();
      startChat(`Set up ${status.id}`, () => plugins.startOnboarding(status.id));
    },
  }, "Set up");
}
