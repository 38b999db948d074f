"""`/apps/settings/<appId>`: an app's structured settings over HTTP, for the control page's
settings page and for scripts.

- `GET` reads them (the app's read tool, called with `{}`) and answers the page's groups.
- `POST` with `{"set": {name: value, ...}}` checks each value against the setting's schema (a
  bad one is a 400 naming it, and the app never sees it), then sends the app's update tool only
  the settings whose value changed, as `{"set": ...}`.
- `POST .../actions/<tool>` runs one of the layout's tool actions with `{}`.

The routes own no state: the settings live in the app; each request reads them afresh.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from quart import Blueprint, request

from actors.catalog import Catalog
from actors.messages import AppStatus, RegistryMessage, Snapshot
from actors.runtime import ASK_TIMEOUT_S, Mailbox, ask
from supervisor.model import jsonin
from supervisor.model.errors import (
    BadRequest,
    Conflict,
    McpappsError,
    NotFound,
    UnusableAnswer,
    WrongMediaType,
)
from supervisor.model.lifecycle import AppState
from web.plugins.calling import call_app_tool, catalog_of
from web.plugins.offers import (
    SETTINGS,
    SettingsOffer,
    has_view,
    result_text,
    settings_offer,
    tool_named,
)
from web.plugins.settingsform import (
    BadSetting,
    Settings,
    changes,
    layout_tools,
    page,
    read_settings,
)


def settings_blueprint(registry: Mailbox[RegistryMessage]) -> Blueprint:
    routes = Blueprint("settings", __name__)

    async def current(app_id: str) -> tuple[Catalog, SettingsOffer, Settings]:
        catalog = await catalog_of(registry, app_id)
        offer = settings_offer(app_id, catalog)
        if offer is None:
            raise NotFound(
                f"app '{app_id}' offers no settings (it declares no {SETTINGS} capability;"
                " an app that is not Running declares nothing)",
                code="no_settings",
            )
        if offer.problem is not None:
            raise Conflict(offer.problem, code="settings_refused")
        result = await call_app_tool(registry, app_id, offer.read_tool, {})
        return catalog, offer, read_settings(app_id, offer.read_tool, result)

    @routes.get("/apps/settings")
    async def offers() -> Any:
        """Which Running apps offer settings, and why an offer is not used: what the page
        needs to show a "Settings" button on an app's card."""
        statuses: tuple[AppStatus, ...] = await ask(registry, Snapshot, ASK_TIMEOUT_S)
        listed = []
        for status in statuses:
            if status.state is not AppState.RUNNING:
                continue
            try:
                offer = settings_offer(status.id, await catalog_of(registry, status.id))
            except McpappsError:
                continue  # stopped since the snapshot
            if offer is not None:
                listed.append({"app": status.id, "problem": offer.problem})
        return {"apps": listed}

    @routes.get("/apps/settings/<app_id>")
    async def read(app_id: str) -> Any:
        catalog, offer, settings = await current(app_id)
        shown = page(app_id, settings, catalog)
        return {**shown, "readTool": offer.read_tool, "updateTool": offer.update_tool}

    @routes.post("/apps/settings/<app_id>")
    async def update(app_id: str) -> Any:
        wanted = _set_of(await _json_body())
        _, offer, settings = await current(app_id)
        changed = changes(settings, wanted)
        if not changed:
            return {"app": app_id, "values": dict(settings.values), "changed": []}
        result = await call_app_tool(registry, app_id, offer.update_tool, {"set": changed})
        if result.get("isError"):
            raise UnusableAnswer(
                f"app '{app_id}' refused the change of {', '.join(changed)}:"
                f" {result_text(result) or 'no details given'}",
                code="update_failed",
            )
        data = result.get("structuredContent")
        values = data.get("values") if isinstance(data, Mapping) else None
        if not isinstance(values, Mapping):
            values = {**settings.values, **changed}  # the app said nothing back: as asked
        return {"app": app_id, "values": dict(values), "changed": list(changed)}

    @routes.post("/apps/settings/<app_id>/actions/<tool>")
    async def action(app_id: str, tool: str) -> Any:
        await request.get_data()  # read, whatever it holds: the action takes no arguments
        catalog, _, settings = await current(app_id)
        if tool not in layout_tools(settings):
            raise NotFound(
                f"app '{app_id}' offers no settings action '{tool}': its settings layout"
                " names the tools a settings page may run",
                code="unknown_action",
            )
        result = await call_app_tool(registry, app_id, tool, {})
        found = tool_named(catalog, tool) or {}
        answer: dict[str, Any] = {
            "app": app_id,
            "tool": tool,
            "text": result_text(result),
            "isError": bool(result.get("isError")),
        }
        if has_view(found) and not result.get("isError"):
            uri = found["_meta"]["ui"]["resourceUri"]
            answer["view"] = {"app": app_id, "tool": tool, "resourceUri": uri, "result": result}
        return answer

    return routes


async def _json_body() -> Any:
    body = await request.get_data()
    if request.mimetype != "application/json":
        raise WrongMediaType("send the settings as JSON, with 'Content-Type: application/json'")
    try:
        return jsonin.loads(body)
    except jsonin.JSONInputError as error:
        raise BadRequest(str(error)) from None


def _set_of(body: Any) -> Any:
    if not isinstance(body, Mapping) or set(body) != {"set"}:
        raise BadSetting(
            'the body must be {"set": {<setting>: <value>, ...}} and nothing else', None
        )
    return body["set"]
