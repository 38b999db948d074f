// The control page: the apps with their live state (from /admin/events), their tools, start /
// stop / restart, sign in and out (apps with auth = "oauth"), the stderr tail, the workspace's
// files, the chat pane, and the app canvas (the view host, host/). This module only starts the page: it connects
// the view host to the chat and the dialogs, then reads what the page shows, in order.
import { loadApps, loadTools } from "./apps.js";
import { approve, confirm } from "./approvals.js";
import { connectHost, showRefusal } from "./canvas.js";
import { askInChat, startChat } from "./chat.js";
import { watchReplicas } from "./cluster.js";
import { loadStderr } from "./detail.js";
import { $ } from "./dom.js";
import { connectEvents } from "./events.js";
import { openLinkedFile, showFiles } from "./files.js";
import { restoreChat } from "./history.js";
import { openLinkedView } from "./linkedview.js";
import { loginShown } from "./login.js";
import { selectDefault } from "./select.js";
import { state } from "./state.js";
import { noteAppEvent } from "./viewnotes.js";
import { refreshContext, watchContext } from "./modelcontext.js";
import { viewMessage } from "./viewmessage.js";
import { connectCards, loadSettingsOffers } from "./plugincards.js";
import { watchComposer } from "./mentions.js";
import { linkedSettings, openSettings } from "./settings.js";
import { loadEntryPoints, openLinkedEntry } from "./entrypoints.js";
import { openLinkedTab } from "./threadtabs.js";

connectHost({
  confirm,
  approve,
  ask: askInChat,
  onMessage: viewMessage,
  onModelContext: () => refreshContext().catch(() => {}),
  onAppEvent: noteAppEvent,
});
connectCards({ startChat });
watchComposer();
watchContext();

async function start() {
  try {
    await loadApps();
  } catch (error) {
    if (loginShown()) return;
    $("live").textContent = error.message;
    return;
  }
  $("main").hidden = false;
  await connectEvents({ first: true });
  await loadTools().catch(() => {});
  await loadSettingsOffers().catch(() => {});
  if (linkedSettings()) openSettings(linkedSettings());
  watchReplicas();
  if (state.apps.has(state.selected)) loadStderr(state.selected);
  else await selectDefault().catch(() => {});
  await showFiles().catch((error) => console.error(`the Files pane: ${error.message}`));
  await restoreChat().catch(() => {});
  await refreshContext().catch(() => {});
  await openLinkedView().catch((error) => showRefusal(error.message));
  openLinkedFile();
  await loadEntryPoints().catch(() => {});
  await openLinkedEntry();
  await openLinkedTab();
}

start();
