// The plugin extensions' HTTP API as the page calls it (settings, @-mentions, onboarding, entry
// points). An error answer throws an Error worded by the server, with the setting it names
// (`field`).
const SAME_ORIGIN = { credentials: "same-origin" };

async function json(response) {
  const body = await response.json().catch(() => ({}));
  if (!response.ok) {
    const said = (body && body.error) || {};
    const error = new Error(said.message || `HTTP ${response.status}`);
    error.field = said.field || null;
    error.code = said.code || null;
    throw error;
  }
  return body;
}

function post(path, body) {
  return fetch(path, {
    method: "POST",
    ...SAME_ORIGIN,
    headers: { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

const settingsPath = (appId) => `apps/settings/${encodeURIComponent(appId)}`;

export const settingsOffers = async () => json(await fetch("apps/settings", SAME_ORIGIN));
export const readSettings = async (appId) => json(await fetch(settingsPath(appId), SAME_ORIGIN));
export const saveSettings = async (appId, set) => json(await post(settingsPath(appId), { set }));
export const runSettingsAction = async (appId, tool) =>
  json(await post(`${settingsPath(appId)}/actions/${encodeURIComponent(tool)}`));

// One search: every app (`appId` null) or one; `signal` aborts it when a newer one starts.
export async function searchMentions(query, appId, signal) {
  const params = new URLSearchParams({ q: query });
  if (appId) params.set("app", appId);
  return json(await fetch(`apps/mentions?${params}`, { ...SAME_ORIGIN, signal }));
}

// A turn that carries the app's setup skill: its Response, read as the chat's turns are.
export const startOnboarding = (appId) => post(`apps/onboarding/${encodeURIComponent(appId)}`, {});

// Entry points: every Running app's (global and thread); one opened (its tool called with {},
// `body`: {type?, path?, sessionId?}); a global one's deep link resolved without opening it.
export const listEntryPoints = async () => json(await fetch("apps/entrypoints", SAME_ORIGIN));
const entryPath = (name) => `apps/entrypoints/${encodeURIComponent(name)}`;
export const openEntryPoint = async (name, body) => json(await post(`${entryPath(name)}/open`, body || {}));
export async function resolveEntryPoint(name, path) {
  const query = path === null || path === undefined ? "" : `?${new URLSearchParams({ path })}`;
  return json(await fetch(`${entryPath(name)}${query}`, SAME_ORIGIN));
}
