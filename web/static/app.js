// The control page: the apps with their live state (from /admin/events), their tools, start /
// stop / restart, sign in and out (apps with auth = "oauth"), the stderr tail, the chat pane,
// and the app canvas (host.js).
"use strict";

(function () {
  const Host = window.McpHost;
  const McpAsking = window.McpAsking;
  const $ = (id) => document.getElementById(id);
  const params = new URLSearchParams(location.search);
  const apps = new Map();  // id → status, as /admin/apps and /admin/events say
  let tools = [];          // GET /admin/tools: one row per tool of every Running app
  const catalogUi = new Map();  // id → whether the app's catalog shows a UI (/admin/events)
  let selected = params.get("app");

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === undefined || value === null || value === false) continue;
      if (key === "class") node.className = value;
      else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value === true ? "" : value);
    }
    for (const child of children.flat()) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : String(child));
    }
    return node;
  }

  async function api(path, options) {
    const response = await fetch(path, { credentials: "same-origin", ...(options || {}) });
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

  // ---- theme ----------------------------------------------------------------------------------

  const dark = window.matchMedia("(prefers-color-scheme: dark)");
  function applyTheme() {
    document.documentElement.dataset.theme = dark.matches ? "dark" : "light";
    const view = Host.current();
    if (view) view.themeChanged();
  }
  Host.theme = () => (dark.matches ? "dark" : "light");
  dark.addEventListener("change", applyTheme);
  applyTheme();

  // ---- login ----------------------------------------------------------------------------------

  function showLogin() {
    $("main").hidden = true;
    $("login").hidden = false;
    $("live").textContent = "not logged in";
    $("login-open").value = params.get("open") || "";
    $("login-args").value = params.get("args") || "";
    $("login-app").value = params.get("app") || "";
    for (const id of ["login-open", "login-args", "login-app"]) $(id).disabled = !$(id).value;
  }

  // ---- apps -----------------------------------------------------------------------------------

  async function loadApps() {
    const body = await api("admin/apps");
    apps.clear();
    for (const status of body.apps) apps.set(status.id, status);
    renderApps();
  }

  // Every supervisor that shares the session store, and when it was last seen (GET
  // /admin/cluster); read again every 10 s.
  async function loadCluster() {
    const body = await api("admin/cluster");
    const now = Date.now() / 1000;
    $("replicas").replaceChildren(...body.replicas.map((r) => {
      const running = r.apps.filter((a) => a.state === "Running").length;
      const ago = Math.max(0, Math.round(now - r.lastSeen));
      const seen = r.silent ? `silent, last seen ${ago} s ago` : `seen ${ago} s ago`;
      return el("li", { class: r.silent ? "replica silent" : "replica", "data-id": r.id },
        `${r.id} — ${r.url} — ${running} app(s) running — ${seen}`);
    }));
  }

  let toolsTimer = null;
  function loadToolsSoon() {
    clearTimeout(toolsTimer);
    toolsTimer = setTimeout(() => loadTools().catch(() => {}), 150);
  }

  async function loadTools() {
    tools = (await api("admin/tools")).tools;
    renderApps();
  }

  // The selected app's tools: offered to the model, app-only (for its own view), or not
  // offered, with the reason the tool table gave.
  function split(appId) {
    const mine = tools.filter((t) => t.app === appId);
    return {
      modelVisible: mine.filter((t) => t.offered),
      appOnly: mine.filter((t) => !t.offered && !t.visibility.includes("model")),
      notOffered: mine.filter((t) => !t.offered && t.visibility.includes("model")),
    };
  }

  function hasUi(status) {
    return catalogUi.has(status.id) ? catalogUi.get(status.id) : status.hasUi;
  }

  function uiWarning(status) {
    if (!status.hasUi || status.state !== "Running" || catalogUi.get(status.id) !== false) return null;
    return `app '${status.id}' says hasUi in its manifest but serves no UI: no tool's `
      + "_meta.ui.resourceUri names a ui:// resource of type text/html;profile=mcp-app";
  }

  function control(id, command) {
    return async (event) => {
      event.stopPropagation();
      try {
        await api(`admin/apps/${encodeURIComponent(id)}/${command}`, { method: "POST" });
      } catch (error) {
        alert(`${command} ${id}: ${error.message}`);
      }
    };
  }

  // The app's authorization server's own page, in a tab of its own: once the person signs in
  // there, it sends the browser back to the server's callback, and the app starts (its state
  // arrives here through /admin/events). The page hands the server nothing of this one.
  function signIn(status) {
    return (event) => {
      event.stopPropagation();
      window.open(status.signInUrl, "_blank", "noopener");
    };
  }

  function renderApps() {
    const list = $("apps");
    list.replaceChildren(
      ...[...apps.values()].map((s) => {
        return el(
          "li",
          {
            "data-app-id": s.id,
            "data-state": s.state,
            class: s.id === selected ? "selected" : "",
            onclick: () => select(s.id),
          },
          el("div", { class: "app-head" },
            el("strong", {}, s.name || s.id),
            el("span", { class: `state state-${s.state}` }, s.state)),
          el("div", { class: "meta" },
            [
              s.id,
              s.pid ? `pid ${s.pid}` : null,
              `restarts ${s.restarts}`,
              s.protocolVersion ? `protocol ${s.protocolVersion}` : null,
              hasUi(s) ? "has a UI" : null,
            ].filter(Boolean).join(" · ")),
          s.lastError ? el("div", { class: "error" }, s.lastError) : null,
          s.previousError ? el("div", { class: "meta" }, `previous failure: ${s.previousError}`) : null,
          el("div", { class: "buttons" },
            s.state === "NeedsSignIn" && s.signInUrl
              ? el("button", { type: "button", class: "sign-in", "data-command": "sign-in", onclick: signIn(s) }, "Sign in")
              : null,
            el("button", { type: "button", "data-command": "start", onclick: control(s.id, "start") }, "Start"),
            el("button", { type: "button", "data-command": "stop", onclick: control(s.id, "stop") }, "Stop"),
            el("button", { type: "button", "data-command": "restart", onclick: control(s.id, "restart") }, "Restart"),
            s.auth === "oauth"
              ? el("button", { type: "button", "data-command": "logout", onclick: control(s.id, "logout") }, "Sign out")
              : null),
        );
      }),
    );
    renderDetail();
  }

  function select(id) {
    selected = id;
    linkWarning = null;
    const url = new URL(location.href);
    url.searchParams.set("app", id);
    history.replaceState(null, "", url);
    renderApps();
    loadStderr(id);
  }

  // With no `?app=`, or one that names no app, the page selects the app /apps/health calls
  // selected (the first Running app with a UI, else the first Running app), so that its tools
  // are listed from the start; the health's warning says when a link named no app. The link
  // stays as it is: "/" keeps meaning "whatever runs".
  let linkWarning = null;
  async function selectDefault() {
    const wanted = selected;
    if (wanted && apps.has(wanted)) return;
    const query = wanted ? `?app=${encodeURIComponent(wanted)}` : "";
    const response = await fetch(`apps/health${query}`, { credentials: "same-origin" });
    const body = await response.json().catch(() => ({}));
    if (selected !== wanted || !body.name || !apps.has(body.name)) return;
    selected = body.name;
    linkWarning = body.warning || null;
    renderApps();
    loadStderr(selected);
  }

  let stderr = { id: null, lines: [] };
  async function loadStderr(id) {
    try {
      const body = await api(`admin/apps/${encodeURIComponent(id)}`);
      stderr = { id, lines: body.stderr || [] };
      renderDetail();
    } catch (error) { /* shown by the list */ }
  }

  function toolItem(tool, options) {
    const open = options.open && tool.uiResourceUri
      ? el("button", {
          type: "button",
          class: "open-view",
          "data-tool": tool.name,
          onclick: () => Host.openView({ appId: tool.app, toolName: tool.name, publicName: tool.publicName, args: {} }),
        }, "Open view")
      : null;
    const name = options.open ? tool.publicName : tool.name;
    const why = options.reason ? el("span", { class: "error" }, tool.reason) : "";
    return el("li", { "data-tool": tool.name }, el("code", {}, name), " ", why, " ", open);
  }

  function toolList(id, items) {
    return el("ul", { id, class: "tools" }, items);
  }

  // An empty tail says so: an empty box would look like something failed to load.
  function stderrTail(id) {
    if (stderr.id !== id) return el("pre", { id: "stderr" }, "…");
    if (!stderr.lines.length) return el("pre", { id: "stderr", class: "none" }, "(no stderr lines yet)");
    return el("pre", { id: "stderr" }, stderr.lines.slice(-50).join("\n"));
  }

  function renderDetail() {
    const detail = $("detail");
    const status = apps.get(selected);
    if (!status) {
      detail.replaceChildren();
      return;
    }
    const groups = split(selected);
    const warning = uiWarning(status);
    detail.replaceChildren(
      linkWarning ? el("p", { class: "error", id: "link-warning" }, linkWarning) : "",
      el("h3", {}, `Tools of ${status.id}`),
      el("div", { class: "meta" }, "Model-visible"),
      toolList("tools-visible", groups.modelVisible.map((t) => toolItem(t, { open: true }))),
      el("div", { class: "meta" }, "App-only (for the app's own view)"),
      toolList("tools-app-only", groups.appOnly.map((t) => toolItem(t, {}))),
      el("div", { class: "meta" }, "Not offered to the model"),
      toolList("tools-not-offered", groups.notOffered.map((t) => toolItem(t, { reason: true }))),
      // replaceChildren() would show a null child as the text "null".
      warning ? el("p", { class: "error", id: "ui-warning" }, warning) : "",
      el("h3", {}, "stderr (last lines)"),
      stderrTail(status.id),
    );
  }

  // ---- live updates ---------------------------------------------------------------------------

  let lastSeq = 0;
  function connectEvents() {
    const url = new URL("admin/events", location.href);
    url.protocol = location.protocol === "https:" ? "wss:" : "ws:";
    const socket = new WebSocket(url);
    lastSeq = 0;
    socket.onopen = () => {
      $("live").textContent = "live";
      $("live").classList.add("live");
    };
    socket.onmessage = (event) => {
      const message = JSON.parse(event.data);
      lastSeq = message.seq;
      $("live").dataset.seq = String(lastSeq);
      if (message.type === "app") {
        const before = apps.get(message.app.id);
        apps.set(message.app.id, message.app);
        renderApps();
        if (message.app.id === selected && (!before || before.state !== message.app.state)) loadStderr(selected);
        if (!apps.has(selected) && message.app.state === "Running") selectDefault().catch(() => {});
      } else if (message.type === "catalog") {
        catalogUi.set(message.appId, message.hasUi);
        renderApps();
        loadToolsSoon();
      } else if (message.type === "toolTable") {
        loadToolsSoon();
      } else if (message.type === "reloaded") {
        loadApps().catch(() => {});  // apps may have come or gone
        loadToolsSoon();
      }
    };
    socket.onclose = () => {
      $("live").textContent = "reconnecting…";
      $("live").classList.remove("live");
      setTimeout(() => {
        loadApps().then(connectEvents, () => setTimeout(connectEvents, 2000));
      }, 1000);
    };
  }

  // ---- confirmations (ui/open-link, ui/message) -----------------------------------------------

  Host.confirm = (question, yesLabel) => new Promise((resolve) => {
    $("confirm-text").textContent = question;
    $("confirm-yes").textContent = yesLabel || "Allow";
    $("confirm").hidden = false;
    const done = (answer) => {
      $("confirm").hidden = true;
      $("confirm-yes").onclick = $("confirm-no").onclick = null;
      resolve(answer);
    };
    $("confirm-yes").onclick = () => done(true);
    $("confirm-no").onclick = () => done(false);
  });
  // A view's tool call that the app's approval policy holds for the person.
  Host.approve = ({ appId, tool, arguments: args }) => new Promise((resolve) => {
    $("approval-text").textContent =
      `The app '${appId}' wants to run its tool '${tool}' with ${JSON.stringify(args || {})}`;
    $("approval").hidden = false;
    const buttons = { "approval-once": "once", "approval-open": "while-open", "approval-deny": "deny" };
    const done = (answer) => {
      $("approval").hidden = true;
      for (const id of Object.keys(buttons)) $(id).onclick = null;
      resolve(answer);
    };
    for (const [id, answer] of Object.entries(buttons)) $(id).onclick = () => done(answer);
  });
  // An app's question asked during a view's call: a form in the chat pane, like a turn's.
  Host.ask = (request, answer) => {
    $("chat-log").append(McpAsking.question(request, answer, Host.confirm));
    $("chat-log").scrollTop = $("chat-log").scrollHeight;
  };
  Host.onTitle = (title) => { $("canvas-title").textContent = title; };
  $("canvas-close").addEventListener("click", () => {
    Host.closeView();
    $("canvas-title").textContent = "App view";
  });

  // ---- chat -----------------------------------------------------------------------------------

  const SESSION_KEY = "mcpapps.chat.session";
  let sessionId = params.get("session") || localStorage.getItem(SESSION_KEY);
  let appEvents = [];                 // what the person did in views, for the next turn
  const modelContext = new Map();     // app id → the latest ui/update-model-context
  let running = null;

  Host.onAppEvent = (event) => appEvents.push(event);
  Host.onModelContext = (appId, context) => modelContext.set(appId, context);
  Host.onMessage = (text) => sendChat(text);

  function chatLine(kind, content) {
    const node = el("div", { class: `msg ${kind}` }, content);
    $("chat-log").append(node);
    $("chat-log").scrollTop = $("chat-log").scrollHeight;
    return node;
  }

  function toolNode(name, input) {
    return el("details", { class: "tool" },
      el("summary", {}, `tool ${name}`),
      el("pre", {}, typeof input === "string" ? input : JSON.stringify(input, null, 2)));
  }

  function toolBlock(name, input) {
    const block = toolNode(name, input);
    $("chat-log").append(block);
    return block;
  }

  // A folded tool call says in its summary whether it worked, without opening it.
  function markOutcome(block, isError) {
    const summary = block.querySelector("summary");
    summary.append(el("span", { class: `outcome ${isError ? "error" : "ok"}` }, isError ? "error" : "ok"));
  }

  // A tool's result in its block, live or restored alike. A result saved before sessions kept
  // `isError` has none, and then no mark: its text cannot tell a failure for certain.
  function showResult(block, text, isError) {
    block.append(el("pre", { class: isError === true ? "error" : "" }, text));
    if (typeof isError === "boolean") markOutcome(block, isError);
  }

  // A saved session is read a page of turns at a time, its latest first (a long one is
  // megabytes): `earlier` is how to ask for the turns before those shown, null when none are.
  let earlier = null;
  let loadingEarlier = false;

  // Saved messages as the live turn showed them: each tool call a block named by its tool,
  // which its result fills (the call and its result are saved in the same turn, so on the
  // same page).
  function savedNodes(messages) {
    const calls = new Map();
    const nodes = [];
    for (const message of messages) {
      if (message.role === "user") nodes.push(el("div", { class: "msg user" }, message.content));
      else if (message.role === "assistant") {
        if (message.content) nodes.push(el("div", { class: "msg assistant" }, message.content));
        for (const call of message.tool_calls || []) {
          const fn = call.function || {};
          let input = fn.arguments || "{}";
          try { input = JSON.parse(input); } catch (error) { /* shown as it was saved */ }
          const block = toolNode(fn.name || "?", input);
          calls.set(call.id, block);
          nodes.push(block);
        }
      } else if (message.role === "tool") {
        let block = calls.get(message.tool_call_id);
        if (!block) nodes.push(block = toolNode("result", {}));
        showResult(block, message.content, message.isError);
      }
    }
    return nodes;
  }

  async function readSaved(query) {
    const response = await fetch(`apps/chat/${encodeURIComponent(sessionId)}${query}`, { credentials: "same-origin" });
    if (!response.ok) return null;
    const saved = await response.json();
    earlier = saved.previous || null;
    return saved;
  }

  function earlierButton() {
    let button = $("chat-earlier");
    if (!earlier) {
      if (button) button.remove();
      return;
    }
    if (!button) {
      button = el("button", { type: "button", id: "chat-earlier", onclick: () => loadEarlier() }, "Load earlier messages");
      $("chat-log").prepend(button);
    }
  }

  // The turns before those shown, put above them; what the person was reading stays in place.
  async function loadEarlier() {
    if (!earlier || loadingEarlier) return;
    loadingEarlier = true;
    const forSession = sessionId;
    try {
      const query = `?before=${earlier.before}&limit=${earlier.limit}`;
      const saved = await readSaved(query);
      if (!saved || sessionId !== forSession) return;
      const log = $("chat-log");
      const fromBottom = log.scrollHeight - log.scrollTop;
      const button = $("chat-earlier");
      const nodes = savedNodes(saved.messages || []);
      if (button) button.after(...nodes);
      else log.prepend(...nodes);
      earlierButton();
      log.scrollTop = log.scrollHeight - fromBottom;
    } finally {
      loadingEarlier = false;
    }
  }

  // Scrolled to the top: the earlier turns come as if the button had been pressed.
  $("chat-log").addEventListener("scroll", () => {
    if ($("chat-log").scrollTop < 8 && earlier) loadEarlier().catch(() => {});
  });

  async function restoreChat() {
    if (!sessionId) return;
    const saved = await readSaved("");
    if (!saved) return;
    $("chat-log").append(...savedNodes(saved.messages || []));
    earlierButton();
    $("chat-log").scrollTop = $("chat-log").scrollHeight;
    // The last view the chat opened is rebuilt with the result the chat saved, marked restored
    // and inactive until the person presses Run (its tool is not run again by a reload).
    const opened = await fetch(`apps/chat/${encodeURIComponent(sessionId)}/views`, { credentials: "same-origin" });
    const views = opened.ok ? (await opened.json()).views : [];
    const last = views[views.length - 1];
    if (last && !Host.current() && !params.get("open")) {
      const answer = (saved.messages || []).find((m) => m.role === "tool" && m.tool_call_id === last.toolCallId);
      const text = answer && typeof answer.content === "string" ? answer.content : "";
      Host.openView({
        appId: last.appId,
        toolName: last.tool,
        publicName: last.publicName,
        args: last.arguments,
        resourceUri: last.resourceUri,
        sessionId,
        toolCallId: last.toolCallId,
        result: { content: text ? [{ type: "text", text }] : [], isError: Boolean(answer && answer.isError) },
        restored: true,
      });
    }
  }

  function turnEvents() {
    const events = appEvents;
    appEvents = [];
    for (const [appId, context] of modelContext) {
      const text = (context.content || []).filter((c) => c.type === "text").map((c) => c.text).join("\n");
      const data = context.structuredContent ? JSON.stringify(context.structuredContent) : "";
      events.push({ tool: `${appId}/ui/update-model-context`, args: {}, resultText: [text, data].filter(Boolean).join("\n") });
    }
    modelContext.clear();
    return events;
  }

  async function sendChat(message) {
    if (running) await running;
    let finish;
    running = new Promise((resolve) => { finish = resolve; });
    $("chat-send").disabled = true;
    $("chat-cancel").disabled = false;
    chatLine("user", message);
    const calls = new Map();
    let assistant = null;
    try {
      const response = await fetch("apps/chat", {
        method: "POST",
        credentials: "same-origin",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ message, sessionId: sessionId || undefined, appEvents: turnEvents() }),
      });
      if (!response.ok) {
        const body = await response.json().catch(() => ({}));
        chatLine("error", (body.error && body.error.message) || `HTTP ${response.status}`);
        return;
      }
      for await (const frame of McpSse.frames(response)) {
        const event = JSON.parse(frame.data);
        switch (event.type) {
          case "session":
            sessionId = event.sessionId;
            localStorage.setItem(SESSION_KEY, sessionId);
            break;
          case "text":
            if (!assistant) assistant = chatLine("assistant", "");
            assistant.textContent += event.text;
            break;
          case "tool":
            calls.set(event.id, { name: event.name, input: event.input, block: toolBlock(event.name, event.input) });
            assistant = null;
            break;
          case "result": {
            const call = calls.get(event.id);
            const target = call ? call.block : toolBlock("result", {});
            showResult(target, event.text, Boolean(event.isError));
            if (event.view && !event.isError) {
              Host.openView({
                appId: event.view.appId,
                toolName: event.view.tool,
                publicName: call && call.name,
                args: call ? call.input : {},
                result: event.view.result,
                resourceUri: event.view.resourceUri,
                sessionId,
                toolCallId: event.id,
              });
            }
            break;
          }
          case "error":
            chatLine("error", event.message);
            break;
          case "elicitation":
            $("chat-log").append(McpAsking.question(event, (action, content) => answerQuestion(event.requestId, action, content), Host.confirm));
            $("chat-log").scrollTop = $("chat-log").scrollHeight;
            assistant = null;
            break;
          case "waiting":
            chatLine("waiting", `waiting for another supervisor (${event.replica}) to finish a turn of this chat`);
            break;
          case "sampling":
            chatLine("sampling", `${event.app} asked the model (${event.tool}, at most ${event.maxTokens} tokens): ${event.text}`);
            break;
          default:
            break;
        }
      }
    } catch (error) {
      chatLine("error", `the chat failed: ${error.message || error}`);
    } finally {
      $("chat-send").disabled = false;
      $("chat-cancel").disabled = true;
      running = null;
      finish();
    }
  }

  // The person's answer to an app's question: null when taken, else why not.
  async function answerQuestion(requestId, action, content) {
    try {
      const response = await fetch(`apps/chat/${encodeURIComponent(sessionId)}/answers`, {
        method: "POST",
        credentials: "same-origin",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ requestId, action, content }),
      });
      if (response.ok) return null;
      const body = await response.json().catch(() => ({}));
      return (body.error && body.error.message) || `HTTP ${response.status}`;
    } catch (error) {
      return `the answer was not sent: ${error.message || error}`;
    }
  }

  $("chat-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const message = $("chat-input").value.trim();
    if (!message) return;
    $("chat-input").value = "";
    sendChat(message);
  });
  $("chat-cancel").addEventListener("click", async () => {
    if (!sessionId) return;
    await fetch(`apps/chat/${encodeURIComponent(sessionId)}/cancel`, { method: "POST", credentials: "same-origin" });
  });
  $("chat-new").addEventListener("click", () => {
    sessionId = null;
    earlier = null;
    localStorage.removeItem(SESSION_KEY);
    $("chat-log").replaceChildren();
  });

  // ---- start ----------------------------------------------------------------------------------

  async function openFromUrl() {
    const name = params.get("open");
    if (!name) return;
    let args = {};
    try {
      args = params.get("args") ? JSON.parse(params.get("args")) : {};
      if (!args || typeof args !== "object" || Array.isArray(args)) throw new Error("not an object");
    } catch (error) {
      $("canvas").replaceChildren(el("p", { class: "refusal" }, `args must be a URL-encoded JSON object: ${error.message}`));
      return;
    }
    const body = await api("admin/tools");
    const tool = body.tools.find((t) => t.offered && t.publicName === name && t.uiResourceUri);
    if (tool) {
      Host.openView({ appId: tool.app, toolName: tool.name, publicName: name, args });
      return;
    }
    $("canvas").replaceChildren(el("p", { class: "refusal" }, `there is no tool '${name}' with a UI to open`));
  }

  (async () => {
    try {
      await loadApps();
    } catch (error) {
      if (!$("login").hidden) return;
      $("live").textContent = error.message;
      return;
    }
    $("main").hidden = false;
    connectEvents();
    await loadTools().catch(() => {});
    loadCluster().catch(() => {});
    setInterval(() => loadCluster().catch(() => {}), 10000);
    if (apps.has(selected)) loadStderr(selected);
    else await selectDefault().catch(() => {});
    await restoreChat().catch(() => {});
    await openFromUrl().catch((error) => {
      $("canvas").replaceChildren(el("p", { class: "refusal" }, error.message));
    });
  })();
})();
