"""The entry points of the Running apps over HTTP, for the control page and for scripts:

    GET  /apps/entrypoints[?type=global|thread]   every entry point: app, tool, publicName, type,
                                                   title, icon, resourceUri
    GET  /apps/entrypoints/<publicName>[?path=/…] a global entry point and the host context a
                                                   deep link gives its view, without opening it
                                                   (a link followed to a view already open)
    POST /apps/entrypoints/<publicName>/open      open one: its tool called with `{}`
         body {"type"?: "global" | "thread", "path"?: "/…", "sessionId"?: "…"}

Opening answers what a view needs to show it without calling the tool again: the tool's result,
its `resourceUri`, and the host context the view gets at `ui/initialize` (a global entry
point's `openai/deepLink`, "/" when no `path` is given). A thread entry point opens in a chat
(`sessionId`, which its call carries as `_meta.sessionId`, as a view's calls do); `type` defaults
to "thread" when a session is given, else "global". Refusals are kinds of the error family: an
unknown entry point, a bad deep link, a thread entry point without a chat, and a tool that does
not accept `{}` (which the spec says it must), said with the app's own words when it answered.

The routes own no state: each request reads the catalogs afresh, as the settings routes do.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from quart import Blueprint, request

from actors.messages import AppStatus, CallFailed, GetToolReport, RegistryMessage, Snapshot
from actors.runtime import ASK_TIMEOUT_S, Mailbox, ask
from actors.toolreport import ToolRow
from supervisor.model import jsonin
from supervisor.model.errors import (
    BadRequest,
    Conflict,
    McpappsError,
    NotFound,
    Unparsable,
    WrongMediaType,
)
from supervisor.model.lifecycle import AppState
from web.chat.stream import SESSION_ID
from web.plugins.calling import call_app_tool, catalog_of
from web.plugins.entrypoints import DEEP_LINK, KINDS, EntryPoint, deep_link, entry_points
from web.plugins.offers import result_text, tool_named

_BODY = '{"type"?: "global" | "thread", "path"?: "/…", "sessionId"?: "…"}'


class EntryPointRefused(Conflict):
    """An entry point that cannot be opened as its app offers it now."""

    def __init__(self, message: str, entry: EntryPoint) -> None:
        super().__init__(
            message,
            code="entry_point_refused",
            data={"app": entry.app_id, "tool": entry.tool},
        )


async def list_entry_points(registry: Mailbox[RegistryMessage]) -> list[EntryPoint]:
    """Every entry point of every Running app, in discovery order. A public name two apps
    would share belongs to the app found first, as in the tool table."""
    statuses: tuple[AppStatus, ...] = await ask(registry, Snapshot, ASK_TIMEOUT_S)
    rows: tuple[ToolRow, ...] = await ask(registry, GetToolReport, ASK_TIMEOUT_S)
    owner: dict[str, tuple[str, str]] = {}
    for row in rows:
        owner.setdefault(row.public_name, (row.app_id, row.name))
    found: list[EntryPoint] = []
    for status in statuses:
        if status.state is not AppState.RUNNING:
            continue
        names = {name: public for public, (app, name) in owner.items() if app == status.id}
        try:
            catalog = await catalog_of(registry, status.id)
        except McpappsError:
            continue  # stopped since the snapshot
        found.extend(entry_points(status.id, catalog, names))
    return found


def entrypoints_blueprint(registry: Mailbox[RegistryMessage]) -> Blueprint:
    routes = Blueprint("entrypoints", __name__)

    @routes.get("/apps/entrypoints")
    async def listing() -> Any:
        wanted = request.args.get("type")
        if wanted is not None and wanted not in KINDS:
            raise BadRequest(f"'type' must be one of {list(KINDS)}, not '{wanted}'")
        found = await list_entry_points(registry)
        return {"entrypoints": [e.json() for e in found if wanted in (None, e.kind)]}

    @routes.get("/apps/entrypoints/<public_name>")
    async def link(public_name: str) -> Any:
        url = deep_link(request.args.get("path"))
        entry = _find(await list_entry_points(registry), public_name, "global")
        return {**entry.json(), "hostContext": {DEEP_LINK: {"url": url}}}

    @routes.post("/apps/entrypoints/<public_name>/open")
    async def open_entry(public_name: str) -> Any:
        kind, path, session = _open_body(await request.get_data(), request.mimetype)
        kind = kind or ("thread" if session else "global")
        if kind == "thread" and session is None:
            raise BadRequest(
                f"'{public_name}' opens as a thread entry point, in a chat: give the chat's"
                " 'sessionId'"
            )
        if kind == "thread" and path is not None:
            raise BadRequest("a deep link ('path') opens a global entry point, not a thread one")
        link = deep_link(path) if kind == "global" else None
        entry = _find(await list_entry_points(registry), public_name, kind)
        result = await _call(registry, entry, session)
        answer: dict[str, Any] = {
            **entry.json(),
            "sessionId": session,
            "result": result,
            "hostContext": {DEEP_LINK: {"url": link}} if link is not None else {},
        }
        return answer

    return routes


def _find(found: list[EntryPoint], public_name: str, kind: str) -> EntryPoint:
    entry = next((e for e in found if e.public_name == public_name and e.kind == kind), None)
    if entry is None:
        others = sorted({e.public_name for e in found if e.kind == kind})
        named = ", ".join(others[:10]) + (", …" if len(others) > 10 else "")
        raise NotFound(
            f"there is no {kind} entry point '{public_name}' among the Running apps"
            f" ({named or 'none has one'}); GET /apps/entrypoints lists them",
            code="unknown_entry_point",
        )
    return entry


async def _call(
    registry: Mailbox[RegistryMessage], entry: EntryPoint, session: str | None
) -> Mapping[str, Any]:
    """The entry point's tool called with `{}`; its result, or `EntryPointRefused`."""
    where = f"entry point '{entry.public_name}' (tool '{entry.tool}' of app '{entry.app_id}')"
    tool = tool_named(await catalog_of(registry, entry.app_id), entry.tool) or {}
    schema = tool.get("inputSchema")
    required = schema.get("required") if isinstance(schema, Mapping) else None
    if isinstance(required, list) and required:
        raise EntryPointRefused(
            f"{where} cannot open: an entry point's tool is called with no arguments ({{}}), and"
            f" this one requires {', '.join(map(str, required))}. The app must accept {{}}.",
            entry,
        )
    meta = {"sessionId": session} if session else None
    try:
        result = await call_app_tool(registry, entry.app_id, entry.tool, {}, meta=meta)
    except CallFailed as error:  # the app answered with an error (a down app is said as such)
        raise EntryPointRefused(f"{where} did not open: {error.message}", entry) from None
    if result.get("isError"):
        said = result_text(result) or "no details given"
        raise EntryPointRefused(
            f"{where} did not open: its tool refused to be called with {{}} ({said}). An entry"
            " point's tool must accept {}.",
            entry,
        )
    return result


def _open_body(body: str | bytes, mimetype: str) -> tuple[str | None, str | None, str | None]:
    if not body.strip():
        return None, None, None
    if mimetype != "application/json":
        raise WrongMediaType("send the body as JSON, with 'Content-Type: application/json'")
    try:
        parsed = jsonin.loads(body)
    except jsonin.JSONInputError as error:
        raise Unparsable(str(error)) from None
    if not isinstance(parsed, Mapping) or set(parsed) - {"type", "path", "sessionId"}:
        raise BadRequest(f"the body must be {_BODY}")
    kind, path, session = parsed.get("type"), parsed.get("path"), parsed.get("sessionId")
    if kind is not None and kind not in KINDS:
        raise BadRequest(f"'type' must be one of {list(KINDS)}")
    if path is not None and not isinstance(path, str):
        raise BadRequest("'path' must be a string: the app-relative URL, such as /parts")
    if session is not None and not (isinstance(session, str) and SESSION_ID.fullmatch(session)):
        raise BadRequest("'sessionId' is not a chat session id")
    return kind, path, session
