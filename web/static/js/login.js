// The login box, shown when the server asks for its token (any admin call answered 401). The
// link's `open`, `args`, `app`, `file` and `with` travel through /login, so a shared view link survives it.
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
  const kept = ["login-open", "login-args", "login-app", "login-file", "login-with"];
  for (const id of kept) $(id).disabled = !$(id).value;
}

export const loginShown = () => !$("login").hidden;
