// What the views attached to the chat, as chips in the composer (the OpenAI model-context
// extension). The server holds each view's latest `ui/update-model-context` (a chat's outlives
// a reload of the page; a view's outside a chat goes with the view) until the next turn takes
// it, so the chips are read from it (GET /apps/model-context); removing one asks the server
// to drop it (DELETE /apps/model-context/<updateId>) and the view is told
// (`host-context-changed` with `"openai/modelContext": null`). Blocks meant for the model
// alone (`annotations.audience: ["assistant"]`) have no chip but go with the turn all the same.
// A view's `ui/message` may leave attachments in the composer too (js/viewmessage.js): those
// are the page's draft, like the text typed, and go with the turn as `attachments`.
import { contextRemoved, currentView } from "./canvas.js";
import { $, el } from "./dom.js";
import { sessionId } from "./session.js";

const SAME_ORIGIN = { credentials: "same-origin" };
let attached = [];  // the server's chips: {updateId, appId, sessionId, viewId, content, hidden, ...}
const drafts = [];  // a ui/message's attachments left in the composer: {app, content}
let reading = 0;  // the latest read asked for: an older answer is not drawn over it

// The views outside a chat whose context the composer shows: the one in the canvas.
function outsideViews() {
  const view = currentView();
  return view && !view.client.sessionId ? [view.client.viewId] : [];
}

export async function refreshContext() {
  const query = new URLSearchParams();
  if (sessionId()) query.set("sessionId", sessionId());
  for (const id of outsideViews()) query.append("viewId", id);
  const asked = ++reading;
  const response = await fetch(`apps/model-context?${query}`, SAME_ORIGIN);
  if (!response.ok || asked !== reading) return;
  attached = (await response.json()).contexts || [];
  draw();
}

async function remove(chip) {
  const response = await fetch(`apps/model-context/${encodeURIComponent(chip.updateId)}`, {
    method: "DELETE", ...SAME_ORIGIN,
  });
  // 404: a turn took it or its view replaced it meanwhile; either way it is not attached.
  if (response.ok || response.status === 404) contextRemoved([chip.updateId]);
  await refreshContext();
}

// A ui/message's attachments (checked blocks), left in the composer for the person.
export function addDraft(app, content) {
  if (content.length) drafts.push({ app, content });
  draw();
}

// Something the person sees attached (a chip), which may be sent without a word.
export const hasAttached = () => drafts.length > 0 || attached.some((chip) => chip.content.length);

// What the next turn carries: the update ids of the contexts shown (the server takes the
// chat's own views' contexts anyway; those of views outside a chat only when named), and the
// drafts' attachments. The chips go: the turn takes them, and the views are told their
// context is no longer attached.
export function takeAttached() {
  const ids = attached.map((chip) => chip.updateId);
  const attachments = drafts.splice(0);
  attached = [];
  draw();
  if (ids.length) contextRemoved(ids);
  return {
    modelContext: ids.length ? ids : undefined,
    attachments: attachments.length ? attachments : undefined,
  };
}

// What a chip says of a block: its title, else its text, name or URI, cut.
function label(block) {
  const meta = block._meta || {};
  const said = meta["openai/title"] || block.text || block.title || block.name || block.uri
    || (block.resource && block.resource.uri) || block.type;
  const text = String(said).replace(/\s+/g, " ").trim();
  return text.length > 40 ? `${text.slice(0, 39)}…` : text;
}

// An image the page may show: a data: image only (the page loads nothing from an app's own
// origins: an https thumbnail is shown as a marker with its address as the tooltip).
function picture(block) {
  const thumbnail = block._meta && block._meta["openai/thumbnail"];
  if (block.type === "image") {
    return el("img", { class: "chip-thumb", src: `data:${block.mimeType};base64,${block.data}`, alt: label(block) });
  }
  if (!thumbnail) return null;
  if (/^data:image\//i.test(thumbnail.src)) return el("img", { class: "chip-thumb", src: thumbnail.src, alt: "" });
  return el("span", { class: "chip-thumb", title: thumbnail.src }, "🖼");
}

function chip(blocks, app, kind, onRemove, data) {
  const first = blocks[0];
  const more = blocks.length > 1 ? ` +${blocks.length - 1}` : "";
  return el("span", { class: `chip chip-context chip-${kind}`, title: `from ${app}`, ...data },
    picture(first), `${label(first)}${more}`,
    el("button", {
      type: "button", class: "chip-remove", "aria-label": `remove what ${app} attached`, onclick: onRemove,
    }, "×"));
}

function draw() {
  const shown = attached.filter((c) => c.content.length).map((c) =>
    chip(c.content, c.appId, "context", () => remove(c), { "data-update-id": c.updateId }));
  const drafted = drafts.map((d) => chip(d.content, d.app, "draft", () => {
    drafts.splice(drafts.indexOf(d), 1);
    draw();
  }, {}));
  $("chat-context").replaceChildren(...shown, ...drafted);
}

// A new chat has its own context: the chips are read again.
export function watchContext() {
  $("chat-new").addEventListener("click", () => {
    drafts.splice(0);
    refreshContext().catch(() => {});
  });
}
