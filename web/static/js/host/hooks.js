// What the view host asks of the page, set by the page (canvas.js `connectHost`, `theme`,
// `onTitle`; `hostExtensions` by `setHostExtensions`); until then, the defaults below, which
// refuse what needs the person.
export const hooks = {
  // How a confirmation is asked (a link to open, files to save).
  confirm: async (question) => window.confirm(question),
  // What the person says to a view's tool call that needs approval: "once", "while-open"
  // or "deny".
  approve: async () => "deny",
  // Show an app's question ({requestId, app, tool, message, requestedSchema | url}) asked
  // during a view's call; `answer(action, content)` sends it (null, or why it was not taken).
  ask: () => {},
  // A view's ui/message (appId, params) → its result; a view's context changed (the view).
  onMessage: async () => ({ isError: true }),
  onModelContext: () => {},
  // What the person did in a view ({tool, args, resultText}).
  onAppEvent: () => {},
  // The canvas's title.
  onTitle: () => {},
  // A view asked to open a workspace file (openai/files/open, checked by the server): the
  // page opens it in its viewer.
  onOpenFile: () => {},
  // What `ui/initialize` adds to hostCapabilities.experimental (null: no workspace).
  hostExtensions: null,
  theme: () => "light",
};
