// An app's structured settings page (the openai/settings extension): opened from the app's
// "Settings" button or the link `/?settings=<appId>`, read from GET /apps/settings/<appId> and
// drawn with native controls, group by group in the app's layout order ("Other settings" last).
// Saving sends the server only what changed; the server checks each value against the
// setting's schema and says which one is wrong. A tool action runs the tool: a regular tool's
// text is shown beside its button, a UI tool's view opens in the canvas.
import { openView } from "./canvas.js";
import { $, el } from "./dom.js";
import * as plugins from "./pluginapi.js";

const KEY = "settings";

export const linkedSettings = () => new URLSearchParams(location.search).get(KEY);

function remember(appId) {
  const url = new URL(location.href);
  if (appId) url.searchParams.set(KEY, appId);
  else url.searchParams.delete(KEY);
  history.replaceState(null, "", url);
}

// One control per setting kind; the browser's own checks (min, max, step, pattern, lengths)
// mirror the schema, and the server checks again.
function control(name, schema, value) {
  const id = `setting-${name}`;
  if (schema.type === "boolean") {
    return el("input", { id, type: "checkbox", "data-setting": name, checked: value === true });
  }
  if (schema.type === "string" && Array.isArray(schema.enum)) {
    const select = el("select", { id, "data-setting": name },
      schema.enum.map((choice) => el("option", { value: choice, selected: choice === value }, choice)));
    return select;
  }
  if (schema.type === "string") {
    return el("input", {
      id, type: "text", "data-setting": name, value: value ?? "",
      minlength: schema.minLength, maxlength: schema.maxLength, pattern: schema.pattern,
    });
  }
  const step = schema.multipleOf ?? (schema.type === "integer" ? 1 : "any");
  return el("input", {
    id, type: "number", "data-setting": name, value: value ?? "",
    min: schema.minimum, max: schema.maximum, step,
  });
}

function valueOf(input, schema) {
  if (schema.type === "boolean") return input.checked;
  if (schema.type === "number" || schema.type === "integer") {
    return input.value === "" ? null : Number(input.value);
  }
  return input.value;
}

function propertyRow(item) {
  const { property, schema, value } = item;
  const title = schema.title || property;
  const input = control(property, schema, value);
  const label = el("label", { for: input.id }, title);
  return el("div", { class: `setting setting-${schema.type}`, "data-property": property },
    schema.type === "boolean" ? [input, label] : [label, input],
    schema.description ? el("div", { class: "meta" }, schema.description) : null,
    el("div", { class: "error setting-error", "data-error-for": property }));
}

function actionRow(appId, item) {
  const outcome = el("span", { class: "action-outcome", "data-outcome-for": item.tool });
  const button = el("button", {
    type: "button",
    class: "settings-action",
    "data-tool": item.tool,
    onclick: async () => {
      button.disabled = true;
      outcome.className = "action-outcome spinner";
      outcome.textContent = "running…";
      try {
        const done = await plugins.runSettingsAction(appId, item.tool);
        outcome.className = `action-outcome ${done.isError ? "error" : "ok"}`;
        outcome.textContent = done.text || (done.isError ? "failed" : "done");
        if (done.view) {
          openView({
            appId,
            toolName: item.tool,
            args: {},
            result: done.view.result,
            resourceUri: done.view.resourceUri,
          });
        }
      } catch (error) {
        outcome.className = "action-outcome error";
        outcome.textContent = error.message;
      } finally {
        button.disabled = false;
      }
    },
  }, item.title);
  return el("div", { class: "setting setting-action" },
    button, " ", outcome,
    item.description ? el("div", { class: "meta" }, item.description) : null);
}

function draw(appId, page) {
  const schemas = new Map();
  const groups = page.groups.map((group) => el("fieldset", { class: "settings-group" },
    el("legend", {}, group.title),
    group.items.map((item) => {
      if (item.kind === "tool") return actionRow(appId, item);
      schemas.set(item.property, item.schema);
      return propertyRow(item);
    })));
  const status = el("p", { id: "settings-status", class: "meta", role: "status" });
  const form = el("form", { id: "settings-form", novalidate: true },
    groups,
    page.problems.length
      ? el("ul", { class: "error", id: "settings-problems" }, page.problems.map((p) => el("li", {}, p)))
      : null,
    el("div", { class: "buttons" }, el("button", { id: "settings-save" }, "Save")),
    status);
  let values = { ...page.values };
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    for (const node of form.querySelectorAll(".setting-error")) node.textContent = "";
    const set = {};
    for (const [name, schema] of schemas) {
      const input = form.querySelector(`[data-setting="${CSS.escape(name)}"]`);
      const value = valueOf(input, schema);
      if (value !== values[name]) set[name] = value;
    }
    if (!Object.keys(set).length) {
      status.textContent = "Nothing changed.";
      return;
    }
    status.textContent = "Saving…";
    try {
      const saved = await plugins.saveSettings(appId, set);
      values = { ...saved.values };
      status.textContent = `Saved: ${saved.changed.join(", ") || "nothing changed"}.`;
    } catch (error) {
      status.textContent = "";
      const slot = error.field && form.querySelector(`[data-error-for="${CSS.escape(error.field)}"]`);
      (slot || status).textContent = error.message;
      if (!slot) status.className = "error";
    }
  });
  return form;
}

export async function openSettings(appId) {
  const pane = $("settings");
  remember(appId);
  pane.hidden = false;
  pane.replaceChildren(
    el("div", { class: "pane-head" },
      el("h3", { id: "settings-title" }, `Settings of ${appId}`),
      el("button", { type: "button", id: "settings-close", onclick: closeSettings }, "Close")),
    el("p", { class: "empty" }, "Reading the settings…"));
  try {
    const page = await plugins.readSettings(appId);
    pane.replaceChildren(pane.firstChild, draw(appId, page));
  } catch (error) {
    pane.replaceChildren(pane.firstChild, el("p", { class: "refusal", id: "settings-refusal" }, error.message));
  }
}

export function closeSettings() {
  $("settings").hidden = true;
  $("settings").replaceChildren();
  remember(null);
}
