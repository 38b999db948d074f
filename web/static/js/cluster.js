// The supervisors that share the session store, and when each was last seen (GET
// /admin/cluster), read again every 10 s.
import * as api from "./api.js";
import { $, el } from "./dom.js";

const EVERY_MS = 10000;

async function loadReplicas() {
  const body = await api.listReplicas();
  const now = Date.now() / 1000;
  $("replicas").replaceChildren(...body.replicas.map((r) => {
    const running = r.apps.filter((a) => a.state === "Running").length;
    const ago = Math.max(0, Math.round(now - r.lastSeen));
    const seen = r.silent ? `silent, last seen ${ago} s ago` : `seen ${ago} s ago`;
    return el("li", { class: r.silent ? "replica silent" : "replica", "data-id": r.id },
      `${r.id} — ${r.url} — ${running} app(s) running — ${seen}`);
  }));
}

export function watchReplicas() {
  loadReplicas().catch(() => {});
  setInterval(() => loadReplicas().catch(() => {}), EVERY_MS);
}
