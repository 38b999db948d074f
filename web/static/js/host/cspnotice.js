// What a CSP violation in a view needs: a notice for the person that says what was blocked and,
// when a setting can allow it, which one.

// The [apps.entries.<id>] csp_allow value that allows what was blocked, or null when no
// setting can (an undeclared network origin stays closed: the app must declare it).
function allowanceFor(violation) {
  const blocked = String(violation.blockedURI || "");
  const directive = String(violation.directive || "");
  if (blocked === "eval" || blocked === "wasm-eval") return "unsafe-eval";
  const scheme = blocked.startsWith("blob") ? "blob" : blocked.startsWith("data") ? "data" : null;
  if (!scheme) return null;
  if (directive === "worker-src") return `${scheme}-workers`;
  if (directive.startsWith("script-src")) return `${scheme}-scripts`;
  return null;
}

export function violationText(appId, violation) {
  const allow = allowanceFor(violation);
  const what = `${violation.directive || "the policy"} blocked ${violation.blockedURI || "something"}`;
  if (allow) {
    return `The view of app '${appId}' was blocked by its sandbox policy (${what}). An operator`
      + ` can allow it with [apps.entries.${appId}] csp_allow = ["${allow}"] in config.toml.`;
  }
  return `The view of app '${appId}' was blocked by its sandbox policy (${what}). No setting opens`
    + " a network origin the app did not declare: the app must list it in its resource's"
    + " _meta.ui.csp.";
}
