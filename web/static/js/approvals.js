// What the person is asked above the canvas: a confirmation (a view wants to open a link or
// send a message as them; a question's link is opened), and the approval of a view's tool call
// that the app's policy holds for the person.
import { $ } from "./dom.js";

// Resolves to true (the person allowed it) or false.
export function confirm(question, yesLabel) {
  return new Promise((resolve) => {
    $("confirm-text").textContent = question;
    $("confirm-yes").textContent = yesLabel || "Allow";
    $("confirm").hidden = false;
    const done = (answer) => {
      $("confirm").hidden = true;
      $("confirm-yes").onclick = $("confirm-no").onclick = null;
      resolve(answer);
    };
    $("confirm-yes").onclick = () => done(true);
    $("confirm-no").onclick = () => done(false);
  });
}

// Resolves to "once", "while-open" or "deny".
export function approve({ appId, tool, arguments: args }) {
  return new Promise((resolve) => {
    // A save of a workspace file is a write too (the host's `openai/resources/write`).
    $("approval-text").textContent = tool === "openai/resources/write"
      ? `The app '${appId}' wants to save ${(args && args.file) || "its file"}`
      : `The app '${appId}' wants to run its tool '${tool}' with ${JSON.stringify(args || {})}`;
    $("approval").hidden = false;
    const buttons = { "approval-once": "once", "approval-open": "while-open", "approval-deny": "deny" };
    const done = (answer) => {
      $("approval").hidden = true;
      for (const id of Object.keys(buttons)) $(id).onclick = null;
      resolve(answer);
    };
    for (const [id, answer] of Object.entries(buttons)) $(id).onclick = () => done(answer);
  });
}
