// The MCP Apps view host of the control page: it renders an app's UI resource in the sandbox
// (an outer frame from the sandbox origin, which renders the HTML in an inner frame with an
// opaque origin) and speaks the view protocol with it over postMessage. The view's own MCP
// requests (tools/call, resources/read) go to /apps/views/<viewId>/mcp: the server holds each
// open view as a lease and checks its requests before they reach the app's one upstream
// session, the one the agent uses too.
"use strict";

(function () {
  const UI_MIME = "text/html;profile=mcp-app";
  const MAX_HTML_BYTES = 2 * 1024 * 1024;
  const VIEW_PROTOCOLS = ["2026-01-26", "2025-11-21"];
  const TEARDOWN_WAIT_MS = 1000;
  const MESSAGE_MAX = 8000;  // characters of a ui/message the person may send as theirs
  const SANDBOX_ORIGIN = document.body.dataset.sandbox || "";

  // ---- a view's own requests, by its view id ---------------------------------------------------
  // The server keeps each open view as a lease and checks every request of it: only the view's
  // own app, only tools visible to the app, the per-view limits, and the person's approval
  // where the app's policy asks for it (then the answer starts with an `approval` event).

  const KEEPALIVE_MS = 60 * 1000;
  // The views this page holds open: a page that goes away (closed, reloaded, navigated) ends
  // their leases with it rather than leave them held until they expire. A `keepalive` fetch
  // outlives the page and, unlike sendBeacon, can say DELETE.
  const openViews = new Set();
  window.addEventListener("pagehide", () => {
    for (const client of openViews) client.end(true);
  });

  class ViewClient {
    constructor(appId, lease) {
      this.appId = appId;
      this.viewId = lease.viewId;
      this.sessionId = lease.sessionId;
      this.base = "apps/views/" + encodeURIComponent(lease.viewId);
      this.nextId = 1;
      const every = Math.min(KEEPALIVE_MS, (lease.leaseS || 600) * 1000 / 3);
      this.keepalive = setInterval(() => {
        fetch(this.base + "/keepalive", { method: "POST", credentials: "same-origin" }).catch(() => {});
      }, every);
      openViews.add(this);
    }

    // `run`: the page calls the view's tool itself to open it (the person asked for it).
    static async open(appId, sessionId, toolCall, run) {
      const response = await fetch("apps/views", {
        method: "POST",
        credentials: "same-origin",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ appId, sessionId: sessionId || undefined, toolCall, run }),
      });
      const body = await response.json().catch(() => ({}));
      if (!response.ok) throw new Refusal((body.error && body.error.message) || `HTTP ${response.status}`);
      return new ViewClient(appId, body);
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
      for await (const { event, data } of McpSse.frames(response)) {
        const parsed = JSON.parse(data);
        if (event === "approval") {
          const decision = await Host.approve(parsed);
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
          Host.ask(parsed, async (action, content) => {
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

    async close() {
      await this.end(false);
    }

    end(leaving) {
      clearInterval(this.keepalive);
      openViews.delete(this);
      const init = { method: "DELETE", credentials: "same-origin", keepalive: leaving };
      return fetch(this.base, init).catch(() => {});
    }
  }

  // ---- what may render ------------------------------------------------------------------------

  class Refusal extends Error {}

  function uiUri(tool) {
    const meta = (tool && tool._meta) || {};
    const ui = meta.ui || {};
    return ui.resourceUri || meta["ui/resourceUri"] || null;
  }

  function visibility(tool) {
    const ui = (tool && tool._meta && tool._meta.ui) || {};
    return Array.isArray(ui.visibility) ? ui.visibility : ["model", "app"];
  }

  function decodeBase64(blob) {
    const bytes = Uint8Array.from(atob(blob), (c) => c.charCodeAt(0));
    return bytes;
  }

  // The HTML of a UI resource, or a Refusal that says why it is not rendered.
  async function loadResource(client, uri) {
    if (typeof uri !== "string" || !uri.startsWith("ui://")) {
      throw new Refusal(`'${uri}' is not a ui:// resource: only ui:// resources are rendered as app views`);
    }
    const read = await client.request("resources/read", { uri });
    if (read.error) throw new Refusal(`app '${client.appId}' could not read '${uri}': ${read.error.message}`);
    const contents = (read.result && read.result.contents) || [];
    const content = contents.find((c) => c.uri === uri) || contents[0];
    if (!content) throw new Refusal(`app '${client.appId}' returned nothing for '${uri}'`);
    const mime = String(content.mimeType || "");
    if (mime.toLowerCase() !== UI_MIME) {
      throw new Refusal(`'${uri}' has the MIME type '${mime || "none"}', not ${UI_MIME}: it is not rendered`);
    }
    let bytes;
    if (typeof content.text === "string") bytes = new TextEncoder().encode(content.text);
    else if (typeof content.blob === "string") bytes = decodeBase64(content.blob);
    else throw new Refusal(`'${uri}' has no text or blob`);
    if (bytes.length > MAX_HTML_BYTES) {
      throw new Refusal(`'${uri}' is ${bytes.length} bytes: a view may be at most 2 MiB (${MAX_HTML_BYTES} bytes), so it is not rendered`);
    }
    const html = new TextDecoder().decode(bytes);
    const ui = (content._meta && content._meta.ui) || {};
    return { html, csp: ui.csp || null, permissions: ui.permissions || null };
  }

  // ---- one view -------------------------------------------------------------------------------

  class View {
    constructor(options) {
      Object.assign(this, options);  // client, appId, tool, publicName, args, result, html, csp
      this.initialized = false;
      this.sent = [];  // what the host sent to the view, in order (shown to the tests)
      this.nextId = 1;
      this.pending = new Map();
      this.onMessage = this.onMessage.bind(this);
    }

    mount(canvas) {
      const frame = document.createElement("iframe");
      frame.setAttribute("sandbox", "allow-scripts allow-same-origin");
      frame.setAttribute("title", `view of ${this.publicName || this.tool.name}`);
      const csp = encodeURIComponent(JSON.stringify(this.csp || {}));
      frame.src = `${SANDBOX_ORIGIN}/sandbox?csp=${csp}`;
      this.frame = frame;
      window.addEventListener("message", this.onMessage);
      canvas.replaceChildren(frame);
    }

    post(message) {
      if (!this.frame || !this.frame.contentWindow) return;
      if (message.method && !message.method.startsWith("ui/notifications/sandbox-")) {
        this.sent.push(message.method);
      }
      this.frame.contentWindow.postMessage(message, SANDBOX_ORIGIN);
    }

    notify(method, params) { this.post({ jsonrpc: "2.0", method, params: params || {} }); }
    reply(id, result) { this.post({ jsonrpc: "2.0", id, result: result || {} }); }
    fail(id, code, message) { this.post({ jsonrpc: "2.0", id, error: { code, message } }); }

    request(method, params) {
      const id = `host-${this.nextId++}`;
      return new Promise((resolve) => {
        this.pending.set(id, resolve);
        this.post({ jsonrpc: "2.0", id, method, params: params || {} });
      });
    }

    onMessage(event) {
      if (!this.frame || event.source !== this.frame.contentWindow) return;
      if (event.origin !== SANDBOX_ORIGIN) return;
      const m = event.data;
      if (!m || m.jsonrpc !== "2.0") return;
      if (m.method === "ui/notifications/sandbox-proxy-ready") {
        this.post({
          jsonrpc: "2.0",
          method: "ui/notifications/sandbox-resource-ready",
          params: { html: this.html, csp: this.csp || undefined },
        });
      } else if (m.method && m.id !== undefined) {
        this.onRequest(m).catch((error) => this.fail(m.id, -32603, String(error.message || error)));
      } else if (m.method) {
        this.onNotification(m);
      } else if (m.id !== undefined && this.pending.has(m.id)) {
        this.pending.get(m.id)(m);
        this.pending.delete(m.id);
      }
    }

    hostContext() {
      const box = this.frame.getBoundingClientRect();
      return {
        theme: Host.theme(),
        displayMode: "inline",
        availableDisplayModes: ["inline"],
        containerDimensions: { width: Math.round(box.width) || 600, maxHeight: 4000 },
        locale: navigator.language || "en",
        timeZone: Intl.DateTimeFormat().resolvedOptions().timeZone,
        platform: "web",
        userAgent: "mcpapps",
        toolInfo: { tool: this.tool },
      };
    }

    async onRequest(m) {
      const params = m.params || {};
      switch (m.method) {
        case "ui/initialize": {
          const asked = params.protocolVersion;
          this.reply(m.id, {
            protocolVersion: VIEW_PROTOCOLS.includes(asked) ? asked : VIEW_PROTOCOLS[0],
            hostInfo: { name: "mcpapps", version: "0.1.0" },
            hostCapabilities: {
              openLinks: {},
              serverTools: {},
              serverResources: {},
              logging: {},
              message: { text: {} },
              updateModelContext: { text: {} },
              sandbox: { csp: this.csp || {} },
            },
            hostContext: this.hostContext(),
          });
          return;
        }
        case "ping":
          this.reply(m.id, {});
          return;
        case "tools/call":
          return this.callTool(m.id, params);
        case "resources/read": {
          const answer = await this.client.request("resources/read", params);
          if (answer.error) this.post({ jsonrpc: "2.0", id: m.id, error: answer.error });
          else this.reply(m.id, answer.result);
          return;
        }
        case "ui/open-link": {
          const url = String(params.url || "");
          if (!/^https?:\/\//i.test(url)) {
            this.fail(m.id, -32602, "only http and https links can be opened");
            return;
          }
          const yes = await Host.confirm(`The app wants to open ${url}`, "Open link");
          if (yes) window.open(url, "_blank", "noopener,noreferrer");
          this.reply(m.id, yes ? {} : { isError: true });
          return;
        }
        case "ui/message": {
          const text = (params.content || [])
            .filter((c) => c && c.type === "text")
            .map((c) => c.text)
            .join("\n");
          if (text.length > MESSAGE_MAX) {
            this.fail(m.id, -32602, `a message from a view may be at most ${MESSAGE_MAX} characters`);
            return;
          }
          const yes = text && await Host.confirm(`The app wants to send this message as you:\n${text}`, "Send");
          if (yes) Host.onMessage(text);
          this.reply(m.id, yes ? {} : { isError: true });
          return;
        }
        case "ui/update-model-context":
          // A view a chat opened: the server keeps it for that session's next turn.
          if (this.client.sessionId) {
            const answer = await this.client.request("ui/update-model-context", params);
            if (answer.error) this.post({ jsonrpc: "2.0", id: m.id, error: answer.error });
            else this.reply(m.id, {});
            return;
          }
          Host.onModelContext(this.appId, params);
          this.reply(m.id, {});
          return;
        case "ui/request-display-mode":
          this.reply(m.id, { mode: "inline" });
          return;
        default:
          this.fail(m.id, -32601, `the host does not handle '${m.method}'`);
      }
    }

    async callTool(id, params) {
      // The server checks the tool (its app, its visibility, the limits, approval).
      const answer = await this.client.request("tools/call", {
        name: params.name,
        arguments: params.arguments || {},
      });
      if (answer.error) {
        this.post({ jsonrpc: "2.0", id, error: answer.error });
        return;
      }
      this.reply(id, answer.result);
      Host.onAppEvent({
        tool: `${this.appId}/${params.name}`,
        args: params.arguments || {},
        resultText: resultText(answer.result),
      });
    }

    onNotification(m) {
      const params = m.params || {};
      switch (m.method) {
        case "ui/notifications/initialized":
          if (this.initialized) return;
          this.initialized = true;
          this.notify("ui/notifications/tool-input", { arguments: this.args || {} });
          this.result.then(
            (result) => this.notify("ui/notifications/tool-result", result),
            (error) => this.notify("ui/notifications/tool-cancelled", { reason: String(error.message || error) }),
          );
          return;
        case "ui/notifications/size-changed": {
          const height = Number(params.height);
          if (Number.isFinite(height) && height > 0) {
            this.frame.style.height = `${Math.min(Math.max(Math.ceil(height), 80), 4000)}px`;
          }
          return;
        }
        case "ui/notifications/request-teardown":
          Host.closeView();
          return;
        case "notifications/message":
          console.info(`app ${this.appId}:`, params.data);
          return;
        default:
          return;
      }
    }

    themeChanged() {
      if (this.initialized) this.notify("ui/notifications/host-context-changed", { theme: Host.theme() });
    }

    // Ask the view to tear down, wait a bounded time for its answer, then remove it.
    async unmount() {
      if (this.initialized) {
        await Promise.race([
          this.request("ui/resource-teardown", {}),
          new Promise((resolve) => setTimeout(resolve, TEARDOWN_WAIT_MS)),
        ]);
      }
      window.removeEventListener("message", this.onMessage);
      if (this.frame) this.frame.remove();
      this.frame = null;
      await this.client.close();
    }
  }

  function resultText(result) {
    if (!result) return "";
    return (result.content || [])
      .filter((c) => c && c.type === "text")
      .map((c) => c.text)
      .join("\n")
      .slice(0, 2000);
  }

  // ---- the page's side ------------------------------------------------------------------------

  let current = null;
  let opening = null;  // the lease of a view being opened, closed if it cannot be shown

  const Host = {
    // Set by the page: how a confirmation is asked, and where messages and events go.
    confirm: async (text) => window.confirm(text),
    // What the person says to a view's tool call that needs approval: "once", "while-open"
    // or "deny".
    approve: async () => "deny",
    // Show an app's question ({requestId, app, tool, message, requestedSchema | url}) asked
    // during a view's call; `answer(action, content)` sends it (null, or why it was not taken).
    ask: () => {},
    onMessage: () => {},
    onModelContext: () => {},
    onAppEvent: () => {},
    onTitle: () => {},
    theme: () => "light",
    current: () => current,
    uiUri,

    // Open the view of `toolName` of `appId`. With `result` (a result the chat already has)
    // the tool is not called again; without, it is called with `args`.
    async openView({ appId, toolName, publicName, args, result, resourceUri, sessionId }) {
      await Host.closeView();
      const canvas = document.getElementById("canvas");
      canvas.replaceChildren(text("p", "Opening…", "empty"));
      Host.onTitle(publicName || `${appId}/${toolName}`);
      try {
        if (!SANDBOX_ORIGIN) throw new Refusal("the app sandbox is off ([sandbox] enabled = false): views are not rendered");
        const client = await ViewClient.open(appId, sessionId, {
          toolName, publicName, resourceUri, arguments: args || {},
        }, result === undefined);
        opening = client;
        const listed = await client.request("tools/list", {});
        if (listed.error) throw new Refusal(`app '${appId}': ${listed.error.message}`);
        const tool = ((listed.result && listed.result.tools) || []).find((t) => t.name === toolName);
        if (!tool) throw new Refusal(`app '${appId}' has no tool '${toolName}'`);
        const uri = resourceUri || uiUri(tool);
        if (!uri) throw new Refusal(`tool '${toolName}' of app '${appId}' has no UI`);
        const resource = await loadResource(client, uri);
        const pending = result !== undefined
          ? Promise.resolve(result)
          : client.request("tools/call", { name: toolName, arguments: args || {} }).then((answer) => {
              if (answer.error) throw new Error(answer.error.message);
              return answer.result;
            });
        pending.catch(() => {});  // reported to the view as tool-cancelled
        const view = new View({
          client, appId, tool, publicName, args: args || {}, result: pending,
          html: resource.html, csp: resource.csp,
        });
        current = view;
        opening = null;
        view.mount(canvas);
        document.getElementById("canvas-close").hidden = false;
        return view;
      } catch (error) {
        const message = error instanceof Refusal ? error.message : `the view could not be opened: ${error.message || error}`;
        canvas.replaceChildren(text("p", message, "refusal"));
        if (opening) opening.close();
        opening = null;
        return null;
      }
    },

    async closeView() {
      const view = current;
      current = null;
      document.getElementById("canvas-close").hidden = true;
      if (view) await view.unmount();
    },
  };

  function text(tag, content, className) {
    const node = document.createElement(tag);
    node.textContent = content;
    if (className) node.className = className;
    return node;
  }

  window.McpHost = Host;
})();
