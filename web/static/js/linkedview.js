// The view a link asks for (`?open=<public tool name>&args=<JSON object>`): opened once the
// tool table is read, or the canvas says why it cannot be.
import * as api from "./api.js";
import { openView, showRefusal } from "./canvas.js";
import { linked, linkedArgs } from "./route.js";

export async function openLinkedView() {
  const name = linked.open;
  if (!name) return;
  let args;
  try {
    args = linkedArgs();
  } catch (error) {
    showRefusal(`args must be a URL-encoded JSON object: ${error.message}`);
    return;
  }
  const body = await api.listTools();
  const tool = body.tools.find((t) => t.offered && t.publicName === name && t.uiResourceUri);
  if (tool) {
    openView({ appId: tool.app, toolName: tool.name, publicName: name, args, resourceUri: tool.uiResourceUri });
    return;
  }
  showRefusal(`there is no tool '${name}' with a UI to open`);
}
