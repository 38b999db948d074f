"""The messages actors exchange, and the errors callers get back. Requests carry their own
`Reply`; facts (`StateChanged`, `CatalogChanged`) are told and never answered."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import attrs
import trio

from actors.catalog import Catalog, Wire
from actors.runtime import Answer, Reply
from supervisor.model.errors import McpappsError
from supervisor.model.lifecycle import AppState


class AppError(McpappsError):
    """A request about an app could not be served; the message names the app and the cause."""

    def __init__(self, app_id: str | None, message: str) -> None:
        super().__init__(message)
        self.app_id = app_id
        self.message = message


class UnknownApp(AppError):
    pass


class UnknownTool(AppError):
    pass


class AppUnavailable(AppError):
    """The app is not Running, or its connection died while the request was in flight."""


class CallTimeout(AppError):
    pass


class CallFailed(AppError):
    """The app answered with a JSON-RPC error (kept in `rpc_error`, so that the front door can
    pass it on as it is), or the answer could not be used."""

    def __init__(self, app_id: str | None, message: str, rpc_error: Any = None) -> None:
        super().__init__(app_id, message)
        self.rpc_error = rpc_error  # mcp_types.ErrorData, or None


@attrs.frozen(kw_only=True)
class AppStatus:
    """What anyone may know about an app at one moment. Times are Unix seconds."""

    id: str
    name: str
    state: AppState
    entered_at: dict[str, float]  # state name → when it was last entered
    transport: str | None = None
    source: str | None = None
    url: str | None = None
    pid: int | None = None
    protocol_version: str | None = None
    counts: dict[str, int] = attrs.Factory(dict)
    has_ui: bool = False
    restarts: int = 0
    next_retry_at: float | None = None
    gave_up: bool = False
    last_error: str | None = None
    disabled_reason: str | None = None
    errors: tuple[str, ...] = ()
    stderr: tuple[str, ...] = ()
    in_flight: int = 0


# Requests to an app actor.


class Caller(Protocol):
    """The client behind an `UpstreamRequest`, as far as the app may reach it while the request
    is in flight: it can be asked (sampling, elicitation) and told of progress."""

    @property
    def on_progress(
        self,
    ) -> Callable[[float, float | None, str | None], Awaitable[None]] | None: ...

    @property
    def owner(self) -> str: ...  # the client's session: who holds a resource subscription

    async def ask(self, method: str, params: Wire) -> Wire: ...


@attrs.frozen
class UpstreamRequest:
    """Any MCP request, passed to the app's one upstream session as it is;
    answered with the app's result as it is."""

    method: str
    params: Wire | None
    reply: Answer[Wire]
    caller: Caller | None = None
    abandoned: trio.Event | None = None  # set when the caller gives up: the request is cancelled


@attrs.frozen
class ReleaseSubscriptions:
    """The client `owner` is gone: its resource subscriptions end."""

    owner: str


@attrs.frozen
class GetStatus:
    reply: Reply[AppStatus]


@attrs.frozen
class GetCatalog:
    reply: Reply[Catalog]


@attrs.frozen
class Start:
    """Start the app if it is not running; clears `gave_up` (an operator's restart)."""

    reply: Reply[AppStatus]


@attrs.frozen
class Stop:
    reply: Reply[AppStatus]
    grace: bool = True  # let calls in flight finish for up to stop_grace_s first


@attrs.frozen
class Drain:
    """Refuse new calls and wait up to stop_grace_s for those in flight (the first half of a
    shutdown, sent to every app at once)."""

    reply: Reply[AppStatus]


@attrs.frozen
class Restart:
    reply: Reply[AppStatus]


# Facts an app actor tells the registry.


@attrs.frozen
class StateChanged:
    status: AppStatus


@attrs.frozen
class CatalogChanged:
    app_id: str
    catalog: Catalog


@attrs.frozen
class AppNotification:
    """A notification the app sent that its clients may want (logging, resources/updated,
    progress no request claimed); list changes arrive as `CatalogChanged` instead. For
    `resources/updated`, `subscribers` are the clients subscribed to that resource, as the app
    actor (which owns the subscriptions) knows them: the front door sends it to those only."""

    app_id: str
    method: str
    params: Wire | None
    subscribers: frozenset[str] = frozenset()


# Requests to the registry.


@attrs.frozen
class Watch:
    """Send every fact about the apps (`StateChanged`, `CatalogChanged`, `AppNotification`,
    `ToolTableChanged`) to `channel` from now on, until it is closed. A watcher that falls
    behind loses facts rather than slowing the registry."""

    channel: trio.MemorySendChannel[Any]


@attrs.frozen
class ToolTableChanged:
    table: Any  # actors.tooltable.ToolTable


@attrs.frozen
class ToApp:
    """Route `message` (a request to an app actor) to the app `app_id`."""

    app_id: str
    message: AppMessage


@attrs.frozen
class CallPublicTool:
    public_name: str  # a public name or its alias
    arguments: dict[str, Any]
    reply: Answer[tuple[Any, Wire]]  # (the PublicTool called, the raw result)
    meta: dict[str, Any] | None = None
    caller: Caller | None = None
    abandoned: trio.Event | None = None  # set when the caller gives up: the call is cancelled
    resumed: Wire | None = None  # a 2026-07-28 retry's inputResponses and requestState


@attrs.frozen
class GetToolTable:
    reply: Reply[Any]


@attrs.frozen
class Lookup:
    """The registry's latest status of one app (no app actor is asked); `UnknownApp` if there
    is no such app."""

    app_id: str
    reply: Reply[AppStatus]


@attrs.frozen
class Snapshot:
    reply: Reply[tuple[AppStatus, ...]]


@attrs.frozen
class StopAll:
    """Stop every app in reverse start order (shutdown)."""

    reply: Reply[None]


# Reload: the registry applies the difference between what runs and a new discovery.


@attrs.frozen
class ApplyReload:
    """Start, stop and restart apps so that the registry runs what `discovery` describes
    (a `supervisor.model.discovery.Discovery`); answered with the
    `supervisor.model.reload.ReloadDiff`."""

    discovery: Any
    reply: Reply[Any]


@attrs.frozen
class Reloaded:
    """A fact: a reload ended with `diff` (a `supervisor.model.reload.ReloadDiff`)."""

    diff: Any


@attrs.frozen
class GetToolReport:
    """Every tool of every Running app as `actors.toolreport.ToolRow`s: offered or not, why."""

    reply: Reply[Any]


# What an app actor's mailbox takes: a message of any other type is a type error, not a log line.
AppMessage = (
    UpstreamRequest | GetStatus | GetCatalog | Start | Stop | Restart | Drain | ReleaseSubscriptions
)
