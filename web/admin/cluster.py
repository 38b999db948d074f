"""`GET /admin/cluster`: every supervisor that shares the session store, when each was last
seen and what its apps are doing. One gone silent is marked, not dropped (the store forgets it
only after a day)."""

from __future__ import annotations

from typing import Any

from quart import Blueprint

from actors.chat.sessionstore import ReplicaSeen, StoreError
from actors.messages import GetCluster, HubMessage
from actors.runtime import ASK_TIMEOUT_S, AskTimeout, Mailbox, ask
from web.errors import json_error

SILENT_AFTER_S = 15.0  # three heartbeats missed


def replica_json(replica: ReplicaSeen) -> dict[str, Any]:
    return {
        "id": replica.id,
        "url": replica.url,
        "version": replica.version,
        "started": replica.started,
        "lastSeen": replica.last_seen,
        "silent": replica.silent_s > SILENT_AFTER_S,
        "apps": [{"id": app, "state": state} for app, state in replica.apps],
    }


def cluster_blueprint(chats: Mailbox[HubMessage]) -> Blueprint:
    cluster = Blueprint("cluster", __name__)

    @cluster.get("/admin/cluster")
    async def replicas() -> Any:
        try:
            seen: list[ReplicaSeen] = await ask(chats, GetCluster, ASK_TIMEOUT_S)
        except (StoreError, AskTimeout) as error:
            return json_error(503, "unavailable", f"the cluster cannot be read: {error}")
        return {"replicas": [replica_json(r) for r in seen]}

    return cluster
