// The MCP Apps view host of the control page: it renders an app's UI resource in the sandbox
// (an outer frame from the sandbox origin, which renders the HTML in an inner frame with an
// opaque origin) and speaks the view protocol with it through the official host library,
// AppBridge (`@modelcontextprotocol/ext-apps/app-bridge`, vendored as static/app-bridge.js by
// scripts/vendor-app-bridge.sh). What is written here is what AppBridge leaves to a host
// (docs/decisions.md): the view's own MCP requests (tools/call, resources/*) go to
// /apps/views/<viewId>/mcp, where the server holds each open view as a lease and checks its
// requests before they reach the app's one upstream session, the one the agent uses too; the
// person's confirmations; the display modes, host context and styles of this page.
"use strict";

(function () {
  const { AppBridge, PostMessageTransport } = window.McpAppBridge;
  const UI_MIME = "text/html;profile=mcp-app";
  const DEFAULT_MAX_UI_BYTES = 2 * 1024 * 1024;
  const TEARDOWN_WAIT_MS = 1000;
  const SANDBOX_ORIGIN = document.body.dataset.sandbox || "";
  const HOST_INFO = { name: "mcpapps", version: "0.1.0" };
  const DISPLAY_MODES = ["inline", "fullscreen", "pip"];
  const INLINE_MAX_HEIGHT = 4000;
  const DOWNLOAD_MAX_BYTES = 10 * 1024 * 1024;  // all the files of one ui/download-file
  const DOWNLOAD_MAX_FILES = 10;

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
        const frames = McpSse.frames(response)[Symbol.asyncIterator]();
        await frames.next();  // `ready`
        (async () => {
          for (;;) {
            const { value, done } = await frames.next();
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

  function rpcError(code, message, data) {
    const error = new Error(message);
    error.code = Number.isSafeInteger(code) ? code : -32603;
    if (data !== undefined) error.data = data;
    return error;
  }

  // ---- what may render ------------------------------------------------------------------------

  class Refusal extends Error {}

  function uiUri(tool) {
    const meta = (tool && tool._meta) || {};
    const ui = meta.ui || {};
    return ui.resourceUri || meta["ui/resourceUri"] || null;
  }

  function decodeBase64(blob) {
    return Uint8Array.from(atob(blob), (c) => c.charCodeAt(0));
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
    const limit = client.ui.maxUiBytes || DEFAULT_MAX_UI_BYTES;
    if (bytes.length > limit) {
      const most = limit === DEFAULT_MAX_UI_BYTES
        ? `2 MiB (${limit} bytes, the default)`
        : `${limit} bytes ([apps.entries.${client.appId}] max_ui_bytes)`;
      throw new Refusal(
        `'${uri}' is ${bytes.length} bytes: a view of app '${client.appId}' may be at most ${most},`
        + ` so it is not rendered. An operator can change that with [apps.entries.${client.appId}]`
        + " max_ui_bytes in config.toml",
      );
    }
    const html = new TextDecoder().decode(bytes);
    let ui = content._meta && content._meta.ui;
    if (!ui) {
      // The spec's fallback: the `_meta.ui` of the resource's resources/list entry.
      const listed = await client.request("resources/list", {});
      const entry = ((listed.result && listed.result.resources) || []).find((r) => r.uri === uri);
      ui = (entry && entry._meta && entry._meta.ui) || {};
    }
    const openai = (content._meta && content._meta["openai/ui"]) || {};
    return { html, csp: ui.csp || null, permissions: ui.permissions || null, ui, openai };
  }

  // ---- the page's theme as the spec's standard style variables --------------------------------
  // style.css defines them from the page's own colours, light and dark; they are read back as
  // computed, so a view gets what the page shows.

  const STYLE_VARIABLES = [
    "--color-background-primary", "--color-background-secondary", "--color-background-tertiary",
    "--color-background-inverse", "--color-background-ghost", "--color-background-info",
    "--color-background-danger", "--color-background-success", "--color-background-warning",
    "--color-background-disabled", "--color-text-primary", "--color-text-secondary",
    "--color-text-tertiary", "--color-text-inverse", "--color-text-ghost", "--color-text-info",
    "--color-text-danger", "--color-text-success", "--color-text-warning", "--color-text-disabled",
    "--color-border-primary", "--color-border-secondary", "--color-border-tertiary",
    "--color-border-inverse", "--color-border-ghost", "--color-border-info", "--color-border-danger",
    "--color-border-success", "--color-border-warning", "--color-border-disabled",
    "--color-ring-primary", "--color-ring-secondary", "--color-ring-inverse", "--color-ring-info",
    "--color-ring-danger", "--color-ring-success", "--color-ring-warning",
    "--font-sans", "--font-mono", "--font-weight-normal", "--font-weight-medium",
    "--font-weight-semibold", "--font-weight-bold", "--font-text-xs-size", "--font-text-sm-size",
    "--font-text-md-size", "--font-text-lg-size", "--font-heading-xs-size", "--font-heading-sm-size",
    "--font-heading-md-size", "--font-heading-lg-size", "--font-heading-xl-size",
    "--font-heading-2xl-size", "--font-heading-3xl-size", "--font-text-xs-line-height",
    "--font-text-sm-line-height", "--font-text-md-line-height", "--font-text-lg-line-height",
    "--font-heading-xs-line-height", "--font-heading-sm-line-height",
    "--font-heading-md-line-height", "--font-heading-lg-line-height",
    "--font-heading-xl-line-height", "--font-heading-2xl-line-height",
    "--font-heading-3xl-line-height", "--border-radius-xs", "--border-radius-sm",
    "--border-radius-md", "--border-radius-lg", "--border-radius-xl", "--border-radius-full",
    "--border-width-regular", "--shadow-hairline", "--shadow-sm", "--shadow-md", "--shadow-lg",
  ];

  function hostStyles() {
    const computed = getComputedStyle(document.documentElement);
    const variables = {};
    for (const name of STYLE_VARIABLES) {
      const value = computed.getPropertyValue(name).trim();
      if (value) variables[name] = value;
    }
    // The page loads no web font (system fonts only), so there is no @font-face to pass on.
    return { variables };
  }

  // ---- what a CSP violation in a view needs --------------------------------------------------

  // The [apps.entries.<id>] csp_allow value that allows what was blocked, or null when no
  // setting can (an undeclared network origin stays closed: the app must declare it).
  function allowanceFor(violation) {
    const blocked = String(violation.blockedURI || "");
    const directive = String(violation.directive || "");
    if (blocked === "eval" || blocked === "wasm-eval") return "unsafe-eval";
    const scheme = blocked.startsWith("blob") ? "blob" : blocked.startsWith("data") ? "data" : null;
    if (!scheme) return null;
    if (directive === "worker-src") return `${scheme}-workers`;
    if (directive.startsWith("script-src")) return `${scheme}-scripts`;
    return null;
  }

  function violationText(appId, violation) {
    const allow = allowanceFor(violation);
    const what = `${violation.directive || "the policy"} blocked ${violation.blockedURI || "something"}`;
    if (allow) {
      return `The view of app '${appId}' was blocked by its sandbox policy (${what}). An operator`
        + ` can allow it with [apps.entries.${appId}] csp_allow = ["${allow}"] in config.toml.`;
    }
    return `The view of app '${appId}' was blocked by its sandbox policy (${what}). No setting opens`
      + " a network origin the app did not declare: the app must list it in its resource's"
      + " _meta.ui.csp.";
  }

  // ---- one view -------------------------------------------------------------------------------

  class View {
    constructor(options) {
      Object.assign(this, options);  // client, appId, tool, publicName, args, result, resource
      this.initialized = false;
      this.sent = [];  // the notifications the host sent the initialized view, in order (tests)
      this.violations = [];  // what the sandbox reported as blocked by its CSP
      this.displayMode = "inline";
      this.onMessage = this.onMessage.bind(this);
    }

    // The display modes this view may be in: the host's, narrowed to what the resource declares.
    availableDisplayModes() {
      if (this.place) return ["inline"];  // a view in a place of its own (a chat's tab) stays there
      const declared = this.resource.ui.availableDisplayModes || this.resource.openai.availableDisplayModes;
      if (!Array.isArray(declared) || !declared.length) return DISPLAY_MODES.slice();
      const modes = DISPLAY_MODES.filter((mode) => declared.includes(mode));
      return modes.includes("inline") ? modes : ["inline", ...modes];
    }

    // May the view be put in `mode`? The host and the resource offer it, and the view said it
    // supports it (when it says anything: appCapabilities.availableDisplayModes).
    canDisplay(mode) {
      if (!this.availableDisplayModes().includes(mode)) return false;
      const app = this.bridge && this.bridge.getAppCapabilities();
      const own = app && app.availableDisplayModes;
      return !Array.isArray(own) || own.includes(mode) || mode === "inline";
    }

    hostContext() {
      const box = this.frame ? this.frame.getBoundingClientRect() : { width: 0, height: 0 };
      const width = Math.round(box.width) || 600;
      const containerDimensions = this.displayMode === "inline"
        ? { width, maxHeight: INLINE_MAX_HEIGHT }
        : { width, height: Math.round(box.height) || 400 };
      return {
        ...this.extraContext,  // what the page adds (an entry point's openai/deepLink)
        theme: Host.theme(),
        styles: hostStyles(),
        displayMode: this.displayMode,
        availableDisplayModes: this.availableDisplayModes(),
        containerDimensions,
        locale: navigator.language || "en",
        timeZone: Intl.DateTimeFormat().resolvedOptions().timeZone,
        platform: "web",
        userAgent: "mcpapps",
        deviceCapabilities: { hover: matchMedia("(hover: hover)").matches, touch: navigator.maxTouchPoints > 0 },
        toolInfo: this.toolCallId === undefined ? { tool: this.tool } : { id: this.toolCallId, tool: this.tool },
        "openai/modelContext": this.modelContext || null,
      };
    }

    // The page changes what it adds to the host context: the view is told what differs
    // (ui/notifications/host-context-changed), and is not reloaded.
    setContext(extra) {
      this.extraContext = { ...this.extraContext, ...extra };
      this.contextChanged();
    }

    // The host context changed (theme, size, display mode): AppBridge sends the view what
    // differs. Between the view's rendering and its `initialized` nothing is sent (the spec);
    // before its rendering the sandbox has no view to pass it to, and the bridge keeps the
    // context for the view's ui/initialize.
    contextChanged() {
      if (!this.bridge || (this.rendered && !this.initialized)) return;
      this.bridge.setHostContext(this.hostContext());
    }

    // The app's own sandbox origin when the server gives it one ([sandbox] app_origins), else
    // the shared one.
    sandboxOrigin() {
      return this.client.ui.sandboxOrigin || SANDBOX_ORIGIN;
    }

    mount(canvas) {
      const frame = document.createElement("iframe");
      frame.setAttribute("sandbox", "allow-scripts allow-same-origin");
      frame.setAttribute("title", `view of ${this.publicName || this.tool.name}`);
      const csp = encodeURIComponent(JSON.stringify(this.resource.csp || {}));
      frame.src = `${this.sandboxOrigin()}/sandbox?app=${encodeURIComponent(this.appId)}&csp=${csp}`;
      if (this.resource.ui.prefersBorder === false) frame.classList.add("borderless");
      this.frame = frame;
      // Before the bridge's own listener: the sandbox's own notifications (what CSP it applied,
      // what that CSP blocked) are the page's, not the view's.
      window.addEventListener("message", this.onMessage);
      canvas.replaceChildren(frame);
      // The mode the resource prefers to open in, when the host and the resource offer it.
      const preferred = this.openIn || this.resource.ui.preferredDisplayMode || this.resource.openai.preferredDisplayMode;
      if (preferred !== "inline" && this.availableDisplayModes().includes(preferred)) {
        this.displayMode = preferred;
        Host.onDisplayMode(preferred);
      }
      this.connect(frame);
      this.resized = new ResizeObserver(() => this.contextChanged());
      this.resized.observe(frame);
    }

    connect(frame) {
      const capabilities = {
        openLinks: {},
        downloadFile: {},
        serverTools: {},
        serverResources: {},
        logging: {},
        // The OpenAI model-context and message extensions (js/modelcontext.js, js/viewmessage.js).
        experimental: { "openai/modelContext": {}, "openai/message": {} },
        message: { text: {}, image: {}, resourceLink: {}, resource: {} },
        updateModelContext: { text: {}, image: {}, resourceLink: {}, resource: {}, structuredContent: {} },
        // Filled in with what the sandbox applied when it says (before the view starts).
        sandbox: { csp: {} },
      };
      // With a workspace, the host's file resources and opening local files (the OpenAI MCP
      // extensions), as the server says them (GET /apps/files).
      if (Host.hostExtensions) capabilities.experimental = Host.hostExtensions;
      this.capabilities = capabilities;
      const bridge = new AppBridge(null, HOST_INFO, capabilities, { hostContext: this.hostContext() });
      this.bridge = bridge;
      bridge.oninitialized = () => this.onInitialized();
      bridge.oncalltool = (params) => this.callTool(params);
      bridge.onlistresources = (params) => this.forward("resources/list", params);
      bridge.onlistresourcetemplates = (params) => this.forward("resources/templates/list", params);
      bridge.onreadresource = (params) => this.forward("resources/read", params);
      bridge.onopenlink = (params) => this.openLink(params);
      bridge.ondownloadfile = (params) => this.downloadFile(params);
      // AppBridge's schema keeps only role and content of a ui/message's params; its `_meta`
      // (the OpenAI message options) is read from the request as the view sent it.
      bridge.onmessage = (params, extra) => this.message({
        ...params, _meta: extra && extra.mcpReq ? extra.mcpReq._meta : undefined,
      });
      bridge.onupdatemodelcontext = (params) => this.updateModelContext(params);
      bridge.onrequestdisplaymode = async (params) => ({ mode: this.setDisplayMode(params.mode) });
      bridge.onsizechange = (params) => this.sizeChanged(params);
      bridge.onrequestteardown = () => { if (this.place) this.place.close(); else Host.closeView(); };
      bridge.onloggingmessage = (params) => console.info(`app ${this.appId}:`, params.data);
      // What AppBridge has no handler of its own for: the file requests the host answers
      // (saves, subscriptions, opening a file), each through the view door.
      bridge.fallbackRequestHandler = (request) => this.hostRequest(request.method, request.params || {});
      // Messages go to the sandbox page at its own origin only (AppBridge's transport would
      // post them to any origin the frame might have been navigated to).
      const target = { postMessage: (message) => this.post(message) };
      bridge.connect(new PostMessageTransport(target, frame.contentWindow)).catch((error) => {
        console.error(`view of app ${this.appId}: ${error.message || error}`);
      });
    }

    post(message) {
      if (!this.frame || !this.frame.contentWindow) return;
      if (this.initialized && message.method && message.id === undefined && this.sent.length < 200) {
        this.sent.push(message.method);
      }
      this.frame.contentWindow.postMessage(message, this.sandboxOrigin());
    }

    onMessage(event) {
      if (!this.frame || event.source !== this.frame.contentWindow || event.origin !== this.sandboxOrigin()) return;
      const m = event.data;
      if (!m || m.jsonrpc !== "2.0" || typeof m.method !== "string") return;
      if (m.method === "ui/notifications/sandbox-proxy-ready") {
        if (this.rendered) return;  // one view per proxy page: a reloaded page gets nothing
        // The sandbox says what its CSP applied, which is what the view is told it has.
        const applied = (m.params && m.params.applied) || {};
        this.capabilities.sandbox.csp = applied.csp || {};
        this.applied = applied;
        this.contextChanged();
        this.rendered = true;
        this.bridge.sendSandboxResourceReady({
          html: this.resource.html,
          csp: this.resource.csp || undefined,
          permissions: this.resource.permissions || undefined,
        });
      } else if (m.method === "ui/notifications/sandbox-csp-violation") {
        this.cspViolation(m.params || {});
      }
    }

    cspViolation(violation) {
      this.violations.push(violation);
      if (this.violations.length > 1 || !this.frame) return;  // one notice per view is enough
      const notice = text("p", violationText(this.appId, violation), "csp-notice");
      this.frame.before(notice);
    }

    onInitialized() {
      if (this.initialized) return;
      this.initialized = true;
      this.contextChanged();
      // A view opened as the chat's call starts: the arguments so far, then the whole
      // (`input`), then the result, or tool-cancelled when the call fails, the turn is
      // cancelled or the call is abandoned.
      if (this.partial && !this.inputSent) this.bridge.sendToolInputPartial({ arguments: this.partial });
      window.McpViewTools.offer(this);  // the tools it registers, for its chat's model
      const input = this.input || Promise.resolve(this.args || {});
      input.then((args) => {
        this.inputSent = true;
        if (this.bridge) this.bridge.sendToolInput({ arguments: args || {} });
        return this.result;
      }).then(
        (result) => this.bridge && this.bridge.sendToolResult(result),
        (error) => this.bridge && this.bridge.sendToolCancelled({ reason: String(error.message || error) }),
      );
    }

    // The call's arguments as far as the model has written them (before `input` is whole).
    partialInput(args) {
      if (this.inputSent) return;
      this.partial = args;
      if (this.initialized && this.bridge) this.bridge.sendToolInputPartial({ arguments: args });
    }

    // A view's own request to its app. One restored from a saved chat is refused by the
    // server (its lease is restored) until the person runs it again (a fresh view).
    async forward(method, params) {
      return this.client.forward(method, params);
    }

    // A view's request the host answers itself, on the server (the view door): saves of its
    // file, subscriptions to it (updates come on the view's notification stream), and opening
    // another workspace file, which the page then shows in its viewer.
    async hostRequest(method, params) {
      if (method === "resources/subscribe") {
        await this.client.listen((notice) => this.bridge && this.bridge.notification(notice));
      } else if (!["resources/unsubscribe", "openai/resources/write", "openai/files/open"].includes(method)) {
        throw rpcError(-32601, `Method not found: ${method}`);
      }
      const result = await this.forward(method, params);
      if (method === "openai/files/open") {
        const path = result && result._meta && result._meta["mcpapps/file"];
        if (path) setTimeout(() => Host.onOpenFile(path), 0);  // after the view has its answer
        return {};
      }
      return result;
    }

    async callTool(params) {
      // The server checks the tool (its app, its visibility, the limits, approval).
      const args = params.arguments || {};
      const result = await this.forward("tools/call", { name: params.name, arguments: args });
      Host.onAppEvent({ tool: `${this.appId}/${params.name}`, args, resultText: resultText(result) });
      return result;
    }

    async openLink(params) {
      const url = String(params.url || "");
      if (!/^https?:\/\//i.test(url)) throw rpcError(-32602, "only http and https links can be opened");
      const yes = await Host.confirm(`The app wants to open ${url}`, "Open link");
      if (yes) window.open(url, "_blank", "noopener,noreferrer");
      return yes ? {} : { isError: true };
    }

    // ui/download-file: the files (embedded, or links to the app's own resources, read through
    // the view door) are gathered, bounded, shown to the person, and saved by this page only
    // if they allow it.
    async downloadFile(params) {
      const contents = Array.isArray(params.contents) ? params.contents : [];
      if (!contents.length || contents.length > DOWNLOAD_MAX_FILES) {
        throw rpcError(-32602, `a download is 1 to ${DOWNLOAD_MAX_FILES} files`);
      }
      const files = [];
      let total = 0;
      for (const item of contents) {
        let resource = item && item.type === "resource" ? item.resource : null;
        if (item && item.type === "resource_link") {
          const read = await this.forward("resources/read", { uri: item.uri });
          resource = ((read && read.contents) || []).find((c) => c.uri === item.uri) || null;
        }
        if (!resource || typeof resource.uri !== "string") throw rpcError(-32602, "a download names a resource it does not give");
        const bytes = typeof resource.text === "string" ? new TextEncoder().encode(resource.text)
          : typeof resource.blob === "string" ? decodeBase64(resource.blob) : null;
        if (!bytes) throw rpcError(-32602, `'${resource.uri}' has no text or blob to download`);
        total += bytes.length;
        if (total > DOWNLOAD_MAX_BYTES) {
          throw rpcError(-32602, `a download may be at most ${DOWNLOAD_MAX_BYTES} bytes`);
        }
        files.push({ name: fileName(resource.uri), type: resource.mimeType || "application/octet-stream", bytes });
      }
      const list = files.map((f) => `${f.name} (${f.bytes.length} bytes)`).join(", ");
      const yes = await Host.confirm(`The app wants to save ${files.length === 1 ? "a file" : "files"}: ${list}`, "Save");
      if (!yes) return { isError: true };
      for (const file of files) {
        const url = URL.createObjectURL(new Blob([file.bytes], { type: file.type }));
        const link = document.createElement("a");
        link.href = url;
        link.download = file.name;
        link.rel = "noopener";
        document.body.append(link);
        link.click();
        link.remove();
        setTimeout(() => URL.revokeObjectURL(url), 60 * 1000);
      }
      return {};
    }

    // ui/message: the page reads it (its content, _meta["openai/message"]) and asks the person.
    async message(params) {
      return Host.onMessage(this.appId, params || {});
    }

    // The server checks and keeps the view's context (the chat's, or this view's when it is
    // outside a chat) until the next turn takes it; the view is answered its update id, and
    // is told its attached context as the host now holds it.
    async updateModelContext(params) {
      if (this.restored) return {};  // what a restored view says is not the person's doing
      const result = await this.client.forward("ui/update-model-context", params);
      const meta = (result && result._meta && result._meta["openai/modelContext"]) || {};
      const content = Array.isArray(params.content) ? params.content : [];
      const structured = params.structuredContent;
      this.modelContext = content.length || structured !== undefined
        ? { updateId: meta.updateId, content, ...(structured !== undefined ? { structuredContent: structured } : {}) }
        : null;
      this.contextChanged();
      Host.onModelContext(this);
      return result;
    }

    // The person removed what the view attached (a chip), or a turn took it.
    contextRemoved(updateIds) {
      if (!this.modelContext || !updateIds.includes(this.modelContext.updateId)) return;
      this.modelContext = null;
      this.contextChanged();
    }

    sizeChanged(params) {
      if (this.displayMode !== "inline" || !this.frame) return;
      const height = Number(params.height);
      if (Number.isFinite(height) && height > 0) {
        this.frame.style.height = `${Math.min(Math.max(Math.ceil(height), 80), INLINE_MAX_HEIGHT)}px`;
      }
    }

    // Put the view in `mode` when it may be; the mode it is in afterwards.
    setDisplayMode(mode) {
      if (!DISPLAY_MODES.includes(mode) || !this.canDisplay(mode) || mode === this.displayMode) {
        return this.displayMode;
      }
      this.displayMode = mode;
      Host.onDisplayMode(mode);
      this.contextChanged();
      return mode;
    }

    themeChanged() {
      this.contextChanged();
    }

    // Ask the view to tear down, wait a bounded time for its answer, then remove it.
    async unmount() {
      const bridge = this.bridge;
      if (bridge && this.initialized) {
        await Promise.race([
          bridge.teardownResource({}).catch(() => {}),
          new Promise((resolve) => setTimeout(resolve, TEARDOWN_WAIT_MS)),
        ]);
      }
      this.bridge = null;
      if (bridge) await bridge.close().catch(() => {});
      if (this.resized) this.resized.disconnect();
      window.removeEventListener("message", this.onMessage);
      if (this.displayMode !== "inline") Host.onDisplayMode("inline");
      if (this.frame) this.frame.remove();
      this.frame = null;
      await this.client.close();
      // A view outside a chat takes what it attached with it: the composer reads again.
      if (this.modelContext && !this.client.sessionId) Host.onModelContext(this);
    }
  }

  // A plain file name from a resource URI: its last segment, without anything a file system or
  // the person could misread.
  function fileName(uri) {
    let last = String(uri).split(/[?#]/)[0].split("/").filter(Boolean).pop() || "download";
    try { last = decodeURIComponent(last); } catch (error) { /* keep it as it is */ }
    const clean = last.replace(/[^\w.\- ]+/g, "_").replace(/^\.+/, "").slice(0, 100);
    return clean || "download";
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
    confirm: async (question) => window.confirm(question),
    // What the person says to a view's tool call that needs approval: "once", "while-open"
    // or "deny".
    approve: async () => "deny",
    // Show an app's question ({requestId, app, tool, message, requestedSchema | url}) asked
    // during a view's call; `answer(action, content)` sends it (null, or why it was not taken).
    ask: () => {},
    // A view's ui/message (appId, params) → its result; a view's context changed (the view).
    onMessage: async () => ({ isError: true }),
    onModelContext: () => {},
    onAppEvent: () => {},
    onTitle: () => {},
    // A view asked to open a workspace file (openai/files/open, checked by the server): the
    // page opens it in its viewer.
    onOpenFile: () => {},
    // What `ui/initialize` adds to hostCapabilities.experimental (null: no workspace).
    hostExtensions: null,
    theme: () => "light",
    current: () => current,
    // The attached contexts with these update ids are gone: the view that sent one is told.
    contextRemoved: (updateIds) => { if (current) current.contextRemoved(updateIds); },
    uiUri,

    // The canvas pane shows the view in `mode` (its class), with a control to leave it.
    onDisplayMode(mode) {
      const pane = document.getElementById("canvas-pane");
      if (!pane) return;
      for (const each of DISPLAY_MODES) pane.classList.toggle(`display-${each}`, each === mode);
      let exit = document.getElementById("canvas-inline");
      if (!exit) {
        exit = document.createElement("button");
        exit.type = "button";
        exit.id = "canvas-inline";
        exit.textContent = "Exit full screen";
        exit.title = "back to the page (Escape)";
        exit.addEventListener("click", () => current && current.setDisplayMode("inline"));
        const close = document.getElementById("canvas-close");
        close.before(exit);
      }
      exit.hidden = mode === "inline";
      exit.textContent = mode === "pip" ? "Back to the page" : "Exit full screen";
    },

    // Open the view of `toolName` of `appId`. With `result` (a result the chat already has)
    // the tool is not called again; without, it is called with `args`.
    // `restored`: the view is rebuilt from a saved chat with its saved `result`; it is marked
    // so and inactive until the person presses Run, which opens it afresh (a new call).
    // `hostContext`: what the page adds to the view's host context; `displayMode`: the mode it
    // opens in (an entry point's fullscreen); `place` ({element, close}): a place of the page's
    // own for the view (a chat's tab), where it stays inline, beside the canvas's view.
    async openView(options) {
      let { appId, toolName, publicName, args } = options;
      const { result, resourceUri, sessionId, toolCallId, restored, file } = options;
      // `pending` and `input`: promises of the result and of the whole arguments of a chat's
      // call still under way (the view opens as it starts).
      const { pending: later, input } = options;
      const place = options.place || null;
      if (!place) await Host.closeView();
      const canvas = place ? place.element : document.getElementById("canvas");
      canvas.replaceChildren(text("p", "Opening…", "empty"));
      if (!place) Host.onTitle(file ? file.path : publicName || `${appId}/${toolName}`);
      try {
        if (!SANDBOX_ORIGIN) throw new Refusal("the app sandbox is off ([sandbox] enabled = false): views are not rendered");
        let client;
        if (file) {
          // A workspace file (`file`: {path, tool?}): the server picks or checks the viewer
          // and says the viewer tool's arguments, the file's name and opaque URI.
          client = await ViewClient.openFile(file.path, file.tool, sessionId);
          ({ toolName, publicName, arguments: args } = client.toolCall);
          appId = client.appId;
          Host.onTitle(`${file.path} — ${publicName}`);
        } else {
          client = await ViewClient.open(appId, sessionId, {
            toolName, publicName, resourceUri, arguments: args || {}, toolCallId,
          }, result === undefined && !later && !restored, Boolean(restored));
        }
        opening = client;
        const listed = await client.request("tools/list", {});
        if (listed.error) throw new Refusal(`app '${appId}': ${listed.error.message}`);
        let tool = ((listed.result && listed.result.tools) || []).find((t) => t.name === toolName);
        // A tool for the model only is not listed to views, but its view still opens (with the
        // chat's result, or with the opening call the server lets through once); the view gets
        // what the page knows of the tool.
        if (!tool && resourceUri) {
          tool = { name: toolName, inputSchema: { type: "object" }, _meta: { ui: { resourceUri, visibility: ["model"] } } };
        }
        if (!tool) throw new Refusal(`app '${appId}' has no tool '${toolName}'`);
        const uri = resourceUri || uiUri(tool);
        if (!uri) throw new Refusal(`tool '${toolName}' of app '${appId}' has no UI`);
        const resource = await loadResource(client, uri);
        const pending = later || (result !== undefined
          ? Promise.resolve(result)
          : client.forward("tools/call", { name: toolName, arguments: args || {} }));
        pending.catch(() => {});  // reported to the view as tool-cancelled
        const view = new View({
          client, appId, tool, publicName, args: args || {}, result: pending, resource, toolCallId,
          restored: Boolean(restored), modelContext: client.attached, input,
        });
        Object.assign(view, { place, extraContext: options.hostContext || {}, openIn: options.displayMode });
        if (!place) current = view;
        opening = null;
        view.mount(canvas);
        if (restored) {
          const run = text("button", "Run");
          run.type = "button";
          run.id = "canvas-run";
          run.addEventListener("click", () => Host.openView({ ...options, result: undefined, restored: false }));
          const note = text("p", "Restored from the saved chat: it shows what it showed, and cannot"
            + " use its app until you run it again. ", "restored");
          note.append(run);
          canvas.prepend(note);
        }
        if (!place) document.getElementById("canvas-close").hidden = false;
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

  // Escape leaves full screen (and picture-in-picture) when the page has the keyboard; the
  // visible control does it from anywhere.
  document.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && current && current.displayMode !== "inline") {
      current.setDisplayMode("inline");
    }
  });

  function text(tag, content, className) {
    const node = document.createElement(tag);
    node.textContent = content;
    if (className) node.className = className;
    return node;
  }

  window.McpHost = Host;
})();
