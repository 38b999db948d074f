// One view: what it shows (its lease's client, the tool, the resource, the call's input and
// result), mounted in its sandbox frame with its bridge, told when its host context changes
// (theme, size, display mode, what the page adds), and taken down. The page calls the methods
// below; what the view asks of the host is answered by the modules its bridge wires
// (bridge.js).
import { connectBridge } from "./bridge.js";
import { DISPLAY_MODES, INLINE_MAX_HEIGHT, availableDisplayModes, canDisplay, showDisplayMode } from "./displaymodes.js";
import { hooks } from "./hooks.js";
import { hostContext } from "./hostcontext.js";
import { sandboxFrame, sandboxMessage } from "./sandboxframe.js";
import { offerTools } from "./viewtools.js";

const TEARDOWN_WAIT_MS = 1000;

export class View {
  constructor(options) {
    Object.assign(this, options);  // client, appId, tool, publicName, args, result, resource
    this.initialized = false;
    this.sent = [];  // the notifications the host sent the initialized view, in order (tests)
    this.violations = [];  // what the sandbox reported as blocked by its CSP
    this.displayMode = "inline";
    this.onMessage = (event) => sandboxMessage(this, event);
  }

  mount(canvas) {
    const frame = sandboxFrame(this);
    this.frame = frame;
    // Before the bridge's own listener: the sandbox's own notifications (what CSP it applied,
    // what that CSP blocked) are the page's, not the view's.
    window.addEventListener("message", this.onMessage);
    canvas.replaceChildren(frame);
    // The mode the resource prefers to open in, when the host and the resource offer it.
    const preferred = this.openIn || this.resource.ui.preferredDisplayMode || this.resource.openai.preferredDisplayMode;
    if (preferred !== "inline" && availableDisplayModes(this).includes(preferred)) {
      this.displayMode = preferred;
      showDisplayMode(preferred);
    }
    connectBridge(this, frame);
    this.resized = new ResizeObserver(() => this.contextChanged());
    this.resized.observe(frame);
  }

  // A view's own request to its app. One restored from a saved chat is refused by the server
  // (its lease is restored) until the person runs it again (a fresh view).
  async forward(method, params) {
    return this.client.forward(method, params);
  }

  // The page changes what it adds to the host context: the view is told what differs
  // (ui/notifications/host-context-changed), and is not reloaded.
  setContext(extra) {
    this.extraContext = { ...this.extraContext, ...extra };
    this.contextChanged();
  }

  // The host context changed (theme, size, display mode): AppBridge sends the view what
  // differs. Between the view's rendering and its `initialized` nothing is sent (the spec);
  // before its rendering the sandbox has no view to pass it to, and the bridge keeps the
  // context for the view's ui/initialize.
  contextChanged() {
    if (!this.bridge || (this.rendered && !this.initialized)) return;
    this.bridge.setHostContext(hostContext(this));
  }

  themeChanged() {
    this.contextChanged();
  }

  onInitialized() {
    if (this.initialized) return;
    this.initialized = true;
    this.contextChanged();
    // A view opened as the chat's call starts: the arguments so far, then the whole
    // (`input`), then the result, or tool-cancelled when the call fails, the turn is
    // cancelled or the call is abandoned.
    if (this.partial && !this.inputSent) this.bridge.sendToolInputPartial({ arguments: this.partial });
    offerTools(this);  // the tools it registers, for its chat's model
    const input = this.input || Promise.resolve(this.args || {});
    input.then((args) => {
      this.inputSent = true;
      if (this.bridge) this.bridge.sendToolInput({ arguments: args || {} });
      return this.result;
    }).then(
      (result) => this.bridge && this.bridge.sendToolResult(result),
      (error) => this.bridge && this.bridge.sendToolCancelled({ reason: String(error.message || error) }),
    );
  }

  // The call's arguments as far as the model has written them (before `input` is whole).
  partialInput(args) {
    if (this.inputSent) return;
    this.partial = args;
    if (this.initialized && this.bridge) this.bridge.sendToolInputPartial({ arguments: args });
  }

  // The person removed what the view attached (a chip), or a turn took it.
  contextRemoved(updateIds) {
    if (!this.modelContext || !updateIds.includes(this.modelContext.updateId)) return;
    this.modelContext = null;
    this.contextChanged();
  }

  sizeChanged(params) {
    if (this.displayMode !== "inline" || !this.frame) return;
    const height = Number(params.height);
    if (Number.isFinite(height) && height > 0) {
      this.frame.style.height = `${Math.min(Math.max(Math.ceil(height), 80), INLINE_MAX_HEIGHT)}px`;
    }
  }

  // Put the view in `mode` when it may be; the mode it is in afterwards.
  setDisplayMode(mode) {
    if (!DISPLAY_MODES.includes(mode) || !canDisplay(this, mode) || mode === this.displayMode) {
      return this.displayMode;
    }
    this.displayMode = mode;
    showDisplayMode(mode);
    this.contextChanged();
    return mode;
  }

  // Ask the view to tear down, wait a bounded time for its answer, then remove it.
  async unmount() {
    const bridge = this.bridge;
    if (bridge && this.initialized) {
      await Promise.race([
        bridge.teardownResource({}).catch(() => {}),
        new Promise((resolve) => setTimeout(resolve, TEARDOWN_WAIT_MS)),
      ]);
    }
    this.bridge = null;
    if (bridge) await bridge.close().catch(() => {});
    if (this.resized) this.resized.disconnect();
    window.removeEventListener("message", this.onMessage);
    if (this.displayMode !== "inline") showDisplayMode("inline");
    if (this.frame) this.frame.remove();
    this.frame = null;
    await this.client.close();
    // A view outside a chat takes what it attached with it: the composer reads again.
    if (this.modelContext && !this.client.sessionId) hooks.onModelContext(this);
  }
}
