"""What an app says of itself between requests: its notifications, passed on as facts, and its
list changes, after which its catalog is listed again (a burst of them coalesced into one
listing) and told as `CatalogChanged` once it is current.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import mcp_types as types
import trio
from mcp.shared.subscriptions import SUBSCRIPTION_ID_META_KEY

from actors.apps.upstream import Upstream, error_text
from actors.catalog import Catalog, Wire
from actors.messages import AppFact, AppNotification
from actors.runtime import Recipient
from supervisor.model.errors import UpstreamLost

logger = logging.getLogger("mcpapps.app")

_LIST_CHANGED = (
    types.ToolListChangedNotification,
    types.ResourceListChangedNotification,
    types.PromptListChangedNotification,
)


class Changes:
    """`on_catalog(catalog)` is told each catalog listed again; `subscribers(uri)` names the
    clients a resource's update goes to."""

    def __init__(
        self,
        app_id: str,
        events: Recipient[AppFact],
        on_catalog: Callable[[Catalog], None],
        subscribers: Callable[[str], frozenset[str]],
    ) -> None:
        self.app_id = app_id
        self._events = events
        self._on_catalog = on_catalog
        self._subscribers = subscribers
        self._stale = trio.Event()

    async def on_message(self, message: Any) -> None:
        """The SDK client's handler of what the app sends unasked (the handshake era)."""
        if isinstance(message, _LIST_CHANGED):
            # Clients hear of it once the catalog is current (CatalogChanged).
            self._stale.set()
        elif isinstance(message, Exception):
            logger.debug("app %s: transport reported %s", self.app_id, error_text(message))
        elif isinstance(message, types.ProgressNotification):
            pass  # the request it belongs to has it already (its `on_progress`)
        elif hasattr(message, "model_dump"):
            wire = message.model_dump(by_alias=True, mode="json", exclude_none=True)
            meta = (wire.get("params") or {}).get("_meta") or {}
            if SUBSCRIPTION_ID_META_KEY in meta:
                return  # a frame of our listen stream: `watch_changes` hands it on
            self._tell(wire["method"], wire.get("params"))

    def list_changed(self) -> None:
        self._stale.set()

    def resource_updated(self, uri: str) -> None:
        self._tell("notifications/resources/updated", {"uri": uri})

    def _tell(self, method: str, params: Wire | None) -> None:
        subscribers: frozenset[str] = frozenset()
        if method == "notifications/resources/updated":
            uri = (params or {}).get("uri")
            subscribers = self._subscribers(uri) if isinstance(uri, str) else frozenset()
        self._events.tell(AppNotification(self.app_id, method, params, subscribers))

    async def refresh(self, upstream: Upstream) -> None:
        """List the catalog again after each list change, while the incarnation lives. A
        broken connection raises (`UpstreamLost`): that is the incarnation's death."""
        while True:
            await self._stale.wait()
            self._stale = trio.Event()
            try:
                catalog = await upstream.catalog()
            except UpstreamLost:
                raise
            except Exception as error:
                logger.warning(
                    "app %s: refreshing the catalog failed: %s", self.app_id, error_text(error)
                )
                continue
            logger.info("app %s: catalog changed (%d tools)", self.app_id, len(catalog.tools))
            self._on_catalog(catalog)
