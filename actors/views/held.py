"""The calls held for the person's approval: each waits, in its request's task, until the person
answers (`AnswerApproval`), its time is up, its view's lease ends, or the supervisor shuts
down. The table is the view hub's; the hub's mailbox hands it the answers."""

from __future__ import annotations

import secrets
from collections.abc import Iterator

import trio

from actors.views.leases import Lease, ViewTable
from actors.views.refusals import UnknownApproval

STOPPING = "stopping"  # not the person's decision: the supervisor is shutting down
ENDED = "ended"  # nor this: the view's lease ended (`Held.why` says how)
TIMEOUT = "timeout"  # nor this: no answer in time


class Held:
    """One call waiting for the person."""

    def __init__(self, lease: Lease, tool: str) -> None:
        self.id = secrets.token_urlsafe(16)
        self.lease = lease
        self.tool = tool
        self.answered = trio.Event()
        self.decision = "deny"
        self.why = ""  # how the view ended, when it did

    def decide(self, decision: str) -> None:
        if not self.answered.is_set():
            self.decision = decision
            self.answered.set()

    def end(self, why: str) -> None:
        """The view's lease ended (`why`): the call is not run, unless the person allowed it
        already, and no answer counts from now on."""
        if not self.answered.is_set():
            self.why = why
            self.decide(ENDED)


class HeldCalls:
    """The held calls by approval id."""

    def __init__(self) -> None:
        self._held: dict[str, Held] = {}
        self.stopping = False  # the supervisor is shutting down: nothing is held any more

    def __len__(self) -> int:
        return len(self._held)

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._held))

    def hold(self, held: Held) -> None:
        """A call waits for the person's approval, unless the supervisor is shutting down or
        its view has ended."""
        if self.stopping:
            held.decide(STOPPING)
        elif held.lease.ended is not None:
            held.end(held.lease.ended)
        else:
            self._held[held.id] = held

    def find(self, view_id: str, approval_id: str) -> Held:
        held = self._held.get(approval_id)
        if held is None or held.lease.id != view_id:
            raise UnknownApproval("no call of this view waits for approval")
        return held

    def let_go(self, held: Held) -> None:
        """The call is answered: an answer posted for it from now on is for no call."""
        self._held.pop(held.id, None)

    def end_view(self, lease: Lease, why: str) -> None:
        for held in [h for h in self._held.values() if h.lease is lease]:
            held.end(why)
            del self._held[held.id]

    def stop(self) -> None:
        """The supervisor is shutting down, so it takes no new work: the calls waiting for the
        person's approval are not run (each is answered so), and none is held from now on."""
        self.stopping = True
        for held in self._held.values():
            held.decide(STOPPING)
        self._held.clear()


async def decision(held: Held, table: ViewTable, timeout_s: float) -> str:
    """Wait for the person's decision on `held` for up to `timeout_s`. A lease may expire while
    its call waits (a page that shows the question keeps it alive; none does): it is ended at
    that moment, which answers the call, rather than when the view is next used."""
    deadline = trio.current_time() + timeout_s
    while not held.answered.is_set() and trio.current_time() < deadline:
        left = table.expires_in(held.lease)
        if left <= 0:
            table.expire()  # ends this lease, which answers the call
            held.end(held.lease.ended or "its lease expired")  # were it ended already
            break
        with trio.move_on_at(min(deadline, trio.current_time() + left)):
            await held.answered.wait()
    return held.decision if held.answered.is_set() else TIMEOUT
