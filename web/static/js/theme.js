// The page's theme follows the system's (light or dark): set on <html data-theme>, and told to
// whoever watches it (the open view).
const dark = window.matchMedia("(prefers-color-scheme: dark)");
const watchers = [];

export const theme = () => (dark.matches ? "dark" : "light");

export function watchTheme(watcher) {
  watchers.push(watcher);
}

function apply() {
  document.documentElement.dataset.theme = theme();
  for (const watcher of watchers) watcher(theme());
}

dark.addEventListener("change", apply);
apply();
