"""The views' leases and their limits, as the view hub keeps them (actors/views/hub.py, their one
owner): plain data with the clock passed in, changed only by the hub's mailbox and its own tasks,
between awaits, so nothing ever sees it half changed.

A lease lives in memory only: it is gone when the page tears the view down, when it is not
used for `lease_s`, when its app restarts with a changed definition, and with the process. A
grant ("allow while this app is open") lives in its lease, so it goes with it, and so do the
calls waiting for the person's approval: the table tells its owner (`on_end`) of every lease
that ends, with why, so that none of them is left waiting for an answer that can no longer
count.
"""

from __future__ import annotations

import math
import secrets
import time
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from actors.views.refusals import Limited, TooManyViews, UnknownView
from supervisor.model.viewsconfig import ViewsConfig

# Views open at once, over every app: each holds its lease, its opening call and its model
# context until it is closed or unused for `lease_s`, so without a cap a client could keep
# opening them (the MCP endpoints cap their sessions the same way).
MAX_OPEN_VIEWS = 1_000


@attrs.define
class Lease:
    id: str
    app_id: str
    chat_session: str | None  # the chat session that opened it; None from the app list
    tool_call: Mapping[str, Any] | None  # what it renders: {toolName, resourceUri, ...}
    created: float
    last_used: float
    in_flight: int = 0
    held: int = 0  # tool calls waiting for the person's approval (not in flight)
    requests: deque[float] = attrs.Factory(deque)
    tool_calls: deque[float] = attrs.Factory(deque)
    grants: set[str] = attrs.Factory(set)  # tools allowed while this view is open
    # The call that opens the view, which the person asked for by opening it: it alone runs
    # without approval, once, with exactly the arguments the view was opened with.
    opening: Mapping[str, Any] | None = None
    ended: str | None = None  # why the lease ended, once it has
    # The number of the app's actor the view was opened for (`ActorOf`): its requests go to
    # that actor only, so a view of a definition a reload has replaced runs nothing on the new
    # one, even before the view hub has heard of the reload (which ends the view).
    actor: int | None = None
    # Rebuilt from a saved chat: it shows what it showed and asks its app nothing until the
    # person runs it again (actors/views/restored.py).
    restored: bool = False

    def descriptor(self) -> dict[str, Any]:
        return {
            "viewId": self.id,
            "appId": self.app_id,
            "sessionId": self.chat_session,
            "toolCall": dict(self.tool_call) if self.tool_call else None,
        }


class ViewTable:
    def __init__(
        self,
        config: ViewsConfig | None = None,
        clock: Callable[[], float] = time.monotonic,
        on_end: Callable[[Lease, str], None] | None = None,
    ) -> None:
        self.config = config or ViewsConfig()
        self._clock = clock
        self._leases: dict[str, Lease] = {}
        self.on_end = on_end  # told of every lease that ends, with why

    def __len__(self) -> int:
        return len(self._leases)

    def open(
        self,
        app_id: str,
        chat_session: str | None = None,
        tool_call: Mapping[str, Any] | None = None,
    ) -> Lease:
        self.expire()
        if len(self._leases) >= MAX_OPEN_VIEWS:
            raise TooManyViews(
                f"{MAX_OPEN_VIEWS} views are open, the most there may be: close one, or try again"
                f" once an unused one has expired (after {self.config.lease_s:g} s)",
                self.config.lease_s,
            )
        now = self._clock()
        lease = Lease(secrets.token_urlsafe(24), app_id, chat_session, tool_call, now, now)
        self._leases[lease.id] = lease
        return lease

    def get(self, view_id: str) -> Lease:
        """The live lease, refreshed, or `UnknownView` (unknown, expired or torn down)."""
        self.expire()
        lease = self._leases.get(view_id)
        if lease is None:
            raise UnknownView(
                "this view is unknown to this supervisor or has expired (views last"
                f" {self.config.lease_s:g} s unused, and end when closed or when their app"
                " restarts with a changed definition or is stopped by a reload; behind a load"
                " balancer, a view lives only in the supervisor that opened it): open it again",
            )
        lease.last_used = self._clock()
        return lease

    def close(self, view_id: str, why: str = "its page closed it") -> bool:
        lease = self._leases.get(view_id)
        if lease is not None:
            self._end(lease, why)
        return lease is not None

    def drop_app(self, app_id: str, why: str) -> int:
        gone = [lease for lease in self._leases.values() if lease.app_id == app_id]
        for lease in gone:
            self._end(lease, why)
        return len(gone)

    def of_session(self, chat_session: str) -> list[Lease]:
        self.expire()
        return [lease for lease in self._leases.values() if lease.chat_session == chat_session]

    def admit(self, lease: Lease, *, tool_call: bool) -> None:
        """Count one request of the view in, or refuse it (it is then not counted)."""
        config = self.config
        now = self._clock()
        for stamps in (lease.requests, lease.tool_calls):
            while stamps and stamps[0] <= now - config.window_s:
                stamps.popleft()
        if lease.in_flight >= config.max_in_flight:
            raise Limited(
                f"this view already has {lease.in_flight} requests in flight, the most a view"
                f" may have at once ({config.max_in_flight}): wait for one to finish",
                {"limit": config.max_in_flight, "kind": "in-flight"},
            )
        if len(lease.requests) >= config.max_requests:
            raise _rate_refusal("requests", config.max_requests, lease.requests, config, now)
        if tool_call and len(lease.tool_calls) >= config.max_tool_calls:
            raise _rate_refusal("tool calls", config.max_tool_calls, lease.tool_calls, config, now)
        lease.requests.append(now)
        if tool_call:
            lease.tool_calls.append(now)
        lease.in_flight += 1

    def release(self, lease: Lease) -> None:
        """A request of the view was answered: the view was in use until now."""
        lease.in_flight = max(0, lease.in_flight - 1)
        lease.last_used = max(lease.last_used, self._clock())

    def hold(self, lease: Lease) -> None:
        """An admitted tool call waits for the person's approval: it leaves the requests in
        flight (a person's slow answer must not keep the view's other requests out), and
        counts among the view's held calls instead, of which there are at most as many as
        requests in flight (else `Limited`, and it stays in flight until released)."""
        limit = self.config.max_in_flight
        if lease.held >= limit:
            raise Limited(
                f"this view already has {lease.held} calls waiting for the person's approval,"
                f" the most a view may have at once ({limit}): wait for one to be answered",
                {"limit": limit, "kind": "held"},
            )
        lease.in_flight = max(0, lease.in_flight - 1)
        lease.held += 1

    def unhold(self, lease: Lease, *, run: bool) -> None:
        """A held call was answered; if it is to run, it is in flight again (until released),
        even over the limit: the person allowed it, and the number held is bounded too."""
        lease.held = max(0, lease.held - 1)
        if run:
            lease.in_flight += 1
        lease.last_used = max(lease.last_used, self._clock())

    def expires_in(self, lease: Lease) -> float:
        """Seconds until the lease expires if it is not used meanwhile; a lease with a request
        in flight is in use, so it is looked at again after `lease_s`."""
        if lease.in_flight:
            return self.config.lease_s
        return lease.last_used + self.config.lease_s - self._clock()

    def expire(self) -> None:
        """End every lease unused for `lease_s`. A request in flight is use: a view whose call
        runs long is not ended under it (a call waiting for the person is not in flight: the
        page that shows the question keeps its view alive)."""
        cutoff = self._clock() - self.config.lease_s
        for lease in [
            lease
            for lease in self._leases.values()
            if lease.last_used <= cutoff and not lease.in_flight
        ]:
            self._end(lease, f"it was not used for {self.config.lease_s:g} s, so its lease expired")

    def _end(self, lease: Lease, why: str) -> None:
        del self._leases[lease.id]
        lease.ended = why
        if self.on_end is not None:
            self.on_end(lease, why)


def _rate_refusal(
    what: str, limit: int, stamps: deque[float], config: ViewsConfig, now: float
) -> Limited:
    retry = max(0.0, stamps[0] + config.window_s - now)
    return Limited(
        f"this view made {limit} {what} in the last {config.window_s:g} s, the most a view may:"
        f" retry in {math.ceil(retry)} s",
        {"limit": limit, "kind": what.replace(" ", "-"), "retryAfterS": math.ceil(retry)},
    )
