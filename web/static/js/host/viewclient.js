// A view's own requests, by its view id: the server keeps each open view as a lease and checks
// every request of it (only the view's own app, only tools visible to the app, the per-view
// limits, and the person's approval where the app's policy asks for it: then the answer starts
// with an `approval` event). A ViewClient is one lease: opened (POST /apps/views), kept alive,
// its requests (/apps/views/<id>/mcp), its notifications, and ended.
import { frames } from "../sse.js";
import { hooks } from "./hooks.js";
import { Refusal, rpcError } from "./refusal.js";

const KEEPALIVE_MS = 60 * 1000;
// The views this page holds open: a page that goes away (closed, reloaded, navigated) ends
// their leases with it rather than leave them held until they expire. A `keepalive` fetch
// outlives the page and, unlike sendBeacon, can say DELETE.
const openViews = new Set();
window.addEventListener("pagehide", () => {
  for (const client of openViews) client.end(true);
});

export class ViewClient {
  constructor(appId, lease) {
    this.appId = appId;
    this.viewId = lease.viewId;
    this.sessionId = lease.sessionId;
    // What this view instance attached to the chat before (a view reopened), or null.
    this.attached = lease.modelContext || null;
    // What the operator allows this app's views ([apps.entries.<id>]).
    this.ui = lease.ui || {};
    this.base = "apps/views/" + encodeURIComponent(lease.viewId);
    this.nextId = 1;
    const every = Math.min(KEEPALIVE_MS, (lease.leaseS || 600) * 1000 / 3);
    this.keepalive = setInterval(() => {
      fetch(this.base + "/keepalive", { method: "POST", credentials: "same-origin" }).catch(() => {});
    }, every);
    openViews.add(this);
  }

  // `run`: the page calls the view's tool itself to open it (the person asked for it).
  // `restored`: rebuilt from a saved chat; the server keeps the view inactive until Run.
  static async open(appId, sessionId, toolCall, run, restored) {
    const response = await fetch("apps/views", {
      method: "POST",
      credentials: "same-origin",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ appId, sessionId: sessionId || undefined, toolCall, run, restored }),
    });
    const body = await response.json().catch(() => ({}));
    if (!response.ok) throw new Refusal((body.error && body.error.message) || `HTTP ${response.status}`);
    return new ViewClient(appId, body);
  }

  // A view of a workspace file (`path` from the root) in the viewer `tool` (a public name; the
  // first viewer that opens the file when absent): the server mints the file's opaque
  // host-resource URI for the view and says the viewer tool's arguments in `toolCall`.
  static async openFile(path, tool, sessionId) {
    const response = await fetch("apps/views", {
      method: "POST",
      credentials: "same-origin",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ file: path, tool: tool || undefined, sessionId: sessionId || undefined }),
    });
    const body = await response.json().catch(() => ({}));
    if (!response.ok) throw new Refusal((body.error && body.error.message) || `HTTP ${response.status}`);
    const client = new ViewClient(body.appId, body);
    client.toolCall = body.toolCall;
    return client;
  }

  // The view's notifications from the server (a subscribed file changed), each handed to
  // `onNotice`; resolves once the server listens, so a change after that is not missed.
  listen(onNotice) {
    if (this.listening) return this.listening;
    this.notices = new AbortController();
    this.listening = (async () => {
      const response = await fetch(this.base + "/events", {
        credentials: "same-origin",
        signal: this.notices.signal,
      });
      if (!response.ok) throw new Error(`the view's notifications cannot be read (HTTP ${response.status})`);
      const events = frames(response)[Symbol.asyncIterator]();
      await events.next();  // `ready`
      (async () => {
        for (;;) {
          const { value, done } = await events.next();
          if (done) break;
          if (value.event === "message") onNotice(JSON.parse(value.data));
        }
      })().catch(() => {});
    })();
    this.listening.catch(() => { this.listening = null; });
    return this.listening;
  }

  // The JSON-RPC answer ({result} or {error}); a transport failure throws.
  async request(method, params) {
    const id = this.nextId++;
    const response = await fetch(this.base + "/mcp", {
      method: "POST",
      credentials: "same-origin",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id, method, params: params || {} }),
    });
    const type = response.headers.get("content-type") || "";
    if (type.startsWith("application/json")) {
      const data = await response.json();
      if (data && data.jsonrpc) return data;
      throw new Error((data.error && data.error.message) || `HTTP ${response.status}`);
    }
    // Held for the person's approval (`approval`) or asking them (`elicitation`), then
    // `message` with the answer.
    for await (const { event, data } of frames(response)) {
      const parsed = JSON.parse(data);
      if (event === "approval") {
        const decision = await hooks.approve(parsed);
        await fetch(`${this.base}/approvals/${encodeURIComponent(parsed.approvalId)}`, {
          method: "POST",
          credentials: "same-origin",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ decision }),
        });
      } else if (event === "elicitation") {
        // The app asks the person during the call: the page shows the form (not awaited:
        // the call's answer comes on this stream once the question is answered).
        const base = this.base;
        hooks.ask(parsed, async (action, content) => {
          try {
            const answered = await fetch(`${base}/answers`, {
              method: "POST",
              credentials: "same-origin",
              headers: { "content-type": "application/json" },
              body: JSON.stringify({ requestId: parsed.requestId, action, content }),
            });
            if (answered.ok) return null;
            const body = await answered.json().catch(() => ({}));
            return (body.error && body.error.message) || `HTTP ${answered.status}`;
          } catch (error) {
            return `the answer was not sent: ${error.message || error}`;
          }
        });
      } else if (parsed.id === id) {
        return parsed;
      }
    }
    throw new Error(`no answer from app '${this.appId}' (HTTP ${response.status})`);
  }

  // The result of a forwarded request; its JSON-RPC error is thrown with its code, which
  // AppBridge passes on to the view as the error of the view's own request.
  async forward(method, params) {
    const answer = await this.request(method, params);
    if (answer.error) throw rpcError(answer.error.code, answer.error.message, answer.error.data);
    return answer.result;
  }

  async close() {
    await this.end(false);
  }

  end(leaving) {
    clearInterval(this.keepalive);
    if (this.notices) this.notices.abort();
    openViews.delete(this);
    const init = { method: "DELETE", credentials: "same-origin", keepalive: leaving };
    return fetch(this.base, init).catch(() => {});
  }
}
