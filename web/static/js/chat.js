// The chat pane's turns: a message sent (from the box, or a view's ui/message the person
// allowed), the turn's server-sent events shown as they come (text, tool calls and results, a
// view the result opens, an app's question as a form, errors), Cancel and New.
import * as api from "./api.js";
import { confirm } from "./approvals.js";
import { question } from "./asking.js";
import { openView } from "./canvas.js";
import * as chatLog from "./chatlog.js";
import * as liveViews from "./liveviews.js";
import { $ } from "./dom.js";
import { forgetEarlier } from "./history.js";
import { forgetSession, noteTurn, sessionId, setSession } from "./session.js";
import { frames } from "./sse.js";
import { takeNotes } from "./viewnotes.js";
import { hasMentions, takeMentions } from "./mentions.js";
import { hasAttached, takeAttached } from "./modelcontext.js";

let running = null;  // the turn under way, which the next one waits for

// The person's answer to an app's question: null when taken, else why not.
async function answer(requestId, action, content) {
  try {
    const response = await api.answerQuestion(sessionId(), { requestId, action, content });
    if (response.ok) return null;
    const body = await response.json().catch(() => ({}));
    return (body.error && body.error.message) || `HTTP ${response.status}`;
  } catch (error) {
    return `the answer was not sent: ${error.message || error}`;
  }
}

// An app's question asked during a view's call (not a turn's): a form in the chat too.
export function askInChat(request, answerIt) {
  chatLog.append(question(request, answerIt, confirm));
}

export function sendChat(message) {
  return runTurn(message, () => {
    const mentions = takeMentions();
    return api.startTurn({
      message,
      sessionId: sessionId() || undefined,
      appEvents: takeNotes(),
      mentions: mentions.length ? mentions : undefined,
      ...takeAttached(),  // the views' model context and a ui/message's attachments
    });
  });
}

// A new chat whose first turn is `start()` (onboarding's "Set up"); `label` is its user line.
export function startChat(label, start) {
  forgetSession();
  forgetEarlier();
  chatLog.clear();
  return runTurn(label, start);
}

// One turn: `start()` sends it and gives its Response; `label` is what the log shows of it.
async function runTurn(message, start) {
  noteTurn();
  if (running) await running;
  let finish;
  running = new Promise((resolve) => { finish = resolve; });
  $("chat-send").disabled = true;
  $("chat-cancel").disabled = false;
  chatLog.line("user", message);
  const calls = new Map();
  let assistant = null;
  let failure = null;  // the turn's error, which a call still under way ends with
  try {
    const response = await start();
    if (!response.ok) {
      const body = await response.json().catch(() => ({}));
      chatLog.line("error", (body.error && body.error.message) || `HTTP ${response.status}`);
      return;
    }
    for await (const frame of frames(response)) {
      const event = JSON.parse(frame.data);
      switch (event.type) {
        case "session":
          setSession(event.sessionId);
          break;
        case "text":
          if (!assistant) assistant = chatLog.line("assistant", "");
          assistant.textContent += event.text;
          break;
        case "tool-partial":
          liveViews.partial(event, sessionId());
          break;
        case "tool":
          calls.set(event.id, { name: event.name, input: event.input, block: chatLog.toolBlock(event.name, event.input) });
          assistant = null;
          liveViews.started(event, sessionId());
          break;
        case "result": {
          const call = calls.get(event.id);
          const target = call ? call.block : chatLog.toolBlock("result", {});
          chatLog.showResult(target, event.text, Boolean(event.isError));
          if (!liveViews.finished(event) && event.view && !event.isError) {
            openView({
              appId: event.view.appId,
              toolName: event.view.tool,
              publicName: call && call.name,
              args: call ? call.input : {},
              result: event.view.result,
              resourceUri: event.view.resourceUri,
              sessionId: sessionId(),
              toolCallId: event.id,
            });
          }
          break;
        }
        case "error":
          chatLog.line("error", event.message);
          failure = event.message;
          break;
        case "elicitation":
          askInChat(event, (action, content) => answer(event.requestId, action, content));
          assistant = null;
          break;
        case "waiting":
          chatLog.line("waiting", `waiting for another supervisor (${event.replica}) to finish a turn of this chat`);
          break;
        case "sampling":
          chatLog.line("sampling", `${event.app} asked the model (${event.tool}, at most ${event.maxTokens} tokens): ${event.text}`);
          break;
        default:
          break;
      }
    }
  } catch (error) {
    chatLog.line("error", `the chat failed: ${error.message || error}`);
    failure = `the chat failed: ${error.message || error}`;
  } finally {
    liveViews.ended(failure || "the call was abandoned: the chat turn ended without its result");
    $("chat-send").disabled = false;
    $("chat-cancel").disabled = true;
    running = null;
    finish();
  }
}

$("chat-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const message = $("chat-input").value.trim();
  if (!message && !hasMentions() && !hasAttached()) return;
  $("chat-input").value = "";
  sendChat(message);
});
$("chat-cancel").addEventListener("click", async () => {
  if (!sessionId()) return;
  await api.cancelTurn(sessionId());
});
export function newChat() {
  forgetSession();
  forgetEarlier();
  chatLog.clear();
}
$("chat-new").addEventListener("click", newChat);
