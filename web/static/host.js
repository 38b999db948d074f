// The MCP Apps view host of the control page: it renders an app's UI resource in the sandbox
// (an outer frame from the sandbox origin, which renders the HTML in an inner frame with an
// opaque origin) and speaks the view protocol with it over postMessage. The view's own MCP
// requests (tools/call, resources/read) go to /apps/mcp/<appId>, the same upstream session the
// agent uses.
"use strict";

(function () {
  const UI_MIME = "text/html;profile=mcp-app";
  const MAX_HTML_BYTES = 2 * 1024 * 1024;
  const VIEW_PROTOCOLS = ["2026-01-26", "2025-11-21"];
  const TEARDOWN_WAIT_MS = 1000;
  const MCP_VERSION = "2025-11-25";
  const SANDBOX_ORIGIN = document.body.dataset.sandbox || "";

  // ---- a small MCP client over Streamable HTTP (JSON or SSE answers) -------------------------

  class McpClient {
    constructor(appId) {
      this.appId = appId;
      this.url = "apps/mcp/" + encodeURIComponent(appId);
      this.session = null;
      this.version = null;
      this.nextId = 1;
      this.ready = null;
    }

    async post(message) {
      const headers = {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
      };
      if (this.session) headers["mcp-session-id"] = this.session;
      if (this.version) headers["mcp-protocol-version"] = this.version;
      return fetch(this.url, {
        method: "POST",
        headers,
        body: JSON.stringify(message),
        credentials: "same-origin",
      });
    }

    async answer(response, id) {
      const type = response.headers.get("content-type") || "";
      if (type.startsWith("application/json")) {
        const data = JSON.parse(await response.text());
        if (data && data.jsonrpc) return data;
        const error = (data && data.error) || {};
        throw new Error(error.message || `HTTP ${response.status} from ${this.url}`);
      }
      return this.stream(response, id);
    }

    // An SSE answer, read as it comes: the app may ask the page something (elicitation,
    // sampling) on the request's stream before its answer, and waits for the reply.
    async stream(response, id) {
      if (!response.body) throw new Error(`no answer from app '${this.appId}' (HTTP ${response.status})`);
      const reader = response.body.getReader();
      const decoder = new TextDecoder();
      let buffer = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += decoder.decode(value, { stream: true }).replace(/\r\n/g, "\n");
        let cut;
        while ((cut = buffer.indexOf("\n\n")) >= 0) {
          const block = buffer.slice(0, cut);
          buffer = buffer.slice(cut + 2);
          const data = block
            .split("\n")
            .filter((line) => line.startsWith("data:"))
            .map((line) => line.slice(5).replace(/^ /, ""))
            .join("\n");
          if (!data) continue;
          const message = JSON.parse(data);
          if (message.method && message.id !== undefined) {
            this.serve(message);
          } else if (message.id === id) {
            reader.cancel().catch(() => {});
            return message;
          }
        }
      }
      throw new Error(`no answer from app '${this.appId}' (HTTP ${response.status})`);
    }

    // Answer a request of the app (Host.onServerRequest decides), as a JSON-RPC response.
    async serve(request) {
      let reply;
      try {
        const result = await Host.onServerRequest(this.appId, request.method, request.params || {});
        reply = { jsonrpc: "2.0", id: request.id, result };
      } catch (error) {
        reply = { jsonrpc: "2.0", id: request.id, error: { code: error.code || -32603, message: error.message || String(error) } };
      }
      await this.post(reply).catch(() => {});
    }

    init() {
      if (!this.ready) {
        this.ready = (async () => {
          const response = await this.post({
            jsonrpc: "2.0",
            id: 0,
            method: "initialize",
            params: {
              protocolVersion: MCP_VERSION,
              // The person answers an app's questions in the page (Host.onServerRequest).
              capabilities: { elicitation: { form: {}, url: {} }, sampling: {} },
              clientInfo: { name: "mcpapps-control-page", version: "1" },
            },
          });
          const message = await this.answer(response, 0);
          if (message.error) throw new Error(message.error.message);
          this.session = response.headers.get("mcp-session-id");
          this.version = message.result.protocolVersion;
          await this.post({ jsonrpc: "2.0", method: "notifications/initialized" });
        })();
        this.ready.catch(() => { this.ready = null; });
      }
      return this.ready;
    }

    // The JSON-RPC answer ({result} or {error}); a transport failure throws.
    async request(method, params) {
      await this.init();
      const id = this.nextId++;
      const response = await this.post({ jsonrpc: "2.0", id, method, params: params || {} });
      return this.answer(response, id);
    }
  }

  const clients = new Map();
  function clientFor(appId) {
    if (!clients.has(appId)) clients.set(appId, new McpClient(appId));
    return clients.get(appId);
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
          const yes = text && await Host.confirm(`The app wants to send this message as you:\n${text}`, "Send");
          if (yes) Host.onMessage(text);
          this.reply(m.id, yes ? {} : { isError: true });
          return;
        }
        case "ui/update-model-context":
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
      const listed = await this.client.request("tools/list", {});
      const tools = (listed.result && listed.result.tools) || [];
      const tool = tools.find((t) => t.name === params.name);
      if (!tool) {
        this.fail(id, -32602, `app '${this.appId}' has no tool '${params.name}'`);
        return;
      }
      if (!visibility(tool).includes("app")) {
        this.fail(id, -32602, `tool '${params.name}' is not visible to the app's view`);
        return;
      }
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

  const Host = {
    // Set by the page: how a confirmation is asked, and where messages and events go.
    confirm: async (text) => window.confirm(text),
    onMessage: () => {},
    onModelContext: () => {},
    onAppEvent: () => {},
    // An app asks the page (elicitation/create, sampling/createMessage): resolve to the
    // result, or throw an Error (with `code`) for a JSON-RPC error.
    onServerRequest: async (appId, method) => {
      const error = new Error(`the page does not answer ${method}`);
      error.code = -32601;
      throw error;
    },
    onTitle: () => {},
    theme: () => "light",
    current: () => current,
    clientFor,
    uiUri,

    // Open the view of `toolName` of `appId`. With `result` (a result the chat already has)
    // the tool is not called again; without, it is called with `args`.
    async openView({ appId, toolName, publicName, args, result, resourceUri }) {
      await Host.closeView();
      const canvas = document.getElementById("canvas");
      canvas.replaceChildren(text("p", "Opening…", "empty"));
      Host.onTitle(publicName || `${appId}/${toolName}`);
      try {
        if (!SANDBOX_ORIGIN) throw new Refusal("the app sandbox is off ([sandbox] enabled = false): views are not rendered");
        const client = clientFor(appId);
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
        view.mount(canvas);
        document.getElementById("canvas-close").hidden = false;
        return view;
      } catch (error) {
        const message = error instanceof Refusal ? error.message : `the view could not be opened: ${error.message || error}`;
        canvas.replaceChildren(text("p", message, "refusal"));
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
