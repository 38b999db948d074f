"""A view's admitted request on its way to its app and back, run as a task of the view hub: the
view's own app and its app-visible tools only; a call the person must approve held until they
do; the chat session's id added; the request sent to the app (`ToApp`), with a 2026-07-28 app's
`input_required` rounds put to the page; and one `Answered` at the end, whatever happens, unless
the page went away. What the request holds in its view's lease (its slot, or its place among
the held calls) is given back when it ends."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Mapping
from typing import Any

import trio

from actors.apps.upstream import ServerRequestRefused
from actors.asking import until_complete
from actors.catalog import Catalog, Wire
from actors.messages import (
    AppError,
    AppStatus,
    GetCatalog,
    Lookup,
    SamplingAllowed,
    ToApp,
    UpstreamRequest,
)
from actors.runtime import ASK_TIMEOUT_S, Abandonment, ask
from actors.views import held as holding
from actors.views import restored
from actors.views.gate import (
    PASSED_ON,
    is_visible_to_app,
    needs_approval,
    with_session,
)
from actors.views.held import ENDED, STOPPING, TIMEOUT, Held
from actors.views.leases import Lease
from actors.views.messages import (
    Answered,
    ApprovalAsked,
    Failed,
    Outcome,
    Succeeded,
    ViewEvent,
    ViewRequest,
)
from actors.views.questions import ViewCaller
from actors.views.refusals import CallLost, Denied, NotAllowed, NotRun, UnknownView, ViewRefusal
from actors.views.state import ViewState
from supervisor.model.errors import ActorUnavailable, McpappsError
from supervisor.model.lifecycle import AppState

logger = logging.getLogger("mcpapps.views")


async def serve(state: ViewState, lease: Lease, request: ViewRequest) -> None:
    """Answer one admitted request on its channel, then give back what it held."""
    trip = _Trip(state, lease, request.events)
    outcome: Outcome | None = None
    async with request.events:
        try:
            with request.abandoned.cancels():
                outcome = await trip.outcome(request.method, request.params)
        except Exception as error:  # a bug ends this request, never the hub
            logger.exception("view %s… of app %s: the request failed", lease.id[:6], lease.app_id)
            outcome = Failed(CallLost(f"internal error in mcpapps: {error!r}; see the log"))
        finally:
            trip.give_back()
        if outcome is not None:  # else the page went away
            with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
                await request.events.send(Answered(outcome))


class LeaseHold:
    """What one request of a view holds of its lease while it runs: its slot among the
    requests in flight, or its place among the held calls while it waits for the person; given
    back once, whichever it is."""

    def __init__(
        self, state: ViewState, lease: Lease, events: trio.MemorySendChannel[ViewEvent]
    ) -> None:
        self._state = state
        self._lease = lease
        self._events = events
        self._holds = "slot"  # the request is in flight; "held" while it waits for the person

    def give_back(self) -> None:
        table = self._state.table
        if self._holds == "slot":
            table.release(self._lease)
        elif self._holds == "held":
            table.unhold(self._lease, run=False)
        self._holds = ""


class _Trip(LeaseHold):
    """One request's way to the app."""

    async def outcome(self, method: str, params: Mapping[str, Any]) -> Outcome:
        lease, state = self._lease, self._state
        try:
            if lease.restored:
                tools = (await self._catalog()).tools if method == "resources/read" else ()
                inactive = restored.refusal(method, params, lease.tool_call, tools)
                if inactive is not None:
                    raise inactive
            if method == "tools/list":
                catalog = await self._catalog()
                return Succeeded({"tools": [t for t in catalog.tools if is_visible_to_app(t)]})
            if method in PASSED_ON:
                return await self._send(method, dict(params), self._caller(None))
            call = with_session(lease.chat_session, params)
            opening = lease.opening == {"name": call["name"], "arguments": call["arguments"]}
            tool = await self._allowed_tool(params, opening)
            needs = needs_approval(state.approval(lease.app_id), tool)
            if opening:
                lease.opening = None  # used up by exactly that call, and by no other
                needs = False
            if needs and tool["name"] not in lease.grants:
                state.table.hold(lease)
                self._holds = "held"
            elif state.stopping:  # held calls are answered so too (`_after_approval`)
                raise _not_run_while_stopping(tool["name"])
        except ViewRefusal as refusal:
            state.counters.refused(lease.app_id, refusal)
            return Failed(refusal)
        if self._holds == "held":
            return await self._after_approval(tool["name"], call)
        return await self._run(call)

    async def _catalog(self) -> Catalog:
        app_id = self._lease.app_id
        try:
            return await ask(
                self._state.registry, lambda r: ToApp(app_id, GetCatalog(r)), ASK_TIMEOUT_S
            )
        except (AppError, ActorUnavailable) as error:
            raise NotRun(_said(error)) from None

    async def _allowed_tool(self, params: Mapping[str, Any], opening: bool) -> Wire:
        """The tool, if the view may call it: its own app's, visible to the app. The opening
        call may be of a tool for the model only: the person chose it in the page ("Open
        view"), and exactly that call, once, is theirs, not the view's."""
        app_id, name = self._lease.app_id, params.get("name")
        catalog = await self._catalog()
        tool = next((t for t in catalog.tools if t.get("name") == name), None)
        if tool is None:
            await self._refuse_unless_running(name)
            raise NotAllowed(
                f"app '{app_id}' has no tool '{name}': a view may call only the tools of its"
                " own app"
            )
        if not is_visible_to_app(tool) and not opening:
            raise NotAllowed(
                f"tool '{name}' of app '{app_id}' is for the model only (its"
                ' _meta.ui.visibility does not include "app"): a view may not call it'
            )
        return tool

    async def _refuse_unless_running(self, name: Any) -> None:
        """An app that is not Running has no tools to offer: the view is told that, and the
        app's state, rather than that the tool does not exist."""
        app_id = self._lease.app_id
        try:
            status: AppStatus = await ask(
                self._state.registry, lambda r: Lookup(app_id, r), ASK_TIMEOUT_S
            )
        except Exception:
            return  # no status to tell (the app is gone): the call is refused as unknown
        if status.state is AppState.RUNNING:
            return
        why = f"app '{app_id}' is not running (it is {status.state}"
        if status.last_error:
            why += f": {status.last_error}"
        why += f"), so its tool '{name}' cannot be called: call it again once the app is Running"
        raise NotRun(why)

    async def _after_approval(self, tool: str, call: Wire) -> Outcome:
        """The call waits for the person: `ApprovalAsked` at once; it goes to the app only if
        they allow it (once, or while the view is open) in time."""
        state, lease = self._state, self._lease
        timeout = state.table.config.approval_timeout_s
        held = Held(lease, tool)
        state.held.hold(held)
        try:
            asked = ApprovalAsked(held.id, lease.app_id, tool, call.get("arguments"), timeout)
            await self._events.send(asked)
            decision = await holding.decision(held, state.table, timeout)
        finally:
            state.held.let_go(held)
        if decision not in (STOPPING, ENDED):
            state.counters.decided(lease.app_id, decision)
        logger.info(
            "view %s… of app %s: tools/call %s: %s", lease.id[:6], lease.app_id, tool, decision
        )
        if decision in ("once", "while-open") and lease.ended is not None:
            # Allowed in the same moment as its view ended: an ended view runs nothing more.
            decision, held.why = ENDED, lease.ended
        if decision == "while-open":
            lease.grants.add(tool)
        if decision in ("once", "while-open"):
            state.table.unhold(lease, run=True)
            self._holds = "slot"
            return await self._run(call)
        if decision == STOPPING:
            return Failed(_not_run_while_stopping(tool))
        if decision == ENDED:
            why = f"the view ended ({held.why}): the call of '{tool}' was not run; open it again"
            return Failed(UnknownView(why))
        why = f"no answer within {timeout:g} s" if decision == TIMEOUT else "the person denied it"
        return Failed(Denied(f"the call of '{tool}' was not run: {why}"))

    async def _run(self, call: Wire) -> Outcome:
        """The call sent to the app, answered in full. A reload that ends its view, or the
        apps' stop, cuts it short (between a 2026-07-28 app's rounds, its next round would go
        to the new process): it is then answered so."""
        state, lease = self._state, self._lease
        scope = trio.CancelScope()
        state.running[scope] = lease
        try:
            with scope:
                return await self._until_complete(call)
        finally:
            state.running.pop(scope, None)
        name = call.get("name")
        if lease.ended is not None:
            why = f"the view ended ({lease.ended}) before the call of '{name}' was finished"
            return Failed(UnknownView(f"{why}: it was cancelled"))
        return Failed(
            NotRun(
                f"the supervisor stopped before the call of '{name}' was finished: it was cancelled"
            )
        )

    async def _until_complete(self, call: Wire) -> Outcome:
        """A 2026-07-28 app that asks by answering `input_required` has its questions put to
        the page (or the model) the way a handshake-era app's are, and the call sent again
        with the answers, as a chat turn does."""
        app_id = self._lease.app_id
        try:
            sampling: bool = await ask(
                self._state.registry, lambda r: SamplingAllowed(app_id, r), ASK_TIMEOUT_S
            )
        except Exception:
            sampling = False
        caller = self._caller(call.get("name"), sampling)
        outcome = await self._send("tools/call", call, caller)
        if not isinstance(outcome, Succeeded) or outcome.result.get("resultType") != (
            "input_required"
        ):
            return outcome

        async def again(resumed: Wire) -> Wire:
            answer = await self._send("tools/call", resumed, caller)
            if isinstance(answer, Failed):
                raise _RetryFailed(answer)
            return answer.result

        try:
            return Succeeded(await until_complete(caller.ask, call, outcome.result, again))
        except _RetryFailed as failed:
            return failed.outcome
        except ServerRequestRefused as refused:
            why = f"tool '{call.get('name')}' of app '{app_id}' asked for input: {refused}"
            return Failed(NotRun(why))

    def _caller(self, tool: Any, sampling: bool = False) -> ViewCaller:
        state = self._state
        answer_s = state.table.config.approval_timeout_s
        events = self._events if tool is not None else None
        return ViewCaller(
            self._lease, state.questions, state.chats, answer_s, events, tool or "", sampling
        )

    async def _send(self, method: str, params: Wire, caller: ViewCaller) -> Outcome:
        """The request to the view's app, to the actor the view was opened for only."""
        lease = self._lease
        abandoned = Abandonment()
        try:
            result: Wire = await ask(
                self._state.registry,
                lambda reply: ToApp(
                    lease.app_id,
                    UpstreamRequest(method, params, reply, caller, abandoned),
                    lease.actor,
                ),
            )
        except trio.Cancelled:
            abandoned.set()
            raise
        except (AppError, ActorUnavailable) as error:
            return Failed(error)
        return Succeeded(result)


class _RetryFailed(McpappsError):
    """A view's call sent again with the person's answers got an error: that is the outcome."""

    def __init__(self, outcome: Failed) -> None:
        super().__init__(str(outcome.error))
        self.outcome = outcome


def _not_run_while_stopping(tool: str) -> NotRun:
    """A view's call that was to start once the supervisor began shutting down: new work is not
    taken then (a chat's new turn is refused the same way), and the call is not run."""
    return NotRun(
        f"the supervisor is stopping: the call of '{tool}' was not run; make it again once it"
        " is back"
    )


def _said(error: McpappsError) -> str:
    """An error on the way to the app, as the view reads it (the words the MCP endpoints use)."""
    if isinstance(error, ActorUnavailable):
        return f"mcpapps could not pass the request on: {error}"
    return getattr(error, "message", None) or str(error)
