"""What the view hub's mailbox takes (`ViewMessage`), and what it answers a view's request with:
the events of one request (`ViewEvent`), ending in its `Outcome`.

A view's JSON-RPC request (`ViewRequest`) carries the channel its events go to: zero or more
`ApprovalAsked` and `QuestionAsked` (the front door streams them to the page), then one
`Answered`. Its `Abandonment` is set by the front door when the page goes away: the hub then
cancels the request's work and gives back what it held."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs
import trio

from actors.catalog import Wire
from actors.files.messages import ResourceUpdated
from actors.runtime import Abandonment, Reply
from supervisor.model.errors import McpappsError
from supervisor.model.reload import ReloadDiff
from supervisor.model.viewsconfig import Approval

# What a request of a view comes to.


@attrs.frozen
class Succeeded:
    """The app's result (or the hub's own, for what it answers itself)."""

    result: Wire


@attrs.frozen
class Failed:
    """Why the request was not served: a `ViewRefusal` (actors/views/refusals.py), or the
    app's or the registry's error on the way (`AppError`, `ActorUnavailable`)."""

    error: McpappsError


Outcome = Succeeded | Failed


# The events of one request, in order: the last is `Answered`.


@attrs.frozen
class ApprovalAsked:
    """The call waits for the person's approval (answered with `AnswerApproval`)."""

    approval_id: str
    app_id: str
    tool: str
    arguments: Any
    timeout_s: float


@attrs.frozen
class QuestionAsked:
    """The app asks the person while the call runs (answered with `AnswerPageQuestion`):
    `{requestId, app, tool, message, requestedSchema | url}`."""

    question: Wire


@attrs.frozen
class Answered:
    outcome: Outcome


ViewEvent = ApprovalAsked | QuestionAsked | Answered


# Requests to the view hub.


@attrs.frozen
class OpenedView:
    """A view just opened: its lease's descriptor, how long it lasts unused, and its app's
    approval policy (what the page tells the person)."""

    view_id: str
    app_id: str
    chat_session: str | None
    tool_call: Mapping[str, Any] | None
    lease_s: float
    approval: Approval
    # The context this view instance attached and no turn has taken yet (a view reopened
    # after a reload of the page): its `hostContext["openai/modelContext"]`.
    model_context: Wire | None = None
    restored: bool = False


@attrs.frozen
class OpenView:
    """Open a view of `app_id`; `run` lets its opening call (`tool_call`'s tool and arguments)
    run once without approval; `restored`: the view is rebuilt from a saved chat, inactive until
    the person runs it again. Fails `UnknownApp` or `TooManyViews`."""

    app_id: str
    chat_session: str | None
    tool_call: Mapping[str, Any] | None
    run: bool
    reply: Reply[OpenedView]
    restored: bool = False


@attrs.frozen
class KeepViewAlive:
    """The page still shows the view: its lease is renewed (answered with the lease time), or
    `UnknownView`."""

    view_id: str
    reply: Reply[float]


@attrs.frozen
class CloseView:
    """The page tore the view down: whether there was one to close."""

    view_id: str
    reply: Reply[bool]


@attrs.frozen
class ViewRequest:
    """One JSON-RPC request of a view; answered on `events` (see above)."""

    view_id: str
    method: str
    params: Mapping[str, Any]
    events: trio.MemorySendChannel[ViewEvent]
    abandoned: Abandonment


@attrs.frozen
class AnswerApproval:
    """The person's decision on a held call, or `UnknownApproval` / `BadDecision`."""

    view_id: str
    approval_id: str
    decision: Any  # one of `DECISIONS`, else `BadDecision` (once the approval is found)
    reply: Reply[None]


@attrs.frozen
class AnswerPageQuestion:
    """The person's answer to an app's question, or `UnknownQuestion` / `AnswerRefused`."""

    view_id: str
    request_id: str
    action: Any
    content: Any
    reply: Reply[None]


@attrs.frozen
class TakeModelContexts:
    """For the next turn of a chat session: the model context its views attached, and that of
    the views outside a chat named by `update_ids`, taken (each is given once), as the model
    reads them (actors/views/modelcontext.py)."""

    chat_session: str
    reply: Reply[tuple[Wire, ...]]
    update_ids: tuple[str, ...] = ()


@attrs.frozen
class ListModelContexts:
    """What the composer shows: the contexts of a chat session and of the given views outside
    a chat, as chips (`ModelContext.chip()`), oldest first."""

    chat_session: str | None
    view_ids: tuple[str, ...]
    reply: Reply[tuple[Wire, ...]]


@attrs.frozen
class RemoveModelContext:
    """The person removed an attached context: its chip, or None when it is not held."""

    update_id: str
    reply: Reply[Wire | None]


@attrs.frozen
class StopViews:
    """The supervisor is shutting down: a held call is not run, and none is held from now."""


@attrs.frozen
class CutShort:
    """The apps are stopped: a view's call still running is cancelled and answered so."""


@attrs.frozen
class AppsReloaded:
    """A reload (the registry's `Reloaded`, as the hub's watch hears it): the views of the apps
    it restarted, changed or stopped end, and its approval policies hold from now on."""

    diff: ReloadDiff
    approvals: tuple[tuple[str, Approval], ...] | None


# The file views (actors/views/fileviews.py).


@attrs.frozen
class OpenFileView:
    """Open a view of `tool` (the app's own name of it; `public_name`, the page's) of `app_id`
    on the workspace file `path`: a `host-resource://` URI minted for the new lease, and its
    opening call, `{"file": {"name", "resourceUri"}}`, allowed to run once. Fails as `OpenView`
    does, or with a `FileRefused` (the lease closed at once: the app is never called)."""

    app_id: str
    tool: str
    public_name: str
    path: str
    chat_session: str | None
    reply: Reply[OpenedView]


@attrs.frozen
class ListenToView:
    """The page listens for the notifications of view `view_id` (`notifications/resources/
    updated`), each sent on `channel` as a JSON-RPC notification until the channel is closed;
    answered once listening, or `UnknownView`."""

    view_id: str
    channel: trio.MemorySendChannel[Wire]
    reply: Reply[None]


# The tools a view registers (actors/views/viewtools.py), offered to its chat's model.


@attrs.frozen
class ViewTool:
    """A tool an open view registered, as its chat's model is offered it: `public_name` is
    `view.<appId>.<name>`, which says whose it is."""

    view_id: str
    app_id: str
    name: str
    public_name: str
    description: str
    input_schema: Wire


@attrs.frozen
class ViewToolCall:
    """A call of the model for a view's tool, as the page performs it in the view."""

    call_id: str
    name: str
    arguments: Wire


@attrs.frozen
class SetViewTools:
    """The page listed the view's tools (`tools/list` to the view): they replace the ones it
    had; answered with how many are offered to its chat (0 for a view no chat opened)."""

    view_id: str
    tools: Any
    reply: Reply[int]


@attrs.frozen
class ListViewTools:
    """The tools the open views of a chat session registered, for its model."""

    chat_session: str
    reply: Reply[tuple[ViewTool, ...]]


@attrs.frozen
class CallViewTool:
    """The model of `chat_session` calls a tool of one of its open views: answered with the
    tool and the view's `CallToolResult`, or a `ViewRefusal` (no such view tool, the view
    closed or did not answer in time)."""

    chat_session: str
    public_name: str
    arguments: Wire
    reply: Reply[tuple[ViewTool, Wire]]


@attrs.frozen
class NextViewToolCall:
    """The page waits up to `wait_s` for the next call of the model to its view's tools (None
    when none came)."""

    view_id: str
    wait_s: float
    reply: Reply[ViewToolCall | None]


@attrs.frozen
class AnswerViewToolCall:
    """The view's answer to a call of its tool, as the page read it."""

    view_id: str
    call_id: str
    result: Any
    reply: Reply[None]


ViewToolMessage = (
    SetViewTools | ListViewTools | CallViewTool | NextViewToolCall | AnswerViewToolCall
)

ViewMessage = (
    OpenView
    | KeepViewAlive
    | CloseView
    | ViewRequest
    | AnswerApproval
    | AnswerPageQuestion
    | TakeModelContexts
    | ListModelContexts
    | RemoveModelContext
    | StopViews
    | CutShort
    | AppsReloaded
    | OpenFileView
    | ListenToView
    | ResourceUpdated
    | SetViewTools
    | ListViewTools
    | CallViewTool
    | NextViewToolCall
    | AnswerViewToolCall
)
