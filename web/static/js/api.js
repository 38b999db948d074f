// The server's HTTP API as the page calls it: every URL the page's modules fetch is here (the
// view host's own calls to /apps/views are its own; /admin/events is a WebSocket, events.js).
// An admin call answers JSON or throws an Error worded by the server, and a 401 shows the
// login box. The chat calls hand back what their callers need: a body, null, or the Response
// itself when it is read as a stream.
import { showLogin } from "./login.js";

const SAME_ORIGIN = { credentials: "same-origin" };

async function admin(path, options) {
  const response = await fetch(path, { ...SAME_ORIGIN, ...(options || {}) });
  if (response.status === 401) {
    showLogin();
    throw new Error("not logged in");
  }
  const body = await response.json().catch(() => ({}));
  if (!response.ok) {
    const error = (body && body.error) || {};
    throw new Error(error.message || `HTTP ${response.status}`);
  }
  return body;
}

function postJson(path, body) {
  return fetch(path, {
    method: "POST",
    ...SAME_ORIGIN,
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}

const appPath = (id) => `admin/apps/${encodeURIComponent(id)}`;
const chatPath = (sessionId) => `apps/chat/${encodeURIComponent(sessionId)}`;

// ---- the admin API ------------------------------------------------------------------------------

export const listApps = () => admin("admin/apps");
export const listTools = () => admin("admin/tools");
export const listReplicas = () => admin("admin/cluster");
export const appDetail = (id) => admin(appPath(id));
// `command`: start, stop, restart or logout.
export const command = (id, name) => admin(`${appPath(id)}/${name}`, { method: "POST" });

// What /apps/health calls the app (its body, or {} when it says nothing readable).
export async function health(app) {
  const query = app ? `?app=${encodeURIComponent(app)}` : "";
  const response = await fetch(`apps/health${query}`, SAME_ORIGIN);
  return response.json().catch(() => ({}));
}

// ---- the workspace ------------------------------------------------------------------------------

// One folder of the workspace (`path` from the root, "" the root): its entries, folders first,
// each file with its viewers; null when no workspace is set.
export async function listFolder(path) {
  const response = await fetch(`apps/files?path=${encodeURIComponent(path)}`, SAME_ORIGIN);
  if (response.status === 401) {
    showLogin();
    throw new Error("not logged in");
  }
  const body = await response.json().catch(() => ({}));
  if (response.status === 404 && body.error && body.error.code === "no_workspace") return null;
  if (!response.ok) throw new Error((body.error && body.error.message) || `HTTP ${response.status}`);
  return body;
}

// The workspace's changes as they happen: a Response whose body is server-sent events.
export const workspaceEvents = (signal) => fetch("apps/files/events", { ...SAME_ORIGIN, signal });

// ---- the chat -----------------------------------------------------------------------------------

// A page of a saved session's turns (`query`: "" for the latest, or `?before=…&limit=…`), or
// null when the session cannot be read.
export async function savedTurns(sessionId, query) {
  const response = await fetch(`${chatPath(sessionId)}${query}`, SAME_ORIGIN);
  return response.ok ? response.json() : null;
}

// The views a session's tool calls opened, oldest first.
export async function sessionViews(sessionId) {
  const response = await fetch(`${chatPath(sessionId)}/views`, SAME_ORIGIN);
  return response.ok ? (await response.json()).views : [];
}

// A turn: its Response, whose body is the turn's server-sent events.
export const startTurn = (body) => postJson("apps/chat", body);
export const answerQuestion = (sessionId, answer) => postJson(`${chatPath(sessionId)}/answers`, answer);
export const cancelTurn = (sessionId) => fetch(`${chatPath(sessionId)}/cancel`, { method: "POST", ...SAME_ORIGIN });
