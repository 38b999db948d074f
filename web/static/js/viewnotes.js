// What the views told the chat since the last turn, carried into the next one: what the person
// did in a view (its tool calls), and each app's latest ui/update-model-context.
const appEvents = [];
const modelContext = new Map();  // app id → the latest ui/update-model-context

export function noteAppEvent(event) {
  appEvents.push(event);
}

export function noteModelContext(appId, context) {
  modelContext.set(appId, context);
}

// The notes as the next turn's `appEvents`, and none kept.
export function takeNotes() {
  const events = appEvents.splice(0);
  for (const [appId, context] of modelContext) {
    const text = (context.content || []).filter((c) => c.type === "text").map((c) => c.text).join("\n");
    const data = context.structuredContent ? JSON.stringify(context.structuredContent) : "";
    events.push({ tool: `${appId}/ui/update-model-context`, args: {}, resultText: [text, data].filter(Boolean).join("\n") });
  }
  modelContext.clear();
  return events;
}
