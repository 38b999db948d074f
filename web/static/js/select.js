// Which app is selected (its tools and stderr shown): the one clicked, the link's `?app=`, or,
// with none or one that names no app, the one /apps/health calls the app (the first Running app
// with a UI, else the first Running app), its warning shown above the tools. The address is not
// rewritten then, so "/" keeps meaning "whatever runs".
import * as api from "./api.js";
import { loadStderr } from "./detail.js";
import { rememberApp } from "./route.js";
import { changed, state } from "./state.js";

export function select(id) {
  state.selected = id;
  state.linkWarning = null;
  rememberApp(id);
  changed();
  loadStderr(id);
}

export async function selectDefault() {
  const wanted = state.selected;
  if (wanted && state.apps.has(wanted)) return;
  const body = await api.health(wanted);
  if (state.selected !== wanted || !body.name || !state.apps.has(body.name)) return;
  state.selected = body.name;
  state.linkWarning = body.warning || null;
  changed();
  loadStderr(state.selected);
}
