// The views of a chat turn's calls of tools with a UI, opened as the call starts (or as soon as
// the model begins to write its arguments) rather than once it has answered: the view gets
// tool-input-partial while the arguments stream, tool-input once they are whole, then
// tool-result; or tool-cancelled when the call fails, the turn is cancelled, or the call is
// abandoned (the turn's stream ends without its result).
import { openView } from "./canvas.js";
import { state } from "./state.js";

const live = new Map();  // the turn's call id → { view, input, result }

function deferred() {
  let resolve;
  let reject;
  const promise = new Promise((yes, no) => { resolve = yes; reject = no; });
  promise.catch(() => {});  // told to the view as tool-cancelled
  return { promise, resolve, reject };
}

function open(event, sessionId) {
  const known = live.get(event.id);
  if (known) return known;
  const tool = state.tools.find((t) => t.publicName === event.name && t.uiResourceUri);
  if (!tool) return null;
  const entry = { input: deferred(), result: deferred() };
  entry.view = openView({
    appId: tool.app,
    toolName: tool.name,
    publicName: tool.publicName,
    args: {},
    resourceUri: tool.uiResourceUri,
    sessionId,
    toolCallId: event.id,
    input: entry.input.promise,
    pending: entry.result.promise,
  });
  live.set(event.id, entry);
  return entry;
}

// `tool-partial`: the arguments as far as the model has written them.
export function partial(event, sessionId) {
  const entry = open(event, sessionId);
  if (entry) entry.view.then((view) => view && view.partialInput(event.input));
}

// `tool`: the call starts with its whole arguments.
export function started(event, sessionId) {
  const entry = open(event, sessionId);
  if (entry) entry.input.resolve(event.input);
}

// `result`: true when the call's view was opened as it started (the result goes to it).
export function finished(event) {
  const entry = live.get(event.id);
  if (!entry) return false;
  live.delete(event.id);
  if (event.view && !event.isError) entry.result.resolve(event.view.result);
  else entry.result.reject(new Error(event.text || "the call failed"));
  return true;
}

// The turn is over: a call still without its result is cancelled, saying why.
export function ended(reason) {
  for (const entry of live.values()) {
    entry.input.reject(new Error(reason));
    entry.result.reject(new Error(reason));
  }
  live.clear();
}
