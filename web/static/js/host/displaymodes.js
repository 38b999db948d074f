// The display modes (inline, fullscreen, pip): which ones a view may be in, and the canvas pane
// showing the mode its view is in, with a control to leave it (and Escape).
import { currentView } from "./canvasview.js";

export const DISPLAY_MODES = ["inline", "fullscreen", "pip"];
// The tallest an inline view grows to (its ui/notifications/size-changed).
export const INLINE_MAX_HEIGHT = 4000;

// The display modes this view may be in: the host's, narrowed to what the resource declares.
export function availableDisplayModes(view) {
  if (view.place) return ["inline"];  // a view in a place of its own (a chat's tab) stays there
  const declared = view.resource.ui.availableDisplayModes || view.resource.openai.availableDisplayModes;
  if (!Array.isArray(declared) || !declared.length) return DISPLAY_MODES.slice();
  const modes = DISPLAY_MODES.filter((mode) => declared.includes(mode));
  return modes.includes("inline") ? modes : ["inline", ...modes];
}

// May the view be put in `mode`? The host and the resource offer it, and the view said it
// supports it (when it says anything: appCapabilities.availableDisplayModes).
export function canDisplay(view, mode) {
  if (!availableDisplayModes(view).includes(mode)) return false;
  const app = view.bridge && view.bridge.getAppCapabilities();
  const own = app && app.availableDisplayModes;
  return !Array.isArray(own) || own.includes(mode) || mode === "inline";
}

// The canvas pane shows the view in `mode` (its class), with a control to leave it.
export function showDisplayMode(mode) {
  const pane = document.getElementById("canvas-pane");
  if (!pane) return;
  for (const each of DISPLAY_MODES) pane.classList.toggle(`display-${each}`, each === mode);
  let exit = document.getElementById("canvas-inline");
  if (!exit) {
    exit = document.createElement("button");
    exit.type = "button";
    exit.id = "canvas-inline";
    exit.textContent = "Exit full screen";
    exit.title = "back to the page (Escape)";
    exit.addEventListener("click", () => toInline());
    const close = document.getElementById("canvas-close");
    close.before(exit);
  }
  exit.hidden = mode === "inline";
  exit.textContent = mode === "pip" ? "Back to the page" : "Exit full screen";
}

function toInline() {
  const view = currentView();
  if (view) view.setDisplayMode("inline");
}

// Escape leaves full screen (and picture-in-picture) when the page has the keyboard; the
// visible control does it from anywhere.
document.addEventListener("keydown", (event) => {
  const view = currentView();
  if (event.key === "Escape" && view && view.displayMode !== "inline") toInline();
});
