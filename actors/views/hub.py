"""The view hub: the actor behind `/apps/views…`. It alone holds the views' leases, the calls
waiting for the person's approval, the apps' questions waiting for a page and the counters
(`ViewState`); the front door sends it messages (actors/views/messages.py) and reads its answers.

Its mailbox does what is quick (a lease looked up, renewed or closed; a request admitted or
refused; an answer handed to the call or question it is for); a request that goes to the app is
a task of the hub's nursery (actors/views/calls.py), which answers on the request's own channel.
A view's lease that ends, however it ends (closed, expired, its app restarted or stopped by a
reload), ends what waits on it: a held call is answered at once, the app's questions to the page
are answered `cancel`, and, when a reload ended it, a call still running is cut short."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import trio

from actors.asking import AnswerRefused
from actors.files.messages import ResourceUpdated, WorkspaceMessage
from actors.messages import ActorOf, HubMessage, RegistryMessage, Reloaded, Watch
from actors.metrics import Metrics
from actors.runtime import ASK_TIMEOUT_S, Actor, Mailbox, Reply, ask, unhandled
from actors.views.calls import serve
from actors.views.counters import ViewCounters
from actors.views.fileviews import door, open_file_view
from actors.views.gate import ASKED, DECISIONS, MODEL_CONTEXT
from actors.views.leases import Lease, ViewTable
from actors.views.messages import (
    AnswerApproval,
    Answered,
    AnswerPageQuestion,
    AnswerViewToolCall,
    AppsReloaded,
    CallViewTool,
    CloseView,
    CutShort,
    Failed,
    KeepViewAlive,
    ListenToView,
    ListModelContexts,
    ListViewTools,
    NextViewToolCall,
    OpenedView,
    OpenFileView,
    OpenView,
    Outcome,
    RemoveModelContext,
    SetViewTools,
    StopViews,
    Succeeded,
    TakeModelContexts,
    ViewEvent,
    ViewMessage,
    ViewRequest,
    ViewTool,
    ViewToolMessage,
)
from actors.views.modelcontext import read_update
from actors.views.refusals import (
    BadDecision,
    Inactive,
    NotRun,
    UnknownApproval,
    UnknownMethod,
    UnknownQuestion,
    ViewRefusal,
)
from actors.views.state import ViewState
from supervisor.model.reload import ReloadDiff
from supervisor.model.viewsconfig import Approval, ViewsConfig

logger = logging.getLogger("mcpapps.views")

WATCH_BUFFER = 256


class ViewHub(Actor[ViewMessage]):
    def __init__(
        self,
        registry: Mailbox[RegistryMessage],
        chats: Mailbox[HubMessage] | None = None,
        config: ViewsConfig | None = None,
        approvals: Mapping[str, Approval] | None = None,
        metrics: Metrics | None = None,
        clock: Callable[[], float] | None = None,
        files: Mailbox[WorkspaceMessage] | None = None,
    ) -> None:
        self.mailbox: Mailbox[ViewMessage] = Mailbox()
        self._nursery: trio.Nursery | None = None
        table = ViewTable(config, clock) if clock else ViewTable(config)
        table.on_end = self._view_ended
        self.state = ViewState(registry, chats, table, ViewCounters(metrics), dict(approvals or {}))
        self.state.files.workspace, self.state.files.hub = files, self.mailbox

    async def _begin(self, nursery: trio.Nursery) -> None:
        await nursery.start(self._watch)

    async def _watch(self, *, task_status: trio.TaskStatus[None]) -> None:
        """The registry's reloads, as messages of this hub's own."""
        facts_in, facts = trio.open_memory_channel[Any](WATCH_BUFFER)
        self.state.registry.tell(Watch(facts_in))
        task_status.started()
        async with facts:
            async for fact in facts:
                if isinstance(fact, Reloaded):
                    self.mailbox.tell(AppsReloaded(fact.diff, fact.approvals))

    def _handle(self, message: ViewMessage) -> None:
        state, table = self.state, self.state.table
        match message:
            case ViewRequest():
                self._admit(message)
            case OpenView():
                self._spawn(self._open, message)
            case KeepViewAlive(view_id, reply):
                try:
                    table.get(view_id)
                    reply.send(table.config.lease_s)
                except ViewRefusal as refusal:
                    reply.fail(refusal)
            case CloseView(view_id, reply):
                # Ending the lease ends what waits on it: a held call is answered, a question
                # cancelled.
                reply.send(table.close(view_id))
            case AnswerApproval(view_id, approval_id, decision, reply):
                try:
                    held = state.held.find(view_id, approval_id)  # an unknown one comes first
                    if decision not in DECISIONS:
                        raise BadDecision(f"'decision' must be one of {list(DECISIONS)}")
                    held.decide(decision)
                    reply.send(None)
                except (UnknownApproval, BadDecision) as refusal:
                    reply.fail(refusal)
            case AnswerPageQuestion(view_id, request_id, action, content, reply):
                try:
                    state.questions.answer(view_id, request_id, action, content)
                    reply.send(None)
                except (UnknownQuestion, AnswerRefused) as refused:
                    reply.fail(refused)
            case TakeModelContexts(chat_session, reply, update_ids):
                taken = state.contexts.take(chat_session, update_ids)
                reply.send(tuple(context.for_model() for context in taken))
            case ListModelContexts(chat_session, view_ids, reply):
                listed = state.contexts.listed(chat_session, view_ids)
                reply.send(tuple(context.chip() for context in listed))
            case RemoveModelContext(update_id, reply):
                removed = state.contexts.remove(update_id)
                reply.send(removed.chip() if removed else None)
            case StopViews():
                state.held.stop()
            case CutShort():
                state.closing = True
                for scope in state.running:
                    scope.cancel()
            case AppsReloaded(diff, approvals):
                self._reloaded(diff, approvals)
            case OpenFileView():
                self._spawn(open_file_view, state, message)
            case ListenToView(view_id, channel, reply):
                try:
                    state.files.listen(table.get(view_id), channel)
                    reply.send(None)
                except ViewRefusal as refusal:
                    reply.fail(refusal)
            case ResourceUpdated():
                state.files.updated(message)
            case (
                SetViewTools()
                | ListViewTools()
                | CallViewTool()
                | NextViewToolCall()
                | AnswerViewToolCall()
            ):
                self._view_tools(message)
            case _:
                unhandled("view hub", message)

    def _admit(self, request: ViewRequest) -> None:
        """A view's request counted in and sent on its way, answered here, or refused."""
        state, table = self.state, self.state.table
        lease: Lease | None = None
        try:
            lease = table.get(request.view_id)
            if request.method == MODEL_CONTEXT:
                # It replaces what this view instance attached before; the view is told the
                # new update's id (the OpenAI model-context extension). What a restored view
                # says is not the person's doing: it is not kept.
                if lease.restored:
                    _answer_now(request.events, Succeeded({}))
                    return
                update_id = state.contexts.put(lease, *read_update(request.params))
                answer = {"_meta": {"openai/modelContext": {"updateId": update_id}}}
                _answer_now(request.events, Succeeded(answer))
                return
            # A file view's own requests, and the path its tool calls carry (fileviews.py).
            served_by = door(state.files, request.method, request.params)
            if request.method not in ASKED and served_by is None:
                raise UnknownMethod(f"a view cannot ask '{request.method}'")
            table.admit(lease, tool_call=request.method == "tools/call")
        except ViewRefusal as refusal:
            state.counters.refused(lease.app_id if lease else "", refusal)
            _answer_now(request.events, Failed(refusal))
            return
        self._spawn(served_by or serve, state, lease, request)

    async def _open(self, message: OpenView) -> None:
        app_id = message.app_id
        try:
            actor: int | None = await ask(
                self.state.registry, lambda r: ActorOf(app_id, r), ASK_TIMEOUT_S
            )
            table = self.state.table
            lease = table.open(app_id, message.chat_session, message.tool_call)
        except Exception as error:  # UnknownApp, TooManyViews, the registry's silence
            message.reply.fail(error)
            return
        lease.actor = actor
        lease.restored = message.restored
        if message.run and message.tool_call is not None and not message.restored:
            lease.opening = {
                "name": message.tool_call.get("toolName"),
                "arguments": message.tool_call.get("arguments") or {},
            }
        attached = self.state.contexts.current(lease)
        opened = OpenedView(
            lease.id,
            app_id,
            lease.chat_session,
            lease.tool_call,
            table.config.lease_s,
            self.state.approval(app_id),
            attached.host_state() if attached else None,
            lease.restored,
        )
        message.reply.send(opened)

    def _view_tools(self, message: ViewToolMessage) -> None:
        """The tools a view registers (actors/views/viewtools.py); a call and the page's wait
        for one are tasks of the hub."""
        state, table = self.state, self.state.table
        try:
            match message:
                case SetViewTools(view_id, tools, reply):
                    reply.send(state.tools.set(table.get(view_id), tools))
                case ListViewTools(chat_session, reply):
                    reply.send(state.tools.of_session(table.of_session(chat_session)))
                case CallViewTool(chat_session, name, arguments, reply):
                    tool = state.tools.find(table.of_session(chat_session), name)
                    self._spawn(_answer_with, reply, tool, state.tools.call(tool, arguments))
                case NextViewToolCall(view_id, wait_s, reply):
                    lease = table.get(view_id)
                    if lease.restored:
                        raise Inactive("a view restored from the saved chat offers no tools")
                    self._spawn(_answer_with, reply, None, state.tools.next_call(lease, wait_s))
                case AnswerViewToolCall(view_id, call_id, result, reply):
                    state.tools.answer(view_id, call_id, result)
                    reply.send(None)
        except ViewRefusal as refusal:
            message.reply.fail(refusal)

    def _view_ended(self, lease: Lease, why: str) -> None:
        """A view's lease ended: a call waiting for the person's approval is not run (it is
        answered at once, and an approval posted for it afterwards is for no call), and the
        app's questions to the page are answered `cancel`."""
        self.state.held.end_view(lease, why)
        self.state.tools.end(lease.id, why)
        self.state.questions.cancel_view(lease.id, f"its view ended ({why}), so it was cancelled")
        self.state.files.ended(lease)
        self.state.contexts.view_ended(lease)
        logger.info("view %s… of app %s ended: %s", lease.id[:6], lease.app_id, why)

    def _reloaded(
        self, diff: ReloadDiff, approvals: tuple[tuple[str, Approval], ...] | None
    ) -> None:
        state = self.state
        for app_id, why in _ended_by(diff):
            # A call of its views still running (a 2026-07-28 app's, between its rounds)
            # would send its next round to the new process: it ends here, before its
            # questions are answered `cancel`.
            for scope, lease in state.running.items():
                if lease.app_id == app_id:
                    scope.cancel()
            if dropped := state.table.drop_app(app_id, why):
                logger.info("app %s changed: %d of its views ended", app_id, dropped)
        if approvals is not None:
            self._set_approvals(dict(approvals))

    def _set_approvals(self, approvals: Mapping[str, Approval]) -> None:
        """A reload's approval policies, in force from the next call on. A grant already given
        for a view ("allow while open") lasts as long as that view: the person gave it."""
        state = self.state
        for app_id in sorted(set(state.approvals) | set(approvals)):
            before, after = state.approval(app_id), approvals.get(app_id, "writes")
            if before != after:
                logger.info("views of app %s: approval is now %s (was %s)", app_id, after, before)
        state.approvals = dict(approvals)


async def _answer_with(reply: Reply[Any], tool: ViewTool | None, work: Awaitable[Any]) -> None:
    """A view tool's call, or the page's wait for one, answered when it is done."""
    try:
        value = await work
    except ViewRefusal as refusal:
        reply.fail(refusal)
        return
    except BaseException:  # the hub stopping: whoever waits is told at once
        reply.fail(NotRun("the supervisor is stopping: the view's tools are not served"))
        raise
    reply.send((tool, value) if tool is not None else value)


def _answer_now(events: trio.MemorySendChannel[ViewEvent], outcome: Outcome) -> None:
    """A request answered by the mailbox itself: its channel has room for one event."""
    with contextlib.suppress(trio.WouldBlock, trio.BrokenResourceError, trio.ClosedResourceError):
        events.send_nowait(Answered(outcome))
    events.close()


def _ended_by(diff: ReloadDiff) -> list[tuple[str, str]]:
    """The apps whose views a reload ends, each with why: restarted with a changed definition,
    given one while Stopped (the next start runs it), or stopped."""
    return [
        *(
            (a, f"a reload restarted its app '{a}' with a changed definition")
            for a in diff.restarted
        ),
        *((a, f"a reload changed the definition of its app '{a}'") for a in diff.still_stopped),
        *((a, f"a reload stopped its app '{a}'") for a in diff.stopped),
    ]
