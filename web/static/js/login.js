// The login box, shown when the server asks for its token (any admin call answered 401). The
// link's `open`, `args`, `app`, `file` and `with` (and an entry point's `entry`, `path`,
// `session`, `tab`) travel through /login, so a shared or bookmarked link survives it.
import { $ } from "./dom.js";
import { linked } from "./route.js";

export function showLogin() {
  $("main").hidden = true;
  $("login").hidden = false;
  $("live").textContent = "not logged in";
  $("login-open").value = linked.open || "";
  $("login-args").value = linked.args || "";
  $("login-app").value = linked.app || "";
  $("login-file").value = linked.file || "";
  $("login-with").value = linked.with || "";
  const params = new URLSearchParams(location.search);
  for (const name of ["entry", "path", "session", "tab"]) $(`login-${name}`).value = params.get(name) || "";
  const kept = ["open", "args", "app", "file", "with", "entry", "path", "session", "tab"];
  for (const id of kept.map((n) => `login-${n}`)) $(id).disabled = !$(id).value;
}

export const loginShown = () => !$("login").hidden;
