// The chat log: the lines of a conversation as the pane shows them, live or restored from a
// saved session alike. A tool call is a folded block named by its tool, which its result fills
// and marks ok or error.
import { $, el } from "./dom.js";

const log = () => $("chat-log");

export function scrollToEnd() {
  log().scrollTop = log().scrollHeight;
}

// A node at the end of the log (an app's question, a line), scrolled into view.
export function append(node) {
  log().append(node);
  scrollToEnd();
  return node;
}

export function line(kind, content) {
  return append(el("div", { class: `msg ${kind}` }, content));
}

function toolNode(name, input) {
  return el("details", { class: "tool" },
    el("summary", {}, `tool ${name}`),
    el("pre", {}, typeof input === "string" ? input : JSON.stringify(input, null, 2)));
}

export function toolBlock(name, input) {
  const block = toolNode(name, input);
  log().append(block);
  return block;
}

// A folded tool call says in its summary whether it worked, without opening it.
function markOutcome(block, isError) {
  const summary = block.querySelector("summary");
  summary.append(el("span", { class: `outcome ${isError ? "error" : "ok"}` }, isError ? "error" : "ok"));
}

// A tool's result in its block, live or restored alike. A result saved before sessions kept
// `isError` has none, and then no mark: its text cannot tell a failure for certain.
export function showResult(block, text, isError) {
  block.append(el("pre", { class: isError === true ? "error" : "" }, text));
  if (typeof isError === "boolean") markOutcome(block, isError);
}

// Saved messages as the live turn showed them: each tool call a block named by its tool,
// which its result fills (the call and its result are saved in the same turn, so on the
// same page).
export function savedNodes(messages) {
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

export function clear() {
  log().replaceChildren();
}
