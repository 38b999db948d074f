// ui/download-file: the files (embedded, or links to the app's own resources, read through the
// view door) are gathered, bounded, shown to the person, and saved by this page only if they
// allow it.
import { hooks } from "./hooks.js";
import { rpcError } from "./refusal.js";
import { contentBytes } from "./resource.js";

const DOWNLOAD_MAX_BYTES = 10 * 1024 * 1024;  // all the files of one ui/download-file
const DOWNLOAD_MAX_FILES = 10;

export async function downloadFile(view, params) {
  const contents = Array.isArray(params.contents) ? params.contents : [];
  if (!contents.length || contents.length > DOWNLOAD_MAX_FILES) {
    throw rpcError(-32602, `a download is 1 to ${DOWNLOAD_MAX_FILES} files`);
  }
  const files = [];
  let total = 0;
  for (const item of contents) {
    let resource = item && item.type === "resource" ? item.resource : null;
    if (item && item.type === "resource_link") {
      const read = await view.forward("resources/read", { uri: item.uri });
      resource = ((read && read.contents) || []).find((c) => c.uri === item.uri) || null;
    }
    if (!resource || typeof resource.uri !== "string") throw rpcError(-32602, "a download names a resource it does not give");
    const bytes = contentBytes(resource);
    if (!bytes) throw rpcError(-32602, `'${resource.uri}' has no text or blob to download`);
    total += bytes.length;
    if (total > DOWNLOAD_MAX_BYTES) {
      throw rpcError(-32602, `a download may be at most ${DOWNLOAD_MAX_BYTES} bytes`);
    }
    files.push({ name: fileName(resource.uri), type: resource.mimeType || "application/octet-stream", bytes });
  }
  const list = files.map((f) => `${f.name} (${f.bytes.length} bytes)`).join(", ");
  const yes = await hooks.confirm(`The app wants to save ${files.length === 1 ? "a file" : "files"}: ${list}`, "Save");
  if (!yes) return { isError: true };
  for (const file of files) save(file);
  return {};
}

function save(file) {
  const url = URL.createObjectURL(new Blob([file.bytes], { type: file.type }));
  const link = document.createElement("a");
  link.href = url;
  link.download = file.name;
  link.rel = "noopener";
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60 * 1000);
}

// A plain file name from a resource URI: its last segment, without anything a file system or
// the person could misread.
function fileName(uri) {
  let last = String(uri).split(/[?#]/)[0].split("/").filter(Boolean).pop() || "download";
  try { last = decodeURIComponent(last); } catch (error) { /* keep it as it is */ }
  const clean = last.replace(/[^\w.\- ]+/g, "_").replace(/^\.+/, "").slice(0, 100);
  return clean || "download";
}
