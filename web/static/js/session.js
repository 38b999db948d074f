// The chat session the page shows: the link's `?session=`, else the one this browser used
// last (kept in localStorage), else none until the server starts one. Whoever shows something
// per session (the chat's tabs) is told when it changes.
import { linked } from "./route.js";

const KEY = "mcpapps.chat.session";
let current = linked.session || localStorage.getItem(KEY);
const listeners = [];

export const sessionId = () => current;

export function onSession(changed) {
  listeners.push(changed);
}

function tell(before) {
  if (before !== current) for (const changed of listeners) changed(current);
}

export function setSession(id) {
  const before = current;
  current = id;
  localStorage.setItem(KEY, id);
  tell(before);
}

export function forgetSession() {
  const before = current;
  current = null;
  localStorage.removeItem(KEY);
  tell(before);
}

// Whether this page has started a turn: what the page restores when it opens (history.js) must
// not take the place of what the person has begun meanwhile.
let turnStarted = false;
export const startedTurn = () => turnStarted;
export function noteTurn() {
  turnStarted = true;
}
