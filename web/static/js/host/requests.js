// A view's requests that are more than passed on to its app: its tool calls (and what the
// person did, for the chat's next turn), a link to open, a ui/message, its model context, and
// the file requests the host answers on the server (the view door).
import { hooks } from "./hooks.js";
import { rpcError } from "./refusal.js";

export async function callTool(view, params) {
  // The server checks the tool (its app, its visibility, the limits, approval).
  const args = params.arguments || {};
  const result = await view.forward("tools/call", { name: params.name, arguments: args });
  hooks.onAppEvent({ tool: `${view.appId}/${params.name}`, args, resultText: resultText(result) });
  return result;
}

function resultText(result) {
  if (!result) return "";
  return (result.content || [])
    .filter((c) => c && c.type === "text")
    .map((c) => c.text)
    .join("\n")
    .slice(0, 2000);
}

export async function openLink(params) {
  const url = String(params.url || "");
  if (!/^https?:\/\//i.test(url)) throw rpcError(-32602, "only http and https links can be opened");
  const yes = await hooks.confirm(`The app wants to open ${url}`, "Open link");
  if (yes) window.open(url, "_blank", "noopener,noreferrer");
  return yes ? {} : { isError: true };
}

// ui/message: the page reads it (its content, _meta["openai/message"]) and asks the person.
export async function message(view, params) {
  return hooks.onMessage(view.appId, params || {});
}

// The server checks and keeps the view's context (the chat's, or this view's when it is
// outside a chat) until the next turn takes it; the view is answered its update id, and is
// told its attached context as the host now holds it.
export async function updateModelContext(view, params) {
  if (view.restored) return {};  // what a restored view says is not the person's doing
  const result = await view.client.forward("ui/update-model-context", params);
  const meta = (result && result._meta && result._meta["openai/modelContext"]) || {};
  const content = Array.isArray(params.content) ? params.content : [];
  const structured = params.structuredContent;
  view.modelContext = content.length || structured !== undefined
    ? { updateId: meta.updateId, content, ...(structured !== undefined ? { structuredContent: structured } : {}) }
    : null;
  view.contextChanged();
  hooks.onModelContext(view);
  return result;
}

// A view's request the host answers itself, on the server (the view door): saves of its file,
// subscriptions to it (updates come on the view's notification stream), and opening another
// workspace file, which the page then shows in its viewer.
export async function hostRequest(view, method, params) {
  if (method === "resources/subscribe") {
    await view.client.listen((notice) => view.bridge && view.bridge.notification(notice));
  } else if (!["resources/unsubscribe", "openai/resources/write", "openai/files/open"].includes(method)) {
    throw rpcError(-32601, `Method not found: ${method}`);
  }
  const result = await view.forward(method, params);
  if (method === "openai/files/open") {
    const path = result && result._meta && result._meta["mcpapps/file"];
    if (path) setTimeout(() => hooks.onOpenFile(path), 0);  // after the view has its answer
    return {};
  }
  return result;
}
