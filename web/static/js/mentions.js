// @-mentions in the chat composer (the openai/mentions extension). Typing "@" and a word asks
// every app that offers a search (GET /apps/mentions, debounced; each app answers under its
// own deadline, and each app's results are shown as they come); an app whose search is not
// used is listed with the reason. A chosen item becomes a chip above the message box, and the
// next turn carries the chosen resource links (`mentions`), which the server marks as data.
import { $, el } from "./dom.js";
import * as plugins from "./pluginapi.js";

const DEBOUNCE_MS = 250;
const chosen = [];  // the resource links of the chips, each with the app it came from
let apps = null;  // the apps that answered the first search: later ones ask each on its own
let timer = null;
let searching = null;  // the AbortController of the search under way

// The "@word" just before the caret, or null.
function mentionAt(input) {
  const before = input.value.slice(0, input.selectionStart ?? input.value.length);
  const match = /(^|\s)@([^\s@]*)$/.exec(before);
  return match ? { query: match[2], start: before.length - match[2].length - 1 } : null;
}

function list() {
  return $("mention-list");
}

function hide() {
  list().hidden = true;
  list().replaceChildren();
}

function choose(input, at, link) {
  chosen.push(link);
  const end = input.selectionStart ?? input.value.length;
  input.value = input.value.slice(0, at.start) + input.value.slice(end);
  input.focus();
  hide();
  drawChips();
}

function drawChips() {
  $("chat-mentions").replaceChildren(...chosen.map((link, index) => el("span", {
    class: "chip",
    "data-uri": link.uri,
    title: `${link.uri} (${link.app})`,
  }, `@${link.title || link.name}`, el("button", {
    type: "button",
    class: "chip-remove",
    "aria-label": `remove ${link.name}`,
    onclick: () => { chosen.splice(index, 1); drawChips(); },
  }, "×"))));
}

function appSection(input, at, appId) {
  return el("li", { class: "mention-app", "data-app": appId }, el("div", { class: "meta" }, appId),
    el("ul", {}, el("li", { class: "meta" }, "searching…")));
}

function showItems(input, at, section, items) {
  const appId = section.dataset.app;
  section.querySelector("ul").replaceChildren(...(items.length
    ? items.map((item) => el("li", {}, el("button", {
        type: "button",
        class: "mention-item",
        "data-uri": item.uri,
        onmousedown: (event) => event.preventDefault(),  // keep the caret in the box
        onclick: () => choose(input, at, { ...item, app: appId }),
      }, item.title || item.name)))
    : [el("li", { class: "meta" }, "no matches")]));
}

function showSkipped(skipped) {
  for (const { app, reason } of skipped) {
    list().append(el("li", { class: "mention-skipped error", "data-app": app }, reason));
  }
}

async function search(input, at) {
  if (searching) searching.abort();
  const controller = new AbortController();
  searching = controller;
  list().hidden = false;
  try {
    if (apps === null) {
      list().replaceChildren(el("li", { class: "meta" }, "searching…"));
      const found = await plugins.searchMentions(at.query, null, controller.signal);
      if (controller.signal.aborted) return;
      apps = found.results.map((r) => r.app);
      list().replaceChildren();
      for (const result of found.results) {
        const section = appSection(input, at, result.app);
        list().append(section);
        showItems(input, at, section, result.items);
      }
      showSkipped(found.skipped);
      if (!found.results.length && !found.skipped.length) {
        list().append(el("li", { class: "meta" }, "no app offers @-mentions"));
      }
      return;
    }
    list().replaceChildren(...apps.map((appId) => appSection(input, at, appId)));
    await Promise.all(apps.map(async (appId) => {
      const section = list().querySelector(`[data-app="${CSS.escape(appId)}"]`);
      try {
        const found = await plugins.searchMentions(at.query, appId, controller.signal);
        if (controller.signal.aborted) return;
        const result = found.results[0];
        if (result) showItems(input, at, section, result.items);
        else {
          section.remove();
          showSkipped(found.skipped);
        }
      } catch (error) {
        if (!controller.signal.aborted) section.querySelector("ul").replaceChildren(el("li", { class: "error" }, error.message));
      }
    }));
  } catch (error) {
    if (!controller.signal.aborted) list().replaceChildren(el("li", { class: "error" }, error.message));
  }
}

// The resource links of the chips, for the next turn; the chips go.
export function takeMentions() {
  const links = chosen.splice(0);
  drawChips();
  return links.map(({ type, uri, name, title, description, mimeType, app }) =>
    ({ type, uri, name, title, description, mimeType, app }));
}

export const hasMentions = () => chosen.length > 0;

export function watchComposer() {
  const input = $("chat-input");
  input.addEventListener("input", () => {
    clearTimeout(timer);
    const at = mentionAt(input);
    if (!at) {
      hide();
      return;
    }
    timer = setTimeout(() => search(input, at), DEBOUNCE_MS);
  });
  // Escape closes the suggestions; Enter takes the first one instead of sending the message,
  // and ArrowDown moves into the list (its buttons, then Tab and Enter as anywhere).
  input.addEventListener("keydown", (event) => {
    if (event.key === "Escape") hide();
    const first = list().hidden ? null : list().querySelector(".mention-item");
    if (!first) return;
    if (event.key === "Enter") {
      event.preventDefault();
      first.click();
    } else if (event.key === "ArrowDown") {
      event.preventDefault();
      first.focus();
    }
  });
  input.addEventListener("blur", () => setTimeout(hide, 200));
}
