// The chat session the page shows: the link's `?session=`, else the one this browser used
// last (kept in localStorage), else none until the server starts one.
import { linked } from "./route.js";

const KEY = "mcpapps.chat.session";
let current = linked.session || localStorage.getItem(KEY);

export const sessionId = () => current;

export function setSession(id) {
  current = id;
  localStorage.setItem(KEY, id);
}

export function forgetSession() {
  current = null;
  localStorage.removeItem(KEY);
}
