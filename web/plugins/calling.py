"""The host's own calls of an app's tools, by the app's tool name (not a public name: settings
and search tools are often hidden from the model), and how their failures read over HTTP."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import trio

from actors.catalog import Catalog, Wire
from actors.messages import (
    AppUnavailable,
    CallTimeout,
    GetCatalog,
    RegistryMessage,
    ToApp,
    UnknownApp,
    UpstreamRequest,
)
from actors.runtime import ASK_TIMEOUT_S, Abandonment, AskTimeout, Mailbox, Overloaded, ask
from supervisor.model.errors import McpappsError, UpstreamTimeout
from web.errors import json_error

# A call the person waits for on a page: as long as a view's call may take.
CALL_TIMEOUT_S = 120.0


async def catalog_of(registry: Mailbox[RegistryMessage], app_id: str) -> Catalog:
    return await ask(registry, lambda r: ToApp(app_id, GetCatalog(r)), ASK_TIMEOUT_S)


async def call_app_tool(
    registry: Mailbox[RegistryMessage],
    app_id: str,
    name: str,
    arguments: dict[str, Any],
    timeout: float = CALL_TIMEOUT_S,
    meta: Mapping[str, Any] | None = None,
) -> Wire:
    """The app's raw result of `tools/call`; an `McpappsError` if it has none. A caller that
    gives up (cancelled, or out of time) cancels the call at the app."""
    abandoned = Abandonment()
    params: Wire = {"name": name, "arguments": arguments}
    if meta:
        params["_meta"] = dict(meta)
    try:
        return await ask(
            registry,
            lambda r: ToApp(app_id, UpstreamRequest("tools/call", params, r, None, abandoned)),
            timeout,
        )
    except (trio.Cancelled, AskTimeout):
        abandoned.set()
        raise


def failure_response(error: Exception) -> Any:
    """An app that could not be asked, as the HTTP answer says it."""
    message = getattr(error, "message", None) or str(error)
    if isinstance(error, UnknownApp):
        return json_error(404, "unknown_app", message)
    if isinstance(error, AppUnavailable | Overloaded):
        return json_error(503, "app_unavailable", message)
    if isinstance(error, CallTimeout | UpstreamTimeout | AskTimeout):
        return json_error(504, "timeout", message)
    if isinstance(error, McpappsError):
        return json_error(502, "call_failed", message)
    raise error
