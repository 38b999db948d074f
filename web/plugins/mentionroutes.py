"""`GET /apps/mentions?q=<text>[&app=<appId>]`: the composer's @-mention search over every
Running app that offers one (`openai/mentions`, or the deprecated tool marker), or over one.

Each app's search tool is called with `{"query": q}` under its own deadline, all at once; an app
that is slow, fails, or answers with something that is not items is left out with the reason,
and so is one whose offer is not used (web/plugins/offers.py says which are not). The page asks
once per app to show each app's results as they come.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs
import trio
from quart import Blueprint, request

from actors.messages import AppStatus, RegistryMessage, Snapshot, UnknownApp
from actors.runtime import ASK_TIMEOUT_S, Mailbox, ask
from supervisor.model.errors import BadRequest, McpappsError
from supervisor.model.lifecycle import AppState
from web.plugins.calling import call_app_tool, catalog_of
from web.plugins.offers import MentionsOffer, mentions_offer, result_text

SEARCH_DEADLINE_S = 3.0  # per app: a composer's suggestions are worth little later than this
QUERY_MAX = 200
ITEMS_MAX = 25  # per app
_LINK_FIELDS = ("uri", "name", "title", "description", "mimeType")


@attrs.frozen
class Found:
    app: str
    items: tuple[dict[str, Any], ...] = ()
    skipped: str | None = None  # why this app has no results


def mentions_blueprint(registry: Mailbox[RegistryMessage]) -> Blueprint:
    routes = Blueprint("mentions", __name__)

    @routes.get("/apps/mentions")
    async def search() -> Any:
        query = request.args.get("q", "")
        wanted = request.args.get("app")
        if len(query) > QUERY_MAX:
            raise BadRequest(f"'q' is longer than {QUERY_MAX} characters")
        statuses: tuple[AppStatus, ...] = await ask(registry, Snapshot, ASK_TIMEOUT_S)
        if wanted is not None and not any(s.id == wanted for s in statuses):
            raise UnknownApp(wanted, f"there is no app '{wanted}'")
        running = [
            s.id
            for s in statuses
            if s.state is AppState.RUNNING and (wanted is None or s.id == wanted)
        ]
        found: list[Found | None] = [None] * len(running)

        async def one(index: int, app_id: str) -> None:
            found[index] = await search_app(registry, app_id, query)

        async with trio.open_nursery() as nursery:
            for index, app_id in enumerate(running):
                nursery.start_soon(one, index, app_id)
        results = [f for f in found if f is not None]
        return {
            "query": query,
            "results": [
                {"app": f.app, "items": list(f.items)} for f in results if f.skipped is None
            ],
            "skipped": [{"app": f.app, "reason": f.skipped} for f in results if f.skipped],
        }

    return routes


async def search_app(registry: Mailbox[RegistryMessage], app_id: str, query: str) -> Found | None:
    """The app's items for `query`; None when it offers no search at all."""
    try:
        offer: MentionsOffer | None = mentions_offer(app_id, await catalog_of(registry, app_id))
    except McpappsError:
        return None  # gone since the snapshot: nothing to search
    if offer is None:
        return None
    if offer.problem is not None:
        return Found(app_id, skipped=offer.problem)
    result = None
    with trio.move_on_after(SEARCH_DEADLINE_S):
        try:
            # The ask's own bound is later: the deadline above is the one that says why.
            result = await call_app_tool(
                registry, app_id, offer.search_tool, {"query": query}, SEARCH_DEADLINE_S + 5
            )
        except McpappsError as error:
            return Found(app_id, skipped=f"app '{app_id}' could not search: {error}")
    if result is None:
        return Found(
            app_id,
            skipped=f"app '{app_id}' did not answer its search '{offer.search_tool}' within"
            f" {SEARCH_DEADLINE_S:g} s",
        )
    if result.get("isError"):
        said = result_text(result) or "no details given"
        return Found(app_id, skipped=f"app '{app_id}' failed its search: {said}")
    data = result.get("structuredContent")
    items = data.get("items") if isinstance(data, Mapping) else None
    if not isinstance(items, list):
        return Found(app_id, skipped=f"app '{app_id}' answered its search with no 'items' list")
    links = [link for item in items if (link := resource_link(item)) is not None]
    return Found(app_id, tuple(links[:ITEMS_MAX]))


def resource_link(item: Any) -> dict[str, Any] | None:
    """An item of a search result as a resource link (the SDK's `resource` items, a URI and a
    title, become one too); None for anything that is neither."""
    if not isinstance(item, Mapping):
        return None
    if item.get("type") == "resource":
        uri, title = item.get("resourceUri"), item.get("title")
        item = {"uri": uri, "name": title, "title": title, "description": item.get("subtitle")}
    elif item.get("type") != "resource_link":
        return None
    if not all(isinstance(item.get(key), str) and item[key] for key in ("uri", "name")):
        return None
    link = {"type": "resource_link"}
    link.update({k: item[k] for k in _LINK_FIELDS if isinstance(item.get(k), str)})
    return link
