// What the page knows of the apps, shared by the modules that draw it: they change it, then
// call changed(), and every drawing registered with onChange() redraws from it.
import { linked } from "./route.js";

export const state = {
  apps: new Map(),         // id → status, as /admin/apps and /admin/events say
  tools: [],               // GET /admin/tools: one row per tool of every Running app
  catalogUi: new Map(),    // id → whether the app's catalog shows a UI (/admin/events)
  selected: linked.app,    // the id of the app whose tools and stderr are shown
  linkWarning: null,       // why the link's `?app=` was not the app selected
  stderr: { id: null, lines: [] },  // the selected app's stderr tail, once read
};

const drawings = [];

export function onChange(draw) {
  drawings.push(draw);
}

export function changed() {
  for (const draw of drawings) draw();
}
