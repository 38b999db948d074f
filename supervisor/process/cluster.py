"""The heartbeat: every few seconds this supervisor tells the session store it is alive, where
it is and what its apps are doing; `GET /admin/cluster` reads every supervisor's back."""

from __future__ import annotations

import logging
import time

import trio

from actors.chat.sessionstore import ReplicaSeen, SessionStore, StoreError
from actors.messages import RegistryMessage, Snapshot
from actors.runtime import ASK_TIMEOUT_S, Mailbox, ask
from supervisor import __version__
from supervisor.model.errors import ActorUnavailable

logger = logging.getLogger("mcpapps.cluster")

HEARTBEAT_S = 5.0


async def heartbeat(
    store: SessionStore, registry: Mailbox[RegistryMessage], replica: str, url: str
) -> None:
    started = time.time()
    failing = False
    while True:
        try:
            statuses = await ask(registry, Snapshot, ASK_TIMEOUT_S)
            apps = tuple((s.id, s.state.value) for s in statuses)
            await store.heartbeat(ReplicaSeen(replica, url, __version__, started, apps))
            if failing:
                logger.info("heartbeat: the session store is reachable again")
            failing = False
        except (StoreError, ActorUnavailable) as error:
            if not failing:  # said once, not every few seconds
                logger.warning("heartbeat: %s", error)
            failing = True
        await trio.sleep(HEARTBEAT_S)
