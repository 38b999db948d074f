"""The admin API and `/metrics`: what `mcpapps apps|call|restart|logs` talk to.

Everything is JSON, errors included. The routes own no state: each one asks the registry, which
answers itself or hands the question to the app's actor. Access (token, Host, Origin) is checked
before a request gets here (`web.asgi`).
"""

from __future__ import annotations

import contextlib
from typing import Any

import attrs
import cattrs
import trio
from cattrs.gen import make_dict_unstructure_fn, override
from quart import Blueprint, Response, request

from actors.catalog import Catalog
from actors.chat.bridge import ToolBridge, format_result
from actors.messages import (
    AppError,
    AppStatus,
    AppUnavailable,
    CallFailed,
    CallTimeout,
    GetCatalog,
    GetStatus,
    GetToolReport,
    RegistryMessage,
    Restart,
    SignInRefused,
    SignOut,
    Snapshot,
    Start,
    Stop,
    ToApp,
    UnknownApp,
    UnknownTool,
)
from actors.metrics import CONTENT_TYPE, Metrics
from actors.runtime import ASK_TIMEOUT_S, AskTimeout, Mailbox, Overloaded, ask
from supervisor.model import jsonin
from supervisor.model.manifest import camel
from supervisor.model.reload import Reload, ReloadDiff, ReloadRefused
from supervisor.model.structuring import show
from web.errors import json_error, retry_after

# The actors always answer in the end (a stop ladder and a tool call have their own deadlines);
# these bounds only keep a request from waiting forever on an actor that is gone.
CONTROL_TIMEOUT_S = 600.0
CALL_TIMEOUT_S = 3600.0 + 60.0  # the longest requestTimeoutSeconds, and a margin
_COMMANDS = {"start": Start, "stop": Stop, "restart": Restart, "logout": SignOut}
_CALL_KEYS = ("name", "arguments")
# How an error about an app or a tool reads over HTTP: status and code.
_ERRORS: tuple[tuple[type[Exception], int, str], ...] = (
    (UnknownApp, 404, "unknown_app"),
    (UnknownTool, 404, "unknown_tool"),
    (AppUnavailable, 503, "app_unavailable"),
    (CallTimeout, 504, "timeout"),
    (CallFailed, 502, "call_failed"),
    (SignInRefused, 409, "no_sign_in"),
    (AppError, 500, "app_error"),
)


def admin_blueprint(
    registry: Mailbox[RegistryMessage], metrics: Metrics, *, reload: Reload | None = None
) -> Blueprint:
    admin = Blueprint("admin", __name__)

    @admin.get("/admin/apps")
    async def apps() -> Any:
        return {"apps": [status_json(s) for s in await current_statuses(registry)]}

    @admin.get("/admin/apps/<app_id>")
    async def app(app_id: str) -> Any:
        status = await _ask_app(registry, app_id, GetStatus, ASK_TIMEOUT_S)
        catalog = await _catalog(registry, app_id)
        rows = await ask(registry, GetToolReport, ASK_TIMEOUT_S)
        tools = [row.json() for row in rows if row.app_id == app_id]
        detail = {**status_json(status, stderr=True), "catalog": catalog_json(catalog)}
        return {**detail, "tools": tools}

    @admin.get("/admin/tools")
    async def tools() -> Any:
        rows = await ask(registry, GetToolReport, ASK_TIMEOUT_S)
        return {"tools": [row.json() for row in rows]}

    @admin.post("/admin/apps/<app_id>/<any(start, stop, restart, logout):command>")
    async def control(app_id: str, command: str) -> Any:
        try:
            status = await _ask_app(registry, app_id, _COMMANDS[command], CONTROL_TIMEOUT_S)
        except AppUnavailable as error:
            # Only an app that is never run (disabled, invalid, a duplicate) refuses these.
            return json_error(409, "app_cannot_run", error.message)
        return {"app": status_json(status)}

    @admin.post("/admin/reload")
    async def reload_route() -> Any:
        if reload is None:
            return json_error(501, "not_implemented", "this server cannot reload")
        try:
            diff = await reload("POST /admin/reload")
        except ReloadRefused as error:
            return json_error(503, "shutting_down", str(error))
        return reload_response(diff)

    @admin.post("/admin/call")
    async def call() -> Any:
        # Read first, whatever the answer: no unread body is left on a kept-alive connection.
        body = await request.get_data()
        if request.mimetype != "application/json":
            return json_error(
                415,
                "unsupported_media_type",
                "send the call as JSON, with 'Content-Type: application/json'",
            )
        try:
            name, arguments = parse_call(body)
        except ValueError as error:
            return json_error(400, "bad_request", str(error))
        bridge = ToolBridge(registry, timeout=CALL_TIMEOUT_S)
        tool, result = await bridge.call_raw(name, arguments)
        text = format_result(
            result,
            app_id=tool.app_id,
            tool=tool.public_name,
            has_ui=tool.ui_resource_uri is not None,
        )
        return {
            "name": tool.public_name,
            "app": tool.app_id,
            "text": text,
            "isError": bool(result.get("isError")),
            "result": result,
        }

    @admin.get("/metrics")
    async def metrics_page() -> Any:
        page = metrics.render(await current_statuses(registry))
        return Response(page, content_type=CONTENT_TYPE)

    @admin.errorhandler(AppError)
    async def app_error(error: AppError) -> Any:
        status, code = next((s, c) for kind, s, c in _ERRORS if isinstance(error, kind))
        response = json_error(status, code, error.message)
        for name, value in retry_after(getattr(error, "retry_at", None)):
            response.headers[name.decode()] = value.decode()
        return response

    @admin.errorhandler(AskTimeout)
    @admin.errorhandler(Overloaded)
    async def busy(error: Exception) -> Any:
        return json_error(503, "busy", f"the supervisor could not answer: {error}")

    return admin


def _status_converter() -> cattrs.Converter:
    converter = cattrs.Converter()
    renames = {a.name: override(rename=camel(a.name)) for a in attrs.fields(AppStatus)}
    # Counts are keyed by catalog part, in the same spelling as the catalog's keys.
    renames["counts"] = override(unstruct_hook=lambda c: {camel(k): n for k, n in c.items()})
    converter.register_unstructure_hook(
        AppStatus,
        make_dict_unstructure_fn(AppStatus, converter, **renames),  # type: ignore[arg-type]
    )
    return converter


_converter = _status_converter()


def status_json(status: AppStatus, *, stderr: bool = False) -> dict[str, Any]:
    """An app's status with the API's camelCase names; the stderr tail only when asked for (it
    is up to 200 lines per app, too much for a listing)."""
    data: dict[str, Any] = _converter.unstructure(status)
    stderr_lines = data.pop("stderr")
    if stderr:
        data["stderr"] = list(stderr_lines)
    data["errors"] = list(data["errors"])
    return data


def diff_json(diff: ReloadDiff) -> dict[str, Any]:
    return {
        "started": list(diff.started),
        "stopped": list(diff.stopped),
        "restarted": list(diff.restarted),
        "stillStopped": list(diff.still_stopped),
        "unchanged": list(diff.unchanged),
        "refused": [{"app": r.app, "problems": list(r.problems)} for r in diff.refused],
        "needsRestart": list(diff.needs_restart),
        "configProblems": list(diff.config_problems),
    }


def reload_response(diff: ReloadDiff) -> Any:
    """The diff; when the config itself was refused, a 422 whose body is the diff as well."""
    if not diff.config_refused:
        return diff_json(diff)
    problems = list(diff.config_problems)
    error = {
        "code": "config_refused",
        "message": "the config cannot be loaded, so nothing was changed: " + "; ".join(problems),
        "problems": problems,
    }
    return {"error": error, **diff_json(diff)}, 422


def catalog_json(catalog: Catalog) -> dict[str, Any]:
    return {
        "tools": list(catalog.tools),
        "resources": list(catalog.resources),
        "resourceTemplates": list(catalog.resource_templates),
        "prompts": list(catalog.prompts),
    }


def parse_call(body: str | bytes) -> tuple[str, dict[str, Any]]:
    """The public name and arguments of a `POST /admin/call` body; a ValueError says exactly
    what is wrong with it."""
    data = jsonin.loads(body)
    if not isinstance(data, dict):
        raise ValueError(
            'the body must be a JSON object {"name": "<tool>", "arguments": {...}},'
            f" got {show(data)}"
        )
    unknown = sorted(set(data) - set(_CALL_KEYS))
    if unknown:
        raise ValueError(f"unknown key '{unknown[0]}' in the body (the keys are name, arguments)")
    name = data.get("name")
    if not isinstance(name, str) or not name:
        got = "nothing" if name is None else show(name)
        raise ValueError(
            f"'name' must be the tool's public name (such as 'grocery.get_stores'), got {got}"
        )
    arguments = data.get("arguments")
    if arguments is None:
        return name, {}
    if not isinstance(arguments, dict):
        raise ValueError(f"'arguments' must be a JSON object, got {show(arguments)}")
    return name, arguments


async def current_statuses(registry: Mailbox[RegistryMessage]) -> list[AppStatus]:
    """Every app's status as its actor has it now. The registry's copy is as of the app's last
    state change, and the calls in flight and the stderr tail move in between; an actor that
    cannot answer keeps the registry's copy."""
    listed = await ask(registry, Snapshot, ASK_TIMEOUT_S)
    fresh = list(listed)

    async def refresh(i: int, app_id: str) -> None:
        with contextlib.suppress(AppError, AskTimeout, Overloaded):
            fresh[i] = await _ask_app(registry, app_id, GetStatus, ASK_TIMEOUT_S)

    async with trio.open_nursery() as nursery:
        for i, status in enumerate(listed):
            nursery.start_soon(refresh, i, status.id)
    return fresh


async def _ask_app(
    registry: Mailbox[RegistryMessage], app_id: str, command: Any, timeout: float
) -> Any:
    return await ask(registry, lambda reply: ToApp(app_id, command(reply)), timeout)


async def _catalog(registry: Mailbox[RegistryMessage], app_id: str) -> Catalog:
    """What the app offers now; nothing when it is not run at all."""
    try:
        return await _ask_app(registry, app_id, GetCatalog, ASK_TIMEOUT_S)
    except AppUnavailable:
        return Catalog()
