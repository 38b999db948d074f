// A saved session shown again: its latest page of turns when the page opens, the pages before
// on demand (a button above them, or scrolling to the top; a long session is megabytes), and
// the last view its chat opened, rebuilt with the result the chat saved, marked restored and
// inactive until the person presses Run (a reload never runs its tool again).
import * as api from "./api.js";
import { currentView, openView } from "./canvas.js";
import * as chatLog from "./chatlog.js";
import { $, el } from "./dom.js";
import { linked } from "./route.js";
import { sessionId, startedTurn } from "./session.js";

// How to ask for the turns before those shown ({before, limit}), null when none are.
let earlier = null;
let loadingEarlier = false;

async function readSaved(query) {
  const saved = await api.savedTurns(sessionId(), query);
  if (saved) earlier = saved.previous || null;
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
  const forSession = sessionId();
  try {
    const saved = await readSaved(`?before=${earlier.before}&limit=${earlier.limit}`);
    if (!saved || sessionId() !== forSession) return;
    const log = $("chat-log");
    const fromBottom = log.scrollHeight - log.scrollTop;
    const button = $("chat-earlier");
    const nodes = chatLog.savedNodes(saved.messages || []);
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

// A new session has no earlier turns.
export function forgetEarlier() {
  earlier = null;
}

// The session the page opened with is the one it restores, and only while the person has not
// begun a turn: a turn sent while the page was still starting shows its own messages and opens
// its own view, which a restored copy must not follow or replace.
const openedWith = sessionId();
const untouched = () => sessionId() === openedWith && !startedTurn();

export async function restoreChat() {
  if (!openedWith || !untouched()) return;
  const saved = await readSaved("");
  if (!saved || !untouched()) return;
  $("chat-log").append(...chatLog.savedNodes(saved.messages || []));
  earlierButton();
  chatLog.scrollToEnd();
  const views = await api.sessionViews(sessionId());
  const last = views[views.length - 1];
  if (last && !currentView() && !linked.open && untouched()) {
    const answer = (saved.messages || []).find((m) => m.role === "tool" && m.tool_call_id === last.toolCallId);
    const text = answer && typeof answer.content === "string" ? answer.content : "";
    openView({
      appId: last.appId,
      toolName: last.tool,
      publicName: last.publicName,
      args: last.arguments,
      resourceUri: last.resourceUri,
      sessionId: sessionId(),
      toolCallId: last.toolCallId,
      result: { content: text ? [{ type: "text", text }] : [], isError: Boolean(answer && answer.isError) },
      restored: true,
    });
  }
}
