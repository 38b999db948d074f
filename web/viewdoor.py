"""The view door: the state behind `/apps/views…` (web/viewroutes.py has the routes) — the
views' leases and limits (web/views.py), the calls waiting for the person's approval
(web/viewapprovals.py), the apps' questions waiting for the page (web/viewcaller.py), the
counters of decisions and refusals — and the running of a view's tool call (web/viewcalls.py).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Mapping
from typing import Any

import mcp_types as types
import trio
from prometheus_client import CollectorRegistry, Counter

from actors.asking import Questions
from actors.catalog import Wire
from actors.messages import HubMessage, RegistryMessage, Reloaded, SamplingAllowed, Watch
from actors.metrics import Metrics
from actors.runtime import ASK_TIMEOUT_S, Mailbox, ask
from supervisor.model.reload import ReloadDiff
from web.mcpdoor.relay import APP_ERROR
from web.viewapprovals import Pending
from web.viewcaller import ViewCaller
from web.viewcalls import call_until_complete
from web.views import UNKNOWN_VIEW, Approval, Lease, Refused, ViewsConfig, ViewTable

logger = logging.getLogger("mcpapps.views")


class ViewDoor:
    """The views of this front door and the calls waiting for the person's answer."""

    def __init__(
        self,
        registry: Mailbox[RegistryMessage],
        config: ViewsConfig | None = None,
        approvals: Mapping[str, Approval] | None = None,
        metrics: Metrics | None = None,
        clock: Callable[[], float] | None = None,
        ui_settings: Callable[[str], Mapping[str, Any]] | None = None,
    ) -> None:
        self.registry = registry
        # What the page needs to render an app's views ([apps.entries.<id>] max_ui_bytes, ...).
        self.ui_settings = ui_settings or (lambda app_id: {})
        self.table = ViewTable(config, clock) if clock else ViewTable(config)
        self.table.on_end = self._view_ended
        self.approvals = dict(approvals or {})
        self.pending: dict[str, Pending] = {}
        self.questions = Questions()  # the apps' questions to the views' pages
        self.asked: dict[str, str] = {}  # a waiting question's request id → its view's id
        self.chats: Mailbox[HubMessage] | None = (
            None  # the agent, for sampling (set with the routes)
        )
        self.nursery: trio.Nursery | None = None  # where the views' tool calls run
        # The scopes of the calls running there, each with its view's lease.
        self.running: dict[trio.CancelScope, Lease] = {}
        self.stopping = False  # the supervisor is shutting down: no call is held for approval
        self.closing = False  # the apps are stopped: a call still running is cut short
        # Without the supervisor's metrics (a test), counters of their own: never the global
        # registry, where a second door would clash with the first.
        registry_ = metrics.registry if metrics is not None else CollectorRegistry()
        self.decisions = Counter(
            "mcpapps_view_approvals",
            "Approvals of a view's tool calls, by app and decision (once, while-open, deny,"
            " timeout).",
            ["app", "decision"],
            registry=registry_,
        )
        self.refusals = Counter(
            "mcpapps_view_refusals",
            "Requests of a view the server refused, by app and JSON-RPC error code.",
            ["app", "code"],
            registry=registry_,
        )

    def approval(self, app_id: str) -> Approval:
        return self.approvals.get(app_id, "writes")

    async def watch(self) -> None:
        """Views of an app whose definition a reload changed, or that it stops, end."""
        facts_in, facts = trio.open_memory_channel[Any](256)
        self.registry.tell(Watch(facts_in))
        async with facts, trio.open_nursery() as nursery:
            self.nursery = nursery
            async for fact in facts:
                if isinstance(fact, Reloaded):
                    for app_id, why in _ended_by(fact.diff):
                        # A call of its views still running (a 2026-07-28 app's, between its
                        # rounds) would send its next round to the new process: it ends here,
                        # before its questions are answered `cancel`.
                        for scope, lease in self.running.items():
                            if lease.app_id == app_id:
                                scope.cancel()
                        if dropped := self.table.drop_app(app_id, why):
                            logger.info("app %s changed: %d of its views ended", app_id, dropped)
                    if fact.approvals is not None:
                        self.set_approvals(dict(fact.approvals))

    def set_approvals(self, approvals: Mapping[str, Approval]) -> None:
        """A reload's approval policies, in force from the next call on. A grant already given
        for a view ("allow while open") lasts as long as that view: the person gave it."""
        for app_id in sorted(set(self.approvals) | set(approvals)):
            before, after = self.approval(app_id), approvals.get(app_id, "writes")
            if before != after:
                logger.info("views of app %s: approval is now %s (was %s)", app_id, after, before)
        self.approvals = dict(approvals)

    def hold(self, pending: Pending) -> None:
        """A call waits for the person's approval, unless the supervisor is shutting down or
        its view has ended."""
        if self.stopping:
            pending.stop()
        elif pending.lease.ended is not None:
            pending.end(pending.lease.ended)
        else:
            self.pending[pending.id] = pending

    def _view_ended(self, lease: Lease, why: str) -> None:
        """A view's lease ended, however it did (closed, expired, its app restarted or stopped
        by a reload): a call waiting for the person's approval is not run, it is answered at
        once, and an approval posted for it afterwards is for no call; the app's questions to
        the page are answered `cancel` (the app ends its call as it chooses)."""
        for pending in [p for p in self.pending.values() if p.lease is lease]:
            pending.end(why)
            del self.pending[pending.id]
        self.cancel_questions(lease.id, f"its view ended ({why}), so it was cancelled")
        logger.info("view %s… of app %s ended: %s", lease.id[:6], lease.app_id, why)

    def stop_approvals(self) -> None:
        """The supervisor is shutting down, so it takes no new work: the calls waiting for the
        person's approval are not run (each is answered so), and none is held from now on."""
        self.stopping = True
        for pending in self.pending.values():
            pending.stop()
        self.pending.clear()  # an answer that comes now is for no call

    def cut_short(self) -> None:
        """The apps are stopped: a view's call still running (its app's question waits for
        the page, or the door is between the rounds of a 2026-07-28 app's call) can never
        finish. Each is cancelled and answered with an error, as a chat turn cut short is
        (without it, the front door ending the stream would leave the page's request
        unanswered)."""
        self.closing = True
        for scope in self.running:
            scope.cancel()

    def start_call(self, lease: Lease, call: Wire) -> tuple[trio.MemoryReceiveChannel[Any], Any]:
        """Run a view's tool call on its own: what comes out is `("elicitation", question)` for
        each question the app asks, then `("message", outcome)`. The call is the door's (not the
        request's) so that a question can turn the answer into a stream; closing the returned
        scope (the page went away) cancels the call and its questions."""
        events_in, events = trio.open_memory_channel[Any](8)
        scope = trio.CancelScope()

        async def run() -> None:
            outcome: dict[str, Any] | None = None
            async with events_in:
                try:
                    with scope:
                        outcome = await self._run_call(lease, call, events_in)
                finally:
                    self.running.pop(scope, None)
                if outcome is None and lease.ended is not None:
                    why = (
                        f"the view ended ({lease.ended}) before the call of '{call.get('name')}'"
                        " was finished: it was cancelled"
                    )
                    outcome = {"error": Refused(UNKNOWN_VIEW, why).error()}
                elif outcome is None and self.closing:
                    why = (
                        f"the supervisor stopped before the call of '{call.get('name')}' was"
                        " finished: it was cancelled"
                    )
                    outcome = {"error": Refused(APP_ERROR, why).error()}
                if outcome is not None:  # else the page went away
                    with contextlib.suppress(trio.BrokenResourceError):
                        await events_in.send(("message", outcome))

        if self.nursery is None:
            raise Refused(types.INTERNAL_ERROR, "the view door is not running")
        self.running[scope] = lease
        self.nursery.start_soon(run)
        return events, scope

    async def _run_call(
        self, lease: Lease, call: Wire, events: trio.MemorySendChannel[Any]
    ) -> dict[str, Any]:
        app_id = lease.app_id
        try:
            sampling: bool = await ask(
                self.registry, lambda r: SamplingAllowed(app_id, r), ASK_TIMEOUT_S
            )
        except Exception:
            sampling = False
        caller = ViewCaller(self, lease, events, call.get("name"), sampling)
        return await call_until_complete(self, lease, call, caller)

    def cancel_questions(self, view_id: str, why: str) -> None:
        for request_id, owner in list(self.asked.items()):
            if owner == view_id:
                self.questions.cancel(request_id, why)

    def session_contexts(self, chat_session: str) -> list[dict[str, Any]]:
        """The latest model context of each view of the session, taken (each is given once),
        as marked app events of the session's next turn."""
        events = []
        for lease in self.table.of_session(chat_session):
            if lease.model_context:
                events.append(
                    {
                        "tool": f"{lease.app_id}/ui/update-model-context",
                        "args": {},
                        "resultText": lease.model_context,
                    }
                )
                lease.model_context = None
        return events


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
