// The parts of a rich form (OpenAI form elicitation) that a plain MCP form has not: a pattern,
// options with descriptions and thumbnails, suggested values (one, or several in an array with
// entries of the person's own), and resource selection from the options the app supplied
// (single; several, explicit: ticked on and off; implicit: every option is in until removed).
// The server has checked the form before it reached the page (actors/richforms.py: a form it
// cannot show whole never comes), and checks the answer against the schema.
//
//   richField(name, schema, required) → {row, read}, or null for a field with nothing rich
//
// as asking.js's own fields: `row` is the field's DOM, `read()` its value (undefined: left out).
// A thumbnail is shown only from an https: or a base64 data:image address (`safeImage`); any
// other option of a field that has thumbnails shows the fallback box.
import { el as node } from "./dom.js";

const DATA_IMAGE = /^data:image\/[a-zA-Z0-9.+-]+;base64,[A-Za-z0-9+/]+={0,2}$/;

// The address of a thumbnail that may be shown, or null.
export function safeImage(icon) {
  const src = icon && typeof icon.src === "string" ? icon.src : "";
  if (DATA_IMAGE.test(src)) return src;
  try {
    const url = new URL(src);
    return url.protocol === "https:" && url.host ? url.href : null;
  } catch {
    return null;
  }
}

function thumbnail(icon, title) {
  const src = safeImage(icon);
  if (!src) return node("span", { class: "rich-thumb rich-thumb-fallback", "aria-hidden": "true" });
  return node("img", { class: "rich-thumb", src, alt: title, referrerpolicy: "no-referrer", loading: "lazy" });
}

// A titled option ({const, title, description?, thumbnail?}) from the spec's titled const and
// resource shapes alike.
function fromConst(o) {
  const icon = o["x-openai-thumbnail"] || o["x-openai-preview"];
  return { value: String(o.const), title: o.title || String(o.const), description: o.description, icon };
}

function fromResource(r) {
  const meta = r._meta || {};
  return {
    value: String(r.uri),
    title: r.title || r.name || String(r.uri),
    description: r.description || (r.title && r.name ? r.name : r.uri),
    icon: meta["openai/thumbnail"],
  };
}

// One option as a card: an input (radio, checkbox) or a button, its thumbnail, title, text.
function card(option, control, pictured) {
  return node("label", { class: "rich-option", "data-value": option.value },
    control,
    pictured ? thumbnail(option.icon, option.title) : null,
    node("span", { class: "rich-option-text" },
      node("span", { class: "rich-option-title" }, option.title),
      option.description ? node("small", { class: "rich-option-description" }, option.description) : null));
}

function fieldset(name, schema, required, ...children) {
  const title = schema.title || name;
  return node("fieldset", { class: "ask-field rich-field", "data-field": name },
    node("legend", {}, title, required ? " *" : ""),
    schema.description ? node("small", {}, schema.description) : null,
    ...children);
}

// Options to choose one or several of (radio buttons or checkboxes).
function choose(name, schema, required, options, several, given) {
  const pictured = options.some((o) => o.icon);
  const chosen = new Set((Array.isArray(given) ? given : given === undefined ? [] : [given]).map(String));
  const inputs = options.map((o) => node("input", {
    type: several ? "checkbox" : "radio", name: `rich-${name}`, value: o.value, checked: chosen.has(o.value),
  }));
  const cards = options.map((o, i) => card(o, inputs[i], pictured));
  const read = () => {
    const on = inputs.filter((i) => i.checked).map((i) => i.value);
    if (several) return on;
    return on.length ? on[0] : undefined;
  };
  return { row: fieldset(name, schema, required, node("div", { class: "rich-options" }, cards)), read };
}

// Implicit selection: every option is in until the person removes it (and may add it back).
function implicit(name, schema, required, options) {
  const pictured = options.some((o) => o.icon);
  const kept = new Set(options.map((o) => o.value));
  const list = node("div", { class: "rich-options rich-implicit" });
  function draw() {
    list.replaceChildren(...options.map((o) => {
      const on = kept.has(o.value);
      const toggle = node("button", {
        type: "button", class: "rich-toggle", "data-action": on ? "remove" : "add",
        onclick: () => { if (on) kept.delete(o.value); else kept.add(o.value); draw(); },
      }, on ? "Remove" : "Add back");
      const row = card(o, toggle, pictured);
      row.classList.toggle("removed", !on);
      return row;
    }));
  }
  draw();
  const read = () => options.map((o) => o.value).filter((v) => kept.has(v));
  return { row: fieldset(name, schema, required, list), read };
}

function textInput(name, schema, given) {
  return node("input", {
    type: "text", name, value: given,
    minlength: schema.minLength, maxlength: schema.maxLength, pattern: schema.pattern,
    "data-field": name,
  });
}

function patternHint(schema) {
  return schema.pattern ? node("small", { class: "rich-pattern" }, "pattern: ", node("code", {}, schema.pattern)) : null;
}

// A string the person types, with suggested values to take with a click.
function suggested(name, schema, required) {
  const input = textInput(name, schema, schema.default);
  const suggestions = (schema["x-openai-suggestions"] || []).map(fromConst);
  const pictured = suggestions.some((o) => o.icon);
  const buttons = suggestions.map((o) => card(o, node("button", {
    type: "button", class: "rich-suggestion", "data-suggestion": o.value,
    onclick: () => { input.value = o.value; },
  }, "Use"), pictured));
  const read = () => (input.value === "" ? undefined : input.value);
  const row = fieldset(name, schema, required, input, patternHint(schema),
    buttons.length ? node("div", { class: "rich-options rich-suggestions" }, buttons) : null);
  return { row, read };
}

// Several strings: suggested ones ticked on and off, and entries of the person's own.
function suggestedList(name, schema, required) {
  const items = schema.items || {};
  const given = Array.isArray(schema.default) ? schema.default.map(String) : [];
  const suggestions = (items["x-openai-suggestions"] || []).map(fromConst);
  const offered = new Set(suggestions.map((o) => o.value));
  const pictured = suggestions.some((o) => o.icon);
  const boxes = suggestions.map((o) => node("input", {
    type: "checkbox", name: `rich-${name}`, value: o.value, checked: given.includes(o.value),
  }));
  const own = given.filter((v) => !offered.has(v));
  const chips = node("div", { class: "rich-own" });
  const entry = textInput(`${name}-entry`, items, undefined);
  function drawOwn() {
    chips.replaceChildren(...own.map((value, i) => node("span", { class: "chip rich-own-value", "data-value": value },
      value,
      node("button", { type: "button", "aria-label": `remove ${value}`, onclick: () => { own.splice(i, 1); drawOwn(); } }, "×"))));
  }
  function add() {
    const value = entry.value.trim();
    if (value && !own.includes(value)) own.push(value);
    entry.value = "";
    drawOwn();
  }
  entry.addEventListener("keydown", (event) => { if (event.key === "Enter") { event.preventDefault(); add(); } });
  drawOwn();
  const read = () => [...boxes.filter((b) => b.checked).map((b) => b.value), ...own];
  const row = fieldset(name, schema, required,
    boxes.length ? node("div", { class: "rich-options rich-suggestions" }, suggestions.map((o, i) => card(o, boxes[i], pictured))) : null,
    node("div", { class: "rich-add" }, entry, node("button", { type: "button", class: "rich-add-button", onclick: add }, "Add")),
    patternHint(items), chips);
  return { row, read };
}

function hasRichOptions(options) {
  return Array.isArray(options) && options.some((o) => o && (o.description || o["x-openai-thumbnail"] || o["x-openai-preview"]));
}

export function richField(name, schema, required) {
  const input = schema["x-openai-input"];
  if (input && Array.isArray(input.options)) {
    const options = input.options.map(fromResource);
    if (schema.type !== "array") return choose(name, schema, required, options, false, schema.default);
    if (input.selection === "implicit") return implicit(name, schema, required, options);
    return choose(name, schema, required, options, true, schema.default);
  }
  if (schema.type === "string" && hasRichOptions(schema.oneOf)) {
    return choose(name, schema, required, schema.oneOf.map(fromConst), false, schema.default);
  }
  if (schema.type === "array" && schema.items && hasRichOptions(schema.items.anyOf)) {
    return choose(name, schema, required, schema.items.anyOf.map(fromConst), true, schema.default);
  }
  if (schema.type === "array" && schema.items && schema.items.type === "string" && !schema.items.enum && !schema.items.anyOf) {
    return suggestedList(name, schema, required);
  }
  if (schema.type === "string" && !schema.oneOf && !schema.enum && (schema["x-openai-suggestions"] || schema.pattern)) {
    return suggested(name, schema, required);
  }
  return null;
}
