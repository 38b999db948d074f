// The official host library, AppBridge (static/app-bridge.js: 520 KiB, and compiling and
// running it costs a fresh page more than the rest of its scripts), is loaded the first time a
// view opens, not with the page: a page that shows no view never pays for it. It is a classic
// script that sets window.McpAppBridge (scripts/vendor-app-bridge.sh).
let loading = null;

export function hostLibrary() {
  if (!loading) {
    loading = new Promise((resolve, reject) => {
      const script = document.createElement("script");
      script.src = "static/app-bridge.js";
      script.onload = () => resolve(window.McpAppBridge);
      script.onerror = () => {
        loading = null;  // the next view tries again
        script.remove();
        reject(new Error("the view host library (static/app-bridge.js) could not be loaded"));
      };
      document.head.append(script);
    });
  }
  return loading;
}
