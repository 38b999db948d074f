// The page's own address: what a link asks for (`?app=` the app to select, `?open=` and `?args=`
// a view to open, `?file=` and `?with=` a workspace file to open in a viewer, `?session=` the
// chat session to show), and the selected app written back
// into it, so that a reload or a shared link shows the same app.

const params = new URLSearchParams(location.search);

export const linked = {
  app: params.get("app"),
  open: params.get("open"),
  args: params.get("args"),
  session: params.get("session"),
  file: params.get("file"),
  with: params.get("with"),
};

export function rememberApp(id) {
  const url = new URL(location.href);
  url.searchParams.set("app", id);
  history.replaceState(null, "", url);
}

// The `?args=` of a view link: a JSON object, or an Error that says why not.
export function linkedArgs() {
  const args = linked.args ? JSON.parse(linked.args) : {};
  if (!args || typeof args !== "object" || Array.isArray(args)) throw new Error("not an object");
  return args;
}
