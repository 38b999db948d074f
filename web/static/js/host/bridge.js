// The view's AppBridge: the official host library (`@modelcontextprotocol/ext-apps/app-bridge`,
// vendored as static/app-bridge.js and loaded by library.js before the view mounts, as
// `view.library`) connected to the view's sandbox frame, with the capabilities this host offers
// and each of the view's requests and notifications handed to what answers it.
import { closeView } from "./canvasview.js";
import { downloadFile } from "./downloads.js";
import { hooks } from "./hooks.js";
import { hostContext } from "./hostcontext.js";
import { callTool, hostRequest, message, openLink, updateModelContext } from "./requests.js";
import { postToSandbox } from "./sandboxframe.js";

const HOST_INFO = { name: "mcpapps", version: "0.1.0" };

export function connectBridge(view, frame) {
  const { AppBridge, PostMessageTransport } = view.library;
  const capabilities = {
    openLinks: {},
    downloadFile: {},
    serverTools: {},
    serverResources: {},
    logging: {},
    // The OpenAI model-context and message extensions (js/modelcontext.js, js/viewmessage.js).
    experimental: { "openai/modelContext": {}, "openai/message": {} },
    message: { text: {}, image: {}, resourceLink: {}, resource: {} },
    updateModelContext: { text: {}, image: {}, resourceLink: {}, resource: {}, structuredContent: {} },
    // Filled in with what the sandbox applied when it says (before the view starts).
    sandbox: { csp: {} },
  };
  // With a workspace, the host's file resources and opening local files (the OpenAI MCP
  // extensions), as the server says them (GET /apps/files).
  if (hooks.hostExtensions) capabilities.experimental = hooks.hostExtensions;
  view.capabilities = capabilities;
  const bridge = new AppBridge(null, HOST_INFO, capabilities, { hostContext: hostContext(view) });
  view.bridge = bridge;
  bridge.oninitialized = () => view.onInitialized();
  bridge.oncalltool = (params) => callTool(view, params);
  bridge.onlistresources = (params) => view.forward("resources/list", params);
  bridge.onlistresourcetemplates = (params) => view.forward("resources/templates/list", params);
  bridge.onreadresource = (params) => view.forward("resources/read", params);
  bridge.onopenlink = (params) => openLink(params);
  bridge.ondownloadfile = (params) => downloadFile(view, params);
  // AppBridge's schema keeps only role and content of a ui/message's params; its `_meta`
  // (the OpenAI message options) is read from the request as the view sent it.
  bridge.onmessage = (params, extra) => message(view, {
    ...params, _meta: extra && extra.mcpReq ? extra.mcpReq._meta : undefined,
  });
  bridge.onupdatemodelcontext = (params) => updateModelContext(view, params);
  bridge.onrequestdisplaymode = async (params) => ({ mode: view.setDisplayMode(params.mode) });
  bridge.onsizechange = (params) => view.sizeChanged(params);
  bridge.onrequestteardown = () => { if (view.place) view.place.close(); else closeView(); };
  bridge.onloggingmessage = (params) => console.info(`app ${view.appId}:`, params.data);
  // What AppBridge has no handler of its own for: the file requests the host answers (saves,
  // subscriptions, opening a file), each through the view door.
  bridge.fallbackRequestHandler = (request) => hostRequest(view, request.method, request.params || {});
  // Messages go to the sandbox page at its own origin only.
  const target = { postMessage: (each) => postToSandbox(view, each) };
  bridge.connect(new PostMessageTransport(target, frame.contentWindow)).catch((error) => {
    console.error(`view of app ${view.appId}: ${error.message || error}`);
  });
}
