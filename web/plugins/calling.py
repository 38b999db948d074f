"""The host's own calls of an app's tools, by the app's tool name (not a public name: settings
and search tools are often hidden from the model). Each failure is a kind of the one family,
which web/errors.py words for HTTP."""

from __future__ import annotations

from typing import Any

import trio

from actors.catalog import Catalog, Wire
from actors.messages import (
    AppError,
    CallFailed,
    CallTimeout,
    GetCatalog,
    RegistryMessage,
    ToApp,
    UpstreamRequest,
)
from actors.runtime import ASK_TIMEOUT_S, Abandonment, AskTimeout, Mailbox, ask
from supervisor.model.errors import ActorUnavailable, McpappsError, Refusal, UpstreamTimeout

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
) -> Wire:
    """The app's raw result of `tools/call`; an `McpappsError` if it has none. A caller that
    gives up (cancelled, or out of time) cancels the call at the app."""
    abandoned = Abandonment()
    params = {"name": name, "arguments": arguments}
    try:
        return await ask(
            registry,
            lambda r: ToApp(app_id, UpstreamRequest("tools/call", params, r, None, abandoned)),
            timeout,
        )
    except (trio.Cancelled, AskTimeout) as error:
        abandoned.set()
        if isinstance(error, AskTimeout):
            raise CallTimeout(
                app_id, f"app '{app_id}' did not answer within {timeout:g} s"
            ) from None
        raise
    except UpstreamTimeout as error:
        raise CallTimeout(app_id, error_said(error)) from None
    except (AppError, Refusal, ActorUnavailable):
        raise
    except McpappsError as error:  # anything else on the way: the call failed
        raise CallFailed(app_id, error_said(error)) from None


def error_said(error: BaseException) -> str:
    return getattr(error, "message", None) or str(error)
