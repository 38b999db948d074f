"""The messages actors exchange, and the errors callers get back. Requests carry their own
`Reply`; facts (`StateChanged`, `CatalogChanged`) are told and never answered.

Every message an actor's mailbox takes is here, under the heading of the actor that receives
it, and each heading ends with that actor's union (`AppMessage`, `RegistryMessage`,
`HubMessage`): the mailbox is typed with it, so a message sent to the wrong actor is a type
error, not an "unknown message" log line. Nothing here loads the SDK or a web framework."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import attrs
import trio

from actors.catalog import Catalog, Wire
from actors.chat.sessionstore import ReplicaSeen, SavedSession, SessionPage, SessionSummary
from actors.chat.turns import Event, UserTurn
from actors.runtime import Abandonment, Answer, Recipient, Reply
from actors.toolreport import ToolRow
from actors.tooltable import PublicTool, ToolTable
from supervisor.model.discovery import Discovery
from supervisor.model.errors import McpappsError
from supervisor.model.lifecycle import AppState
from supervisor.model.reload import ReloadDiff
from supervisor.model.viewsconfig import Approval


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
    """The app is not Running, or its connection died while the request was in flight;
    `retry_at` is when a restart is due (epoch seconds), when one is."""

    def __init__(self, app_id: str | None, message: str, retry_at: float | None = None) -> None:
        super().__init__(app_id, message)
        self.retry_at = retry_at


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
    # Why the app is not running, or failed to. Once it is Running again, that failure is
    # history: it moves to `previous_error`, so that it does not read as a current one.
    last_error: str | None = None
    previous_error: str | None = None
    disabled_reason: str | None = None
    errors: tuple[str, ...] = ()
    stderr: tuple[str, ...] = ()
    in_flight: int = 0
    auth: str | None = None  # "oauth" for an app a person signs in to
    # While NeedsSignIn: where the person signs in (the authorization server's page). Never a
    # token: those stay in the app's token file.
    sign_in_url: str | None = None


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
    abandoned: Abandonment | None = None  # set when the caller gives up: the request is cancelled


@attrs.frozen
class ReleaseSubscriptions:
    """The client `owner` is gone: its resource subscriptions end."""

    owner: str


@attrs.frozen
class SessionSnapshot:
    """What the clients asked of an app's one session, as a value: the log level last set
    (None: never) and each subscribed resource with the clients subscribed to it."""

    log_level: str | None = None
    subscriptions: tuple[tuple[str, frozenset[str]], ...] = ()


@attrs.frozen
class HandOver:
    """A reload replaces this (stopped) app actor with `successor`, an actor of the app's new
    definition: tell it what the clients asked of the session (`Inherit`), and pass it every
    release that comes after, so no client's request is lost between the two."""

    successor: Recipient[AppMessage]
    reply: Reply[None]


@attrs.frozen
class Inherit:
    """What the clients asked of the app's session under its predecessor (a reload changed
    its definition): the new process is given it as after any restart."""

    snapshot: SessionSnapshot


@attrs.frozen
class GetStatus:
    reply: Reply[AppStatus]


@attrs.frozen
class GetCatalog:
    reply: Reply[Catalog]


@attrs.frozen
class Start:
    """Start the app if it is not running; clears `gave_up` (an operator's restart). An app
    waiting for its automatic restart starts now."""

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


# Signing in (`auth = "oauth"`): the SDK's OAuth client of an incarnation tells its app actor
# where the person must go, and waits for the answer that the front door's callback brings.

# The front door's callback, followed by the app's id: where the authorization server sends the
# person's browser back (the redirect URI each app registers).
SIGN_IN_CALLBACK = "/apps/oauth/callback/"


@attrs.frozen
class SignInAnswer:
    """What the authorization server sent back through the person's browser."""

    code: str
    state: str
    iss: str | None = None


@attrs.frozen
class SignInNeeded:
    """A fact from the app's own OAuth client: a person must sign in at `url`. The answer whose
    `state` matches goes to `answers`; `incarnation` is the connection that asks (a later one
    makes this one stale); `why` is what ended the sign-in before, if anything did."""

    url: str
    state: str
    answers: trio.MemorySendChannel[SignInAnswer]
    incarnation: object
    why: str | None = None


class SignInRefused(AppError):
    """A sign-in answer the app cannot take (no sign-in in progress, a wrong `state`, an error
    from the authorization server); the message says what to do."""


@attrs.frozen
class SignInCallback:
    """The front door's callback route got the authorization server's answer for the app:
    `code` and `state`, or `error` (the person or the server refused). Answered with the app's
    status, or failed with `SignInRefused`."""

    state: str | None
    reply: Reply[AppStatus]
    code: str | None = None
    iss: str | None = None
    error: str | None = None


@attrs.frozen
class SignOut:
    """Forget the app's tokens and sign-in (`mcpapps logout`): a connected app asks the person
    again (NeedsSignIn)."""

    reply: Reply[AppStatus]


# What an app actor's mailbox takes: a message of any other type is a type error, not a log line.
AppMessage = (
    UpstreamRequest
    | GetStatus
    | GetCatalog
    | Start
    | Stop
    | Restart
    | Drain
    | ReleaseSubscriptions
    | HandOver
    | Inherit
    | SignInNeeded
    | SignInCallback
    | SignOut
)


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


AppFact = StateChanged | CatalogChanged | AppNotification


@attrs.frozen
class FromApp:
    """A fact as the registry receives it from an app actor: marked with the voice the actor
    was given (`actors.registry`), so that the last words of an actor a reload replaced are
    dropped rather than overwrite what its successor says."""

    app_id: str
    voice: object
    fact: AppFact


# Requests and facts for the registry.


@attrs.frozen
class Watch:
    """Send every fact about the apps (`StateChanged`, `CatalogChanged`, `AppNotification`,
    `ToolTableChanged`) to `channel` from now on, until it is closed. A watcher that falls
    behind loses facts rather than slowing the registry."""

    channel: trio.MemorySendChannel[Fact]


@attrs.frozen
class ToolTableChanged:
    table: ToolTable


@attrs.frozen
class ToApp:
    """Route `message` (a request to an app actor) to the app `app_id`; with `actor` (from
    `ActorOf`), only to that actor of the app: once a reload has replaced it, the request is
    refused (a view opened for the app's old definition runs nothing on its new one)."""

    app_id: str
    message: AppMessage
    actor: int | None = None


@attrs.frozen
class CallPublicTool:
    public_name: str  # a public name or its alias
    arguments: dict[str, Any]
    reply: Answer[tuple[PublicTool, Wire]]  # (the tool called, the raw result)
    meta: dict[str, Any] | None = None
    caller: Caller | None = None
    abandoned: Abandonment | None = None  # set when the caller gives up: the call is cancelled
    resumed: Wire | None = None  # a 2026-07-28 retry's inputResponses and requestState


@attrs.frozen
class GetToolTable:
    reply: Reply[ToolTable]


@attrs.frozen
class ActorOf:
    """The number of the app's actor now (a reload that replaces the actor gives the app a new
    one); None for an app that is not run; `UnknownApp` if there is no such app."""

    app_id: str
    reply: Reply[int | None]


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
    describes; answered with what changed."""

    discovery: Discovery
    reply: Reply[ReloadDiff]


@attrs.frozen
class Reloaded:
    """A fact: a reload ended with `diff`. `approvals` is the reloaded config's per-app approval
    policy for views (`[apps.entries.<id>] approval`), or None when the config was refused:
    the front door applies it at once, as it holds no app to restart for it."""

    diff: ReloadDiff
    approvals: tuple[tuple[str, Approval], ...] | None = None


@attrs.frozen
class GetToolReport:
    """Every tool of every Running app: offered or not, why."""

    reply: Reply[tuple[ToolRow, ...]]


@attrs.frozen
class WhenReady:
    """Answered once every app has reached Running or Failed at least once."""

    reply: Reply[tuple[AppStatus, ...]]


@attrs.frozen
class SamplingAllowed:
    """Ask the registry: may app `app_id` use the agent's model (`sampling = true`)? Fails
    with `UnknownApp` for an app it does not have."""

    app_id: str
    reply: Reply[bool]


# What a watcher hears (`Watch`).
Fact = StateChanged | CatalogChanged | AppNotification | ToolTableChanged | Reloaded

# What the registry's mailbox takes.
RegistryMessage = (
    FromApp
    | SamplingAllowed
    | StateChanged
    | CatalogChanged
    | AppNotification
    | Watch
    | CallPublicTool
    | ToApp
    | GetToolTable
    | GetToolReport
    | Snapshot
    | Lookup
    | ActorOf
    | WhenReady
    | StopAll
    | ApplyReload
    | Reloaded
)


# Requests to the chat hub (and, for `Turn`, to the session actor it hands the turn to).


@attrs.frozen
class Turn:
    """Run one turn of `session_id`; its events go to `events`, which is closed when the turn
    is over and saved. Nobody need read them: a client may leave."""

    session_id: str
    user: UserTurn
    events: trio.MemorySendChannel[Event]


@attrs.frozen
class GetSession:
    """What is saved of a session (no turn in progress is in it)."""

    session_id: str
    reply: Reply[SavedSession]


@attrs.frozen
class GetCluster:
    """Every supervisor that shares the session store, as last seen (this one only, on SQLite)."""

    reply: Reply[list[ReplicaSeen]]


@attrs.frozen
class GetSessionPage:
    """At most `limit` saved turns of a session, the last ones before turn `before` (its
    latest when None)."""

    session_id: str
    before: int | None
    limit: int
    reply: Reply[SessionPage]


@attrs.frozen
class CancelTurn:
    """Cut short the turn `session_id` is running now (the person pressed Cancel); the reply
    says whether one was running. Turns waiting behind it still run."""

    session_id: str
    reply: Reply[bool]
    here_only: bool = False  # relayed by another supervisor: never relayed on again


@attrs.frozen
class AnswerQuestion:
    """The person's answer to a question an app asked during the session's turn; the reply
    fails with `AnswerRefused` when it is not taken."""

    session_id: str
    request_id: str
    action: Any
    content: Any
    reply: Reply[None]
    here_only: bool = False  # relayed by another supervisor: never relayed on again


@attrs.frozen
class StopChats:
    """Shutdown: take no new turns, give the running ones up to `grace` s, then cut them short."""

    grace: float
    reply: Reply[None]


@attrs.frozen
class TurnDone:
    """A session tells the hub: one of its turns is over."""

    session_id: str
    unsaved: bool  # some turn of the session could not be saved yet


@attrs.frozen
class Sweep:
    """The hub tells itself: time to retire the sessions idle too long."""


@attrs.frozen
class SessionListing:
    """Every saved chat session, and which of them have a turn running or waiting."""

    sessions: tuple[SessionSummary, ...]
    running: frozenset[str]


@attrs.frozen
class ListSessions:
    reply: Reply[SessionListing]


@attrs.frozen
class DeleteSession:
    """Delete a saved session; the reply says whether there was one, and fails with
    `SessionBusy` while it has a turn running or waiting."""

    session_id: str
    reply: Reply[bool]


@attrs.frozen
class ApplyRetention:
    """The hub tells itself: time to delete the sessions `[state]` no longer keeps."""


@attrs.frozen
class SessionsExpired:
    """The hub's retention task tells it: these sessions are past what `[state]` keeps."""

    session_ids: tuple[str, ...]


@attrs.frozen
class SessionsDeleted:
    """The hub's deletion task tells it: these sessions are gone from the store (or could
    not be deleted); turns sent for them meanwhile may run."""

    session_ids: tuple[str, ...]


@attrs.frozen
class SampleForView:
    """Ask the chat hub: answer a sampling request an app's view made through the page."""

    app_id: str
    allowed: bool
    params: Wire
    reply: Reply[Wire]


# What the chat hub's mailbox takes; a session's takes only `Turn`.
HubMessage = (
    Turn
    | GetSession
    | GetCluster
    | GetSessionPage
    | CancelTurn
    | AnswerQuestion
    | SampleForView
    | StopChats
    | TurnDone
    | Sweep
    | ListSessions
    | DeleteSession
    | ApplyRetention
    | SessionsExpired
    | SessionsDeleted
)
