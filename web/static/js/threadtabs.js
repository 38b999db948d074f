// Thread entry points as tabs beside the chat's conversation: "Conversation" and one tab per
// thread entry point of the Running apps. Each chat session has its own instance of each: its
// own view (its own lease, opened with {} and carrying the session, so what it leaves for the
// model goes to that chat's next turn), opened the first time its tab is chosen in that
// session. Switching sessions switches instances: the other session's stay as they are, hidden,
// until the page goes (or the oldest is closed, past a handful).
//
// Link: `/?session=<id>&tab=<public tool name>` opens the tab in that chat.
import { openView } from "./canvas.js";
import { $, el } from "./dom.js";
import { entryIcon, entryPoints, onEntryPoints } from "./entrypoints.js";
import * as plugins from "./pluginapi.js";
import { onSession, sessionId, setSession } from "./session.js";

const KEPT = 8;  // instances kept open at once, over every session
const instances = new Map();  // `${session} ${publicName}` → {element, session, publicName, view}
let selected = null;  // the public name of the tab shown; null: the conversation

const key = (session, name) => `${session} ${name}`;
const threads = () => entryPoints().filter((e) => e.type === "thread");

function remember() {
  const url = new URL(location.href);
  if (selected) url.searchParams.set("tab", selected);
  else url.searchParams.delete("tab");
  history.replaceState(history.state, "", url);
}

function tab(name, title, entry) {
  return el("button", {
    type: "button",
    role: "tab",
    class: "chat-tab",
    "data-tab": name || "",
    "aria-selected": String(selected === name),
    title: entry ? `${entry.title} (app ${entry.app}), for this chat` : "the chat's messages",
    onclick: () => choose(name),
  }, entry ? entryIcon(entry) : null, title);
}

function draw() {
  const bar = $("chat-tabs");
  const listed = threads();
  if (selected && !listed.some((e) => e.publicName === selected)) selected = null;  // gone
  bar.hidden = listed.length === 0;
  bar.replaceChildren(tab(null, "Conversation", null), ...listed.map((e) => tab(e.publicName, e.title, e)));
  show();
}

// The conversation, or the chosen tab's instance of the session shown.
function show() {
  const session = sessionId();
  $("chat-log").hidden = selected !== null;
  for (const instance of instances.values()) {
    instance.element.hidden = !(instance.session === session && instance.publicName === selected);
  }
  for (const button of $("chat-tabs").querySelectorAll(".chat-tab")) {
    button.setAttribute("aria-selected", String((button.dataset.tab || null) === selected));
  }
}

export async function choose(name) {
  selected = name;
  remember();
  show();
  const instance = name && instances.get(key(sessionId(), name));
  if (instance && instance.failed) await close(instance);  // refused before: asked again
  if (name && !instances.has(key(sessionId(), name))) await open(name);
}

async function open(name) {
  // Without a chat yet, one of its own for the instance: the next message goes on in it.
  const fresh = !sessionId();
  const session = fresh ? `apps-${crypto.randomUUID()}` : sessionId();
  const element = el("div", { class: "tab-view", "data-tab-view": name, "data-session": session });
  $("chat-tab-views").append(element);
  const instance = { element, session, publicName: name, view: null };
  instances.set(key(session, name), instance);
  if (fresh) setSession(session);
  show();
  dropOldest();
  try {
    const opened = await plugins.openEntryPoint(name, { type: "thread", sessionId: session });
    instance.view = await openView({
      appId: opened.app,
      toolName: opened.tool,
      publicName: opened.publicName,
      args: {},
      result: opened.result,
      resourceUri: opened.resourceUri,
      sessionId: session,
      place: { element, close: () => close(instance) },
    });
    instance.failed = !instance.view;  // the host says why in the tab
    // Closed while it opened (the oldest of too many): its lease ends now.
    if (instance.view && instances.get(key(session, name)) !== instance) await instance.view.unmount();
  } catch (error) {
    instance.failed = true;
    element.replaceChildren(el("p", { class: "refusal" }, `'${name}' was not opened: ${error.message}`));
  }
}

// The instance's view closed (the app asked to be torn down): its tab shows the conversation.
async function close(instance) {
  instances.delete(key(instance.session, instance.publicName));
  instance.element.remove();
  if (instance.view) await instance.view.unmount();
  if (!instance.failed && instance.session === sessionId() && selected === instance.publicName) choose(null);
}

function dropOldest() {
  while (instances.size > KEPT) {
    const [oldest] = instances.values();
    close(oldest);
  }
}

onEntryPoints(draw);
onSession((session) => {
  if (!session) selected = null;  // a new chat starts on its conversation
  remember();
  show();
  if (selected && session && !instances.has(key(session, selected))) open(selected);
});

// The page's own link (`?tab=`), once the entry points are read.
export async function openLinkedTab() {
  const name = new URLSearchParams(location.search).get("tab");
  if (!name) return;
  if (!threads().some((e) => e.publicName === name)) {
    $("chat-log").prepend(el("p", { class: "refusal", id: "tab-refusal" }, `there is no thread entry point '${name}' among the Running apps`));
    return;
  }
  await choose(name);
}
