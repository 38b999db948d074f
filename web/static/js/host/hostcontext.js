// What a view is told of its host (the spec's host context): what the page adds, the theme and
// its style variables, the display mode and the room the view has, locale, time zone, platform
// and device, the tool it shows, and what it attached to the chat.
import { INLINE_MAX_HEIGHT, availableDisplayModes } from "./displaymodes.js";
import { hooks } from "./hooks.js";
import { hostStyles } from "./styles.js";

export function hostContext(view) {
  const box = view.frame ? view.frame.getBoundingClientRect() : { width: 0, height: 0 };
  const width = Math.round(box.width) || 600;
  const containerDimensions = view.displayMode === "inline"
    ? { width, maxHeight: INLINE_MAX_HEIGHT }
    : { width, height: Math.round(box.height) || 400 };
  return {
    ...view.extraContext,  // what the page adds (an entry point's openai/deepLink)
    theme: hooks.theme(),
    styles: hostStyles(),
    displayMode: view.displayMode,
    availableDisplayModes: availableDisplayModes(view),
    containerDimensions,
    locale: navigator.language || "en",
    timeZone: Intl.DateTimeFormat().resolvedOptions().timeZone,
    platform: "web",
    userAgent: "mcpapps",
    deviceCapabilities: { hover: matchMedia("(hover: hover)").matches, touch: navigator.maxTouchPoints > 0 },
    toolInfo: view.toolCallId === undefined ? { tool: view.tool } : { id: view.toolCallId, tool: view.tool },
    "openai/modelContext": view.modelContext || null,
  };
}
