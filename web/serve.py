"""Runs the front door in the supervisor's nursery: Hypercorn's Trio worker serving `FrontDoor`,
the SDK session managers of the MCP endpoints, and the task that turns the registry's facts
into notifications for connected clients."""

from __future__ import annotations

import contextlib
import logging
import math
from typing import Any

import hypercorn.trio
import trio
from hypercorn.config import Config as HypercornConfig

from actors.messages import (
    AppNotification,
    CatalogChanged,
    Snapshot,
    ToolTableChanged,
    Watch,
)
from actors.runtime import Mailbox, ask
from actors.upstream import Catalog
from supervisor.config import Config, url_host
from supervisor.metrics import Metrics
from web.asgi import FrontDoor
from web.endpoints import AggregateEndpoint, AppEndpoint
from web.routes import create_app
from web.sandbox import serve_sandbox
from web.security import AccessPolicy

logger = logging.getLogger("mcpapps.web")

GRACEFUL_S = 5.0  # how long open requests may take to finish on shutdown
WATCH_BUFFER = 1024
_LIST_CHANGED = {
    "tools": "notifications/tools/list_changed",
    "resources": "notifications/resources/list_changed",
    "resource_templates": "notifications/resources/list_changed",
    "prompts": "notifications/prompts/list_changed",
}


async def serve_front_door(
    config: Config,
    policy: AccessPolicy,
    registry: Mailbox[Any],
    *,
    chats: Mailbox[Any],
    metrics: Metrics,
    shutdown: trio.Event,
    close: trio.Event,
    task_status: trio.TaskStatus[list[str]] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve until `shutdown` is set: then take no new connections, let open requests go on
    (calls in flight get their answers while the apps drain) until `close` is set, end the
    open streams cleanly, and return once no request is open, cancelling what is left after
    `GRACEFUL_S`. (A client that stops reading can hold a write that cannot be cancelled: the
    supervisor does not wait for it, see `supervisor.run`.)"""
    statuses = await ask(registry, Snapshot)
    apps = {s.id: AppEndpoint(s.id, registry) for s in statuses}
    aggregate = AggregateEndpoint(registry)
    sandbox = config.sandbox.origin if config.sandbox.enabled else None
    routes = create_app(registry, policy, sandbox, chats=chats, metrics=metrics)
    front_door = FrontDoor(policy, registry, routes, apps, aggregate)

    hyper = HypercornConfig()
    hyper.bind = [f"{url_host(config.server.host)}:{config.server.port}"]
    # Not Hypercorn's to cut: open requests (chat turns, calls) end as the supervisor stops the
    # chats and the apps, each within its grace, and this function cancels the rest.
    hyper.graceful_timeout = math.inf
    hyper.accesslog = None
    # Clients reuse an idle connection for up to 5 s (httpx, so the SDK's client): closing idle
    # ones at Hypercorn's default 5 s would race them and lose a request now and then.
    hyper.keep_alive_timeout = 75.0
    hyper.errorlog = logging.getLogger("mcpapps.web.hypercorn")

    facts_in, facts = trio.open_memory_channel[Any](WATCH_BUFFER)
    registry.tell(Watch(facts_in))
    async with (
        facts_in,
        facts,
        trio.open_nursery() as nursery,
        contextlib.AsyncExitStack() as stack,
    ):
        for endpoint in [aggregate, *apps.values()]:
            await stack.enter_async_context(endpoint.manager.run())
        nursery.start_soon(_relay_facts, facts, apps, aggregate)
        if config.sandbox.enabled:
            sandbox_binds = await nursery.start(serve_sandbox, config, shutdown)
            logger.info("app sandbox listening on %s", ", ".join(sandbox_binds))
        binds = await nursery.start(
            lambda task_status: hypercorn.trio.serve(
                front_door, hyper, shutdown_trigger=shutdown.wait, task_status=task_status
            )
        )
        logger.info("front door listening on %s", ", ".join(binds))
        task_status.started(binds)
        await shutdown.wait()
        await close.wait()
        for endpoint in [aggregate, *apps.values()]:
            endpoint.audience.listen.close()  # 2026-07-28 listen streams end gracefully
        # Ending the session managers ends every session and its standing stream (not under
        # a deadline of its own: their task groups must close in the scope they opened in).
        await stack.aclose()
        # Once no request is open, the connections left are idle, and Hypercorn (which does
        # not close idle ones here) and the fact relay can be cancelled.
        with trio.move_on_after(GRACEFUL_S):
            while front_door.open_requests:
                await trio.sleep(0.05)
        nursery.cancel_scope.cancel()


async def _relay_facts(
    facts: trio.MemoryReceiveChannel[Any],
    apps: dict[str, AppEndpoint],
    aggregate: AggregateEndpoint,
) -> None:
    """Registry facts → notifications: an app's catalog changes (including by a restart) tell
    its clients which lists to fetch again; its other notifications pass through; a change of
    the tool table tells the clients of `/mcp`."""
    seen: dict[str, Catalog] = {}
    async with trio.open_nursery() as nursery:
        async for fact in facts:
            match fact:
                case CatalogChanged(app_id, catalog) if app_id in apps:
                    before = seen.get(app_id, Catalog())
                    seen[app_id] = catalog
                    apps[app_id].server.input_schemas.clear()
                    apps[app_id].server.input_schemas.update(_input_schemas(catalog))
                    if catalog == Catalog():
                        continue  # the app went down; its return announces the new lists
                    methods = {
                        method
                        for field, method in _LIST_CHANGED.items()
                        if getattr(before, field) != getattr(catalog, field)
                    }
                    for method in sorted(methods):
                        nursery.start_soon(apps[app_id].audience.notify, method, None)
                case AppNotification(app_id, method, params) if app_id in apps:
                    nursery.start_soon(apps[app_id].audience.notify, method, params)
                case ToolTableChanged(table):
                    schemas = {tool.public_name: tool.input_schema for tool in table.tools}
                    aggregate.server.input_schemas.clear()
                    aggregate.server.input_schemas.update(schemas)
                    nursery.start_soon(
                        aggregate.audience.notify, "notifications/tools/list_changed", None
                    )


def _input_schemas(catalog: Catalog) -> dict[str, Any]:
    return {
        tool["name"]: tool["inputSchema"]
        for tool in catalog.tools
        if isinstance(tool.get("name"), str) and isinstance(tool.get("inputSchema"), dict)
    }
