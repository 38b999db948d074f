// What may render: a tool's UI resource URI, and the HTML of a UI resource read through the
// view's lease, with what its `_meta.ui` declares (CSP, permissions, display modes), or a
// Refusal that says why it is not rendered.
import { Refusal } from "./refusal.js";

const UI_MIME = "text/html;profile=mcp-app";
const DEFAULT_MAX_UI_BYTES = 2 * 1024 * 1024;

export function uiUri(tool) {
  const meta = (tool && tool._meta) || {};
  const ui = meta.ui || {};
  return ui.resourceUri || meta["ui/resourceUri"] || null;
}

// The bytes of a resource's content (its text, or its base64 blob), or null when it has neither.
export function contentBytes(content) {
  if (typeof content.text === "string") return new TextEncoder().encode(content.text);
  if (typeof content.blob === "string") return Uint8Array.from(atob(content.blob), (c) => c.charCodeAt(0));
  return null;
}

// The HTML of a UI resource, or a Refusal that says why it is not rendered.
export async function loadResource(client, uri) {
  if (typeof uri !== "string" || !uri.startsWith("ui://")) {
    throw new Refusal(`'${uri}' is not a ui:// resource: only ui:// resources are rendered as app views`);
  }
  const read = await client.request("resources/read", { uri });
  if (read.error) throw new Refusal(`app '${client.appId}' could not read '${uri}': ${read.error.message}`);
  const contents = (read.result && read.result.contents) || [];
  const content = contents.find((c) => c.uri === uri) || contents[0];
  if (!content) throw new Refusal(`app '${client.appId}' returned nothing for '${uri}'`);
  const mime = String(content.mimeType || "");
  if (mime.toLowerCase() !== UI_MIME) {
    throw new Refusal(`'${uri}' has the MIME type '${mime || "none"}', not ${UI_MIME}: it is not rendered`);
  }
  const bytes = contentBytes(content);
  if (!bytes) throw new Refusal(`'${uri}' has no text or blob`);
  const limit = client.ui.maxUiBytes || DEFAULT_MAX_UI_BYTES;
  if (bytes.length > limit) {
    const most = limit === DEFAULT_MAX_UI_BYTES
      ? `2 MiB (${limit} bytes, the default)`
      : `${limit} bytes ([apps.entries.${client.appId}] max_ui_bytes)`;
    throw new Refusal(
      `'${uri}' is ${bytes.length} bytes: a view of app '${client.appId}' may be at most ${most},`
      + ` so it is not rendered. An operator can change that with [apps.entries.${client.appId}]`
      + " max_ui_bytes in config.toml",
    );
  }
  const html = new TextDecoder().decode(bytes);
  let ui = content._meta && content._meta.ui;
  if (!ui) {
    // The spec's fallback: the `_meta.ui` of the resource's resources/list entry.
    const listed = await client.request("resources/list", {});
    const entry = ((listed.result && listed.result.resources) || []).find((r) => r.uri === uri);
    ui = (entry && entry._meta && entry._meta.ui) || {};
  }
  const openai = (content._meta && content._meta["openai/ui"]) || {};
  return { html, csp: ui.csp || null, permissions: ui.permissions || null, ui, openai };
}
