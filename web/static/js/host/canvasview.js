// The view the canvas shows (null when none), and closing it. A view in a place of the page's
// own (a chat's tab) is never it.
let current = null;

export const currentView = () => current;

export function showInCanvas(view) {
  current = view;
}

export async function closeView() {
  const view = current;
  current = null;
  document.getElementById("canvas-close").hidden = true;
  if (view) await view.unmount();
}
