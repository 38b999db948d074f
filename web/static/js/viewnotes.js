// What the person did in a view since the last turn (its tool calls), carried into the next
// one as `appEvents`. (What a view attaches with ui/update-model-context is js/modelcontext.js's.)
const appEvents = [];

export function noteAppEvent(event) {
  appEvents.push(event);
}

// The notes as the next turn's `appEvents`, and none kept.
export function takeNotes() {
  return appEvents.splice(0);
}
