"""A view's tool call held for the person's approval: `approval` is sent at once, and the call
goes to the app only if they allow it (once, or while the view is open) in time."""

from __future__ import annotations

import contextlib
import logging
import secrets
from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING, Any

import mcp_types as types
import trio

from actors.catalog import Wire
from web.keepalives import KEEP_ALIVE, keep_alives_until, with_keep_alives
from web.mcpdoor.relay import APP_ERROR
from web.viewcalls import rpc_answer, sse_event
from web.views import DENIED, UNKNOWN_VIEW, Lease, Refused

if TYPE_CHECKING:
    from web.viewdoor import ViewDoor

logger = logging.getLogger("mcpapps.views")

STOPPING = "stopping"  # not the person's decision: the supervisor is shutting down
ENDED = "ended"  # nor this: the view's lease ended (`Pending.why` says how)


class Pending:
    def __init__(self, lease: Lease, tool: str) -> None:
        self.id = secrets.token_urlsafe(16)
        self.lease = lease
        self.tool = tool
        self.answered = trio.Event()
        self.decision = "deny"
        self.why = ""  # how the view ended, when it did

    def stop(self) -> None:
        """The supervisor is shutting down: the call is not run, unless the person allowed it
        already (the apps are still up to answer it)."""
        if not self.answered.is_set():
            self.decision = STOPPING
            self.answered.set()

    def end(self, why: str) -> None:
        """The view's lease ended (`why`): the call is not run, unless the person allowed it
        already, and no answer counts from now on."""
        if not self.answered.is_set():
            self.decision, self.why = ENDED, why
            self.answered.set()


def not_run_while_stopping(tool: str) -> Refused:
    """A view's call that was to start once the supervisor began shutting down: new work is not
    taken then (a chat's new turn is refused the same way), and the call is not run."""
    return Refused(
        APP_ERROR,
        f"the supervisor is stopping: the call of '{tool}' was not run; make it again once it"
        " is back",
    )


async def held_for_approval(
    door: ViewDoor, lease: Lease, rpc_id: Any, tool: str, call: Wire
) -> AsyncGenerator[bytes]:
    """A call that waits for the person: `approval` is sent at once; the call goes to the app
    only if they allow it in time."""
    pending = Pending(lease, tool)
    door.hold(pending)
    timeout = door.table.config.approval_timeout_s
    running = False
    try:
        yield sse_event(
            "approval",
            {
                "approvalId": pending.id,
                "appId": lease.app_id,
                "tool": tool,
                "arguments": call.get("arguments"),
                "timeoutS": timeout,
            },
        )
        async with contextlib.aclosing(
            _until_answered(door, pending, trio.current_time() + timeout)
        ) as beats:
            async for beat in beats:
                yield beat
        decision = pending.decision if pending.answered.is_set() else "timeout"
        if decision not in (STOPPING, ENDED):
            door.decisions.labels(lease.app_id, decision).inc()
        logger.info(
            "view %s… of app %s: tools/call %s: %s", lease.id[:6], lease.app_id, tool, decision
        )
        if decision in ("once", "while-open") and lease.ended is not None:
            # Allowed in the same moment as its view ended: an ended view runs nothing more.
            decision, pending.why = ENDED, lease.ended
        if decision == "while-open":
            lease.grants.add(tool)
        if decision in ("once", "while-open"):
            door.table.unhold(lease, run=True)
            running = True
            events, scope = door.start_call(lease, call)
            try:
                async with events, contextlib.aclosing(with_keep_alives(events)) as items:
                    async for item in items:
                        if item is None:
                            yield KEEP_ALIVE
                            continue
                        kind, data = item
                        if kind == "message":
                            outcome = data
                            break
                        yield sse_event(kind, data)  # the app asks the person
                    else:
                        outcome = {"error": Refused(types.INTERNAL_ERROR, "the call ended").error()}
            finally:
                scope.cancel()
        elif decision == STOPPING:
            outcome = {"error": not_run_while_stopping(tool).error()}
        elif decision == ENDED:
            why = f"the view ended ({pending.why}): the call of '{tool}' was not run; open it again"
            outcome = {"error": Refused(UNKNOWN_VIEW, why).error()}
        else:
            why = (
                f"no answer within {timeout:g} s"
                if decision == "timeout"
                else "the person denied it"
            )
            outcome = {"error": Refused(DENIED, f"the call of '{tool}' was not run: {why}").error()}
        yield sse_event("message", rpc_answer(rpc_id, **outcome))
    finally:
        door.pending.pop(pending.id, None)
        if running:
            door.table.release(lease)
        else:
            door.table.unhold(lease, run=False)


async def _until_answered(
    door: ViewDoor, pending: Pending, deadline: float
) -> AsyncGenerator[bytes]:
    """Keep-alives until the person answers, `deadline` passes or the view's lease ends. A lease
    may expire while its call waits (a page that shows the question keeps it alive; none
    does): it is ended at that moment, which answers the call, rather than when the view is
    next used."""
    table = door.table
    while not pending.answered.is_set() and trio.current_time() < deadline:
        left = table.expires_in(pending.lease)
        if left <= 0:
            table.expire()  # ends this lease, which answers the call
            pending.end(pending.lease.ended or "its lease expired")  # were it ended already
            return
        until = min(deadline, trio.current_time() + left)
        async with contextlib.aclosing(keep_alives_until(pending.answered, until)) as beats:
            async for beat in beats:
                yield beat
