// Questions an app asks the person (MCP elicitation), as forms in the page. A form is built
// from the app's requested schema: a flat object of primitive fields (string with its formats,
// number, integer, boolean), single choices (enum, enumNames, oneOf const/title) and multiple
// choices (an array of enum or anyOf items), with their defaults, as the MCP spec allows. A
// URL-mode question shows its link and opens it only once the person says so.
//
//   question(request, answer, confirm) → a DOM node
//
// `request` is {message, requestedSchema, richForm?} or {message, url}; `answer(action, content)` sends the
// answer and resolves to null when it was taken, or to the reason it was not (the form stays
// open to be corrected); `confirm(text, yesLabel)` asks before a link is opened.
import { el as node } from "./dom.js";
import { richField } from "./richform.js";

// [{value, title}] of a single choice, or null when the field is not one.
function choices(field) {
  if (Array.isArray(field.oneOf)) {
    return field.oneOf.map((o) => ({ value: String(o.const), title: o.title || String(o.const) }));
  }
  if (Array.isArray(field.enum)) {
    const names = Array.isArray(field.enumNames) ? field.enumNames : [];
    return field.enum.map((v, i) => ({ value: String(v), title: names[i] || String(v) }));
  }
  return null;
}

function multiChoices(field) {
  const items = field.items || {};
  if (Array.isArray(items.anyOf)) {
    return items.anyOf.map((o) => ({ value: String(o.const), title: o.title || String(o.const) }));
  }
  if (Array.isArray(items.enum)) return items.enum.map((v) => ({ value: String(v), title: String(v) }));
  return [];
}

const INPUT_TYPES = { email: "email", uri: "url", date: "date", "date-time": "datetime-local" };

// One field: its row in the form, and how its value is read back (undefined: left out).
function field(name, schema, required) {
  const id = `ask-${Math.random().toString(36).slice(2)}-${name}`;
  const title = schema.title || name;
  const label = node("label", { for: id }, title, required ? " *" : "");
  const help = schema.description ? node("small", {}, schema.description) : null;
  const given = schema.default;
  let input;
  let read;
  const options = choices(schema);
  if (schema.type === "boolean") {
    input = node("input", { id, name, type: "checkbox", checked: given === true });
    read = () => input.checked;
    return { row: node("div", { class: "ask-field ask-boolean" }, input, label, help), read };
  }
  if (schema.type === "array") {
    const chosen = new Set(Array.isArray(given) ? given.map(String) : []);
    const boxes = multiChoices(schema).map((o) => {
      const box = node("input", { type: "checkbox", name, value: o.value, checked: chosen.has(o.value) });
      return { box, row: node("label", {}, box, o.title) };
    });
    read = () => boxes.filter((b) => b.box.checked).map((b) => b.box.value);
    return { row: node("fieldset", { class: "ask-field" }, node("legend", {}, title), boxes.map((b) => b.row), help), read };
  }
  if (options) {
    input = node("select", { id, name },
      required && given === undefined ? null : node("option", { value: "" }, ""),
      options.map((o) => node("option", { value: o.value, selected: String(given) === o.value }, o.title)));
    read = () => (input.value === "" ? undefined : input.value);
  } else if (schema.type === "number" || schema.type === "integer") {
    input = node("input", {
      id, name, type: "number",
      step: schema.type === "integer" ? "1" : "any",
      min: schema.minimum, max: schema.maximum,
      value: given,
    });
    read = () => {
      if (input.value.trim() === "") return undefined;
      return schema.type === "integer" ? parseInt(input.value, 10) : parseFloat(input.value);
    };
  } else {
    input = node("input", {
      id, name, type: INPUT_TYPES[schema.format] || "text",
      minlength: schema.minLength, maxlength: schema.maxLength,
      value: given,
    });
    read = () => (input.value === "" ? undefined : input.value);
  }
  return { row: node("div", { class: "ask-field" }, label, input, help), read };
}

export function question(request, answer, confirm) {
  const box = node("div", { class: "ask", role: "group" },
    node("p", { class: "ask-from" }, `${request.app} asks (${request.tool}):`),
    node("p", { class: "ask-message" }, request.message || ""));
  const status = node("p", { class: "ask-status" });
  const buttons = [];
  function button(label, action, onclick) {
    const b = node("button", { type: "button", "data-action": action }, label);
    b.addEventListener("click", onclick);
    buttons.push(b);
    return b;
  }
  async function send(action, content) {
    buttons.forEach((b) => { b.disabled = true; });
    const refused = await answer(action, content);
    if (refused) {
      status.textContent = refused;
      status.className = "ask-status error";
      buttons.forEach((b) => { b.disabled = false; });
      return;
    }
    status.textContent = `answered: ${action}`;
    status.className = "ask-status";
    box.classList.add("answered");
    box.querySelectorAll("input, select, .rich-field button").forEach((i) => { i.disabled = true; });
  }
  if (request.url) {
    const link = node("a", { href: request.url, target: "_blank", rel: "noopener noreferrer" }, request.url);
    box.append(node("p", {}, "Link: ", link));
    link.addEventListener("click", (event) => event.preventDefault());
    box.append(node("div", { class: "ask-buttons" },
      button("Open link", "accept", async () => {
        if (!(await confirm(`Open ${request.url} for ${request.app}?`, "Open"))) return;
        window.open(request.url, "_blank", "noopener,noreferrer");
        send("accept");
      }),
      button("Decline", "decline", () => send("decline")),
      button("Cancel", "cancel", () => send("cancel"))));
    box.append(status);
    return box;
  }
  const schema = request.requestedSchema || {};
  const required = new Set(schema.required || []);
  // A rich form's fields that use its extensions are richform.js's; the rest are built here.
  const build = (name, s) => (request.richForm && richField(name, s, required.has(name))) || field(name, s, required.has(name));
  const fields = Object.entries(schema.properties || {}).map(([name, s]) => [name, build(name, s)]);
  // novalidate: the session checks the answer against the schema and says what is wrong.
  const form = node("form", { class: "ask-form", novalidate: true }, fields.map(([, f]) => f.row));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const content = {};
    for (const [name, f] of fields) {
      const value = f.read();
      if (value !== undefined && !Number.isNaN(value)) content[name] = value;
    }
    send("accept", content);
  });
  const submit = node("button", { type: "submit", "data-action": "accept" }, "Submit");
  buttons.push(submit);
  form.append(node("div", { class: "ask-buttons" },
    submit,
    button("Decline", "decline", () => send("decline")),
    button("Cancel", "cancel", () => send("cancel"))));
  box.append(form, status);
  return box;
}
