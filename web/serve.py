"""Runs the front door in the supervisor's nursery: Hypercorn's Trio worker serving `FrontDoor`,
the SDK session managers of the MCP endpoints, and the task that turns the registry's facts
into notifications for connected clients."""

from __future__ import annotations

import contextlib
import functools
import logging
import math
from typing import Any

import hypercorn.trio
import trio
from hypercorn.config import Config as HypercornConfig

from actors.catalog import Catalog
from actors.files.messages import WorkspaceMessage
from actors.messages import (
    AppNotification,
    CatalogChanged,
    HubMessage,
    RegistryMessage,
    Reloaded,
    Snapshot,
    StateChanged,
    ToolTableChanged,
    Watch,
)
from actors.metrics import Metrics
from actors.runtime import Mailbox, ask
from actors.tooltable import ToolTable
from actors.views.messages import CutShort, StopViews, ViewMessage
from supervisor.model.config import Config, url_host
from supervisor.model.limits import DEFAULT_LIMITS, LimitsConfig
from supervisor.model.reload import Reload
from web.apporigins import app_frames, ui_settings
from web.appstates import AppStates
from web.asgi import FrontDoor
from web.connections import isolate_connections
from web.mcpdoor.aggregate import AggregateEndpoint
from web.mcpdoor.endpoints import AppEndpoint
from web.mcpdoor.standing import StandingStreams
from web.mcpdoor.toolowners import ToolOwners
from web.routes import create_app
from web.sandbox import serve_sandbox
from web.security import AccessPolicy
from web.uiview import catalog_has_ui

logger = logging.getLogger("mcpapps.web")

GRACEFUL_S = 5.0  # how long open requests may take to finish on shutdown
WATCH_BUFFER = 1024
KEEP_ALIVE_MAX_REQUESTS = 1_000_000_000  # in effect: never
_LIST_CHANGED = {
    "tools": "notifications/tools/list_changed",
    "resources": "notifications/resources/list_changed",
    "resource_templates": "notifications/resources/list_changed",
    "prompts": "notifications/prompts/list_changed",
}


async def serve_front_door(
    config: Config,
    policy: AccessPolicy,
    registry: Mailbox[RegistryMessage],
    *,
    chats: Mailbox[HubMessage],
    views: Mailbox[ViewMessage],
    metrics: Metrics,
    shutdown: trio.Event,
    close: trio.Event,
    reload: Reload | None = None,
    replica: str = "",
    files: Mailbox[WorkspaceMessage] | None = None,
    task_status: trio.TaskStatus[list[str]] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve until `shutdown` is set: then take no new connections, let open requests go on
    (calls in flight get their answers while the apps drain) until `close` is set, end the
    open streams cleanly, and return once no request is open, cancelling what is left after
    `GRACEFUL_S`. (A client that stops reading can hold a write that cannot be cancelled: the
    supervisor does not wait for it, see `supervisor.process.run`.)"""
    statuses = await ask(registry, Snapshot)
    limits = config.limits
    apps = {s.id: AppEndpoint(s.id, registry, limits) for s in statuses}
    states = AppStates()
    owners = ToolOwners(states)
    aggregate = AggregateEndpoint(registry, limits, owners)
    sandbox = config.sandbox.origin if config.sandbox.enabled else None
    added = _AddedEndpoints(apps, registry, limits)

    async def reload_then_serve(why: str) -> Any:
        """A reload asked for over HTTP: the apps it started are served before it answers."""
        assert reload is not None
        diff = await reload(why)
        for app_id in diff.started:
            await added.add(app_id)
        return diff

    routes = create_app(
        registry,
        policy,
        sandbox,
        chats=chats,
        metrics=metrics,
        reload=reload_then_serve if reload is not None else None,
        public_url=config.server.public_url,
        views=views,
        files=files,
        ui_settings=functools.partial(ui_settings, config),
        app_frames=app_frames(config),
    )
    standing = StandingStreams()
    front_door = FrontDoor(
        policy, registry, routes, apps, aggregate, limits, states, owners, replica, standing
    )

    isolate_connections()  # a connection Hypercorn fails on ends alone (web/connections.py)
    hyper = HypercornConfig()
    hyper.bind = [f"{url_host(config.server.host)}:{config.server.port}"]
    # Not Hypercorn's to cut: open requests (chat turns, calls) end as the supervisor stops the
    # chats and the apps, each within its grace, and this function cancels the rest.
    hyper.graceful_timeout = math.inf
    hyper.accesslog = None
    # Clients reuse an idle connection for up to 5 s (httpx, so the SDK's client): closing idle
    # ones at Hypercorn's default 5 s would race them and lose a request now and then.
    hyper.keep_alive_timeout = limits.keep_alive_s
    hyper.errorlog = logging.getLogger("mcpapps.web.hypercorn")
    # No `server: hypercorn-h11` on every answer: it tells a scanner what to look for, and
    # costs both ends a header on every call. (`date` stays: RFC 9110 asks for it.)
    hyper.include_server_header = False
    # A kept-alive client (an agent's MCP session) is not made to reconnect every 1,000
    # requests (Hypercorn's default): the idle timeout above still closes idle connections.
    hyper.keep_alive_max_requests = KEEP_ALIVE_MAX_REQUESTS

    facts_in, facts = trio.open_memory_channel[Any](WATCH_BUFFER)
    registry.tell(Watch(facts_in))
    async with (
        facts_in,
        facts,
        trio.open_nursery() as nursery,
        contextlib.AsyncExitStack() as stack,
    ):
        endpoints: list[AppEndpoint | AggregateEndpoint] = [aggregate, *apps.values()]
        for endpoint in endpoints:
            await stack.enter_async_context(endpoint.manager.run())
        added.nursery = nursery
        await nursery.start(standing.run)
        nursery.start_soon(_relay_facts, facts, apps, aggregate, added, states, owners)
        if config.sandbox.enabled:
            sandbox_binds = await nursery.start(serve_sandbox, config, shutdown)
            logger.info("app sandbox listening on %s", ", ".join(sandbox_binds))
        binds = await nursery.start(
            lambda task_status: hypercorn.trio.serve(
                front_door,  # type: ignore[arg-type]  # hypercorn types the scope narrower
                hyper,
                shutdown_trigger=shutdown.wait,
                task_status=task_status,
            )
        )
        logger.info("front door listening on %s", ", ".join(binds))
        task_status.started(binds)
        await shutdown.wait()
        views.tell(StopViews())  # a call waiting for the person's approval is new work: not run
        await close.wait()
        views.tell(CutShort())  # a view's call that outlived the apps is answered with an error
        for endpoint in endpoints:
            endpoint.audience.listen.close()  # 2026-07-28 listen streams end gracefully
        # Ending the session managers ends every session and its standing stream (not under
        # a deadline of its own: their task groups must close in the scope they opened in).
        await added.aclose()
        await stack.aclose()
        # Once no request is open, the connections left are idle, and Hypercorn (which does
        # not close idle ones here) and the fact relay can be cancelled.
        with trio.move_on_after(GRACEFUL_S):
            while front_door.open_requests:
                await trio.sleep(0.05)
        nursery.cancel_scope.cancel()


class _AddedEndpoints:
    """`/apps/mcp/<id>` for the apps a reload starts: each one's session manager runs in a task
    of the front door until shutdown ends it with the others."""

    def __init__(
        self,
        apps: dict[str, AppEndpoint],
        registry: Mailbox[RegistryMessage],
        limits: LimitsConfig = DEFAULT_LIMITS,
    ) -> None:
        self._apps = apps
        self._registry = registry
        self._limits = limits
        self._end = trio.Event()
        self._running = 0
        self._ended = trio.Event()
        self.nursery: trio.Nursery | None = None

    async def add(self, app_id: str) -> None:
        if app_id in self._apps or self.nursery is None or self._end.is_set():
            return
        endpoint = AppEndpoint(app_id, self._registry, self._limits)
        self._apps[app_id] = endpoint
        await self.nursery.start(self._serve, endpoint)

    async def _serve(self, endpoint: AppEndpoint, task_status: trio.TaskStatus[None]) -> None:
        self._running += 1
        try:
            async with endpoint.manager.run():
                task_status.started()
                await self._end.wait()
        finally:
            self._running -= 1
            if not self._running:
                self._ended.set()

    async def aclose(self) -> None:
        self._end.set()
        if self._running:
            await self._ended.wait()


async def _relay_facts(
    facts: trio.MemoryReceiveChannel[Any],
    apps: dict[str, AppEndpoint],
    aggregate: AggregateEndpoint,
    added: _AddedEndpoints,
    states: AppStates,
    owners: ToolOwners,
) -> None:
    """Registry facts → notifications: an app's catalog changes (including by a restart) tell
    its clients which lists to fetch again; its other notifications pass through; a change of
    the tool table tells the clients of `/mcp`."""
    seen: dict[str, Catalog] = {}
    warned: set[str] = set()  # once per app: its manifest claims a UI its catalog does not show
    offered: ToolTable | None = None
    async with trio.open_nursery() as nursery:
        async for fact in facts:
            match fact:
                case StateChanged(status):
                    states.record(status)
                case CatalogChanged(app_id, catalog) if app_id in apps:
                    before = seen.get(app_id, Catalog())
                    seen[app_id] = catalog
                    apps[app_id].server.input_schemas.clear()
                    apps[app_id].server.input_schemas.update(_input_schemas(catalog))
                    if catalog == Catalog():
                        continue  # the app went down; its return announces the new lists
                    claims = (latest := states.get(app_id)) is not None and latest.has_ui
                    if claims and app_id not in warned and not catalog_has_ui(catalog):
                        warned.add(app_id)
                        logger.warning(_UNSERVED_UI, app_id)
                    methods = {
                        method
                        for field, method in _LIST_CHANGED.items()
                        if getattr(before, field) != getattr(catalog, field)
                    }
                    for method in sorted(methods):
                        nursery.start_soon(apps[app_id].audience.notify, method, None)
                case AppNotification(app_id, method, params, subscribers) if app_id in apps:
                    audience = apps[app_id].audience
                    nursery.start_soon(audience.notify, method, params, subscribers)
                case Reloaded(diff):
                    for app_id in diff.started:
                        await added.add(app_id)
                case ToolTableChanged(table):
                    owners.record(table)
                    schemas = {tool.public_name: tool.input_schema for tool in table.tools}
                    aggregate.server.input_schemas.clear()
                    aggregate.server.input_schemas.update(schemas)
                    for method in _aggregate_changes(offered, table):
                        nursery.start_soon(aggregate.audience.notify, method, None)
                    offered = table


_UNSERVED_UI = (
    "app %s says hasUi in its manifest but serves no UI: no tool's _meta.ui.resourceUri names a"
    " ui:// resource of type text/html;profile=mcp-app"
)


def _aggregate_changes(before: ToolTable | None, after: ToolTable) -> list[str]:
    """The list_changed notifications `/mcp` sends when its tool table becomes `after`."""
    if before is None:
        before = ToolTable()
    changed = []
    if before.tools != after.tools:
        changed.append("notifications/tools/list_changed")
    if before.offers.prompts != after.offers.prompts:
        changed.append("notifications/prompts/list_changed")
    old, new = before.offers, after.offers
    if old.resources != new.resources or old.templates != new.templates:
        changed.append("notifications/resources/list_changed")
    return changed


def _input_schemas(catalog: Catalog) -> dict[str, Any]:
    return {
        tool["name"]: tool["inputSchema"]
        for tool in catalog.tools
        if isinstance(tool.get("name"), str) and isinstance(tool.get("inputSchema"), dict)
    }
