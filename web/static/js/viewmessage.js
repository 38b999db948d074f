// A view's `ui/message`, with the OpenAI message extension: its content (text, image, resource
// link, embedded resource; a block's `_meta["openai/title"]`, a text block's
// `_meta["openai/thumbnail"]`, an https: or data: image only) and `_meta["openai/message"]`:
// `target` ("active", the default, or "new": a new chat) and `send` (true, the default: sent
// as the person's turn once they allow it; false: left in the composer as a draft, sent by no
// one but the person). Untitled text is the message's text; titled text and the other blocks
// are attachments (chips in the composer, marked data for the model).
import { confirm } from "./approvals.js";
import { newChat, sendChat } from "./chat.js";
import { $ } from "./dom.js";
import { addDraft } from "./modelcontext.js";

const MESSAGE_MAX = 8000;  // characters of a ui/message the person may send as theirs
const BLOCKS_MAX = 20;
const KINDS = ["text", "image", "resource_link", "resource"];

function invalid(message) {
  const error = new Error(message);
  error.code = -32602;  // JSON-RPC's "invalid params": AppBridge answers the view with it
  return error;
}

// The same rules the server holds a model context to (actors/views/modelcontext.py).
function checked(block, where) {
  if (!block || typeof block !== "object") throw invalid(`${where} must be a content block object`);
  if (!KINDS.includes(block.type)) {
    throw invalid(`${where} is a '${block.type}' block: this host takes ${KINDS.join(", ")} blocks only`);
  }
  if (block.type === "text" && typeof block.text !== "string") throw invalid(`${where}.text must be a string`);
  if (block.type === "image" && !(typeof block.data === "string" && /^image\//.test(block.mimeType || ""))) {
    throw invalid(`${where} must have base64 'data' and an image 'mimeType'`);
  }
  if (block.type === "resource_link" && !(typeof block.uri === "string" && block.uri && typeof block.name === "string" && block.name)) {
    throw invalid(`${where} must have a 'uri' and a 'name'`);
  }
  if (block.type === "resource" && !(block.resource && typeof block.resource.uri === "string")) {
    throw invalid(`${where}.resource must be an object with a 'uri' string`);
  }
  const meta = block._meta || {};
  const title = meta["openai/title"];
  if (title !== undefined && !(typeof title === "string" && title.trim())) {
    throw invalid(`${where}._meta["openai/title"] must be a non-empty string`);
  }
  const thumbnail = meta["openai/thumbnail"];
  if (thumbnail !== undefined) {
    const src = thumbnail && typeof thumbnail.src === "string" ? thumbnail.src.trim() : "";
    if (block.type !== "text" || !/^(https:\/\/|data:image\/)/i.test(src)) {
      throw invalid(`${where}._meta["openai/thumbnail"].src must be an https: URL or a data: image on a text block; '${src.slice(0, 60)}' is refused`);
    }
  }
  return block;
}

function options(params) {
  const meta = (params._meta && params._meta["openai/message"]) || {};
  const target = meta.target === undefined ? "active" : meta.target;
  const send = meta.send === undefined ? true : meta.send;
  if (!["active", "new"].includes(target)) throw invalid(`_meta["openai/message"].target must be "active" or "new"`);
  if (typeof send !== "boolean") throw invalid(`_meta["openai/message"].send must be true or false`);
  return { target, send };
}

export async function viewMessage(appId, params) {
  const content = params.content;
  if (!Array.isArray(content) || !content.length || content.length > BLOCKS_MAX) {
    throw invalid(`'content' must be a list of 1 to ${BLOCKS_MAX} content blocks`);
  }
  content.forEach((block, index) => checked(block, `content[${index}]`));
  const { target, send } = options(params);
  const untitled = (b) => b.type === "text" && !(b._meta && b._meta["openai/title"]);
  const text = content.filter(untitled).map((b) => b.text).join("\n");
  const attachments = content.filter((b) => !untitled(b));
  if (text.length > MESSAGE_MAX) throw invalid(`a message from a view may be at most ${MESSAGE_MAX} characters`);
  if (!send) {
    // A draft: in the composer (a new chat's when asked), for the person to edit and send.
    if (target === "new") newChat();
    const input = $("chat-input");
    input.value = [input.value.trimEnd(), text].filter(Boolean).join(input.value.trim() ? " " : "");
    addDraft(appId, attachments);
    input.focus();
    return {};
  }
  const where = target === "new" ? " in a new chat" : "";
  const extra = attachments.length ? `\n(with ${attachments.length} attachment${attachments.length > 1 ? "s" : ""})` : "";
  const yes = await confirm(`The app wants to send this message as you${where}:\n${text}${extra}`, "Send");
  if (!yes) return { isError: true };
  if (target === "new") newChat();
  addDraft(appId, attachments);
  sendChat(text);
  return {};
}
