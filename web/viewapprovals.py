"""A view's tool call held for the person's approval: `approval` is sent at once, and the call
goes to the app only if they allow it (once, or while the view is open) in time."""

from __future__ import annotations

import contextlib
import logging
import secrets
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import mcp_types as types
import trio

from actors.catalog import Wire
from web.keepalives import KEEP_ALIVE, keep_alives_until, with_keep_alives
from web.relay import APP_ERROR
from web.viewcalls import rpc_answer, sse_event
from web.views import DENIED, Lease, Refused

if TYPE_CHECKING:
    from web.viewdoor import ViewDoor

logger = logging.getLogger("mcpapps.views")

STOPPING = "stopping"  # not the person's decision: the supervisor is shutting down


class Pending:
    def __init__(self, lease: Lease, tool: str) -> None:
        self.id = secrets.token_urlsafe(16)
        self.lease = lease
        self.tool = tool
        self.answered = trio.Event()
        self.decision = "deny"

    def stop(self) -> None:
        """The supervisor is shutting down: the call is not run, unless the person allowed it
        already (the apps are still up to answer it)."""
        if not self.answered.is_set():
            self.decision = STOPPING
            self.answered.set()


async def held_for_approval(
    door: ViewDoor, lease: Lease, rpc_id: Any, tool: str, call: Wire
) -> AsyncIterator[bytes]:
    """A call that waits for the person: `approval` is sent at once; the call goes to the app
    only if they allow it in time."""
    pending = Pending(lease, tool)
    door.hold(pending)
    timeout = door.table.config.approval_timeout_s
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
            keep_alives_until(pending.answered, trio.current_time() + timeout)
        ) as beats:
            async for beat in beats:
                yield beat
        decision = pending.decision if pending.answered.is_set() else "timeout"
        if decision != STOPPING:
            door.decisions.labels(lease.app_id, decision).inc()
        logger.info(
            "view %s… of app %s: tools/call %s: %s", lease.id[:6], lease.app_id, tool, decision
        )
        if decision == "while-open":
            lease.grants.add(tool)
        if decision in ("once", "while-open"):
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
            why = (
                f"the supervisor is stopping: the call of '{tool}' was not run; make it again"
                " once it is back"
            )
            outcome = {"error": Refused(APP_ERROR, why).error()}
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
        door.table.release(lease)
