// The entry point scripts/vendor-app-bridge.sh bundles into web/static/vendor/app-bridge.js: the
// official MCP Apps host library (`@modelcontextprotocol/ext-apps/app-bridge`), with the MCP SDK
// modules it imports by bare name, as one script that sets `window.McpAppBridge`.
export {
  AppBridge,
  PostMessageTransport,
  SUPPORTED_PROTOCOL_VERSIONS,
  buildAllowAttribute,
  getToolUiResourceUri,
  isToolVisibilityAppOnly,
  isToolVisibilityModelOnly,
} from "@modelcontextprotocol/ext-apps/app-bridge";
