"""One incarnation of an app: a process or HTTP session from connect to death.

What lives and dies with it is kept here, on one object the app actor makes at each start, so
nothing of an old incarnation has to be reset by hand and nothing of it outlives it: its
session (`upstream`) and the nursery its calls run in, its pid, its protocol revision, when it
reached Running, and why it died. Death is declared in one place, `declare`, with a cause
(`actors/apps/death.py`): the first cause wins, and the actor acts on it once (`mourn`).

`live` runs one: it connects, lists the catalog under the start-up deadline, runs the
incarnation's tasks so that whatever one of them raises ends this incarnation only, and tears
the session and the process down.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import attrs
import trio

from actors.apps.child import STDERR_DRAIN_S, StderrTail
from actors.apps.death import (
    Cause,
    ConnectionFailed,
    InternalError,
    SessionEnded,
    SignInLost,
    SpawnFailed,
    StartupTimeout,
)
from actors.apps.processgroup import SpawnError
from actors.apps.reaper import Reaper
from actors.apps.signin import SignInFlow, TokenFile, app_auth
from actors.apps.supervision import Exit
from actors.apps.transports import CONNECTS, Link, Wiring
from actors.apps.upstream import (
    ServerRequestHandler,
    Upstream,
    connect,
    error_text,
    upstream_error,
)
from actors.cancellation import split_cancelled
from actors.catalog import Catalog
from actors.messages import AppMessage
from supervisor.model.errors import UpstreamLost
from supervisor.model.manifest import AppDefinition

logger = logging.getLogger("mcpapps.app")


class Incarnation:
    def __init__(self, *, process: bool = False) -> None:
        self.process = process  # an app process (its exit status says more than a broken pipe)
        self.died = trio.Event()
        self.cause: Cause | None = None
        self.pid: int | None = None
        self.protocol_version: str | None = None
        self.upstream: Upstream | None = None  # while it serves calls
        self.calls: trio.Nursery | None = None  # where its calls run, while it serves them
        self.running_since: float | None = None  # trio time it reached Running, if it did
        self._mourned = False
        # While a person signs in, the start-up deadline's clock stands still.
        self.waiting_for_person = False
        self._person_changed = trio.Event()

    def wait_for_person(self, waiting: bool) -> None:
        """A sign-in began (True) or its answer came (False)."""
        self.waiting_for_person = waiting
        self._person_changed.set()
        self._person_changed = trio.Event()

    async def person_changed(self) -> None:
        await self._person_changed.wait()

    @property
    def running(self) -> bool:
        """Whether it reached Running (a failure before that is a failed start)."""
        return self.running_since is not None

    def serve(self, upstream: Upstream, calls: trio.Nursery) -> None:
        """It is Running: calls may be sent on `upstream`, as tasks in `calls`."""
        self.upstream, self.calls = upstream, calls
        self.protocol_version = upstream.protocol_version
        self.running_since = trio.current_time()

    def declare(self, cause: Cause) -> bool:
        """Declare it dead; the first cause wins. True if this was the cause."""
        if self.died.is_set():
            return False
        self.cause = cause
        self.died.set()
        return True

    @property
    def reason(self) -> str | None:
        return None if self.cause is None else self.cause.reason

    def end(self) -> None:
        """It serves no more calls."""
        self.upstream = self.calls = None

    async def lost(self, error: BaseException) -> str:
        """Declare it dead because a request found the connection broken; the reason. A dying
        process breaks the pipe a moment before its exit status is known, and the status says
        more; so wait that moment for it."""
        if self.process:
            with trio.move_on_after(STDERR_DRAIN_S * 3):
                await self.died.wait()
        self.declare(ConnectionFailed(error_text(error)))
        return self.reason or ""

    def mourn(self) -> bool:
        """It is dead and serves no more calls; True the first time, so that the death is
        acted on once."""
        self.end()
        first, self._mourned = not self._mourned, True
        return first

    def exit(self) -> Exit:
        """How it ended, as supervision reads it."""
        since = self.running_since
        ran_for = 0.0 if since is None else trio.current_time() - since
        cause = self.cause or SessionEnded()
        again = isinstance(cause, SignInLost)
        return Exit(reason=cause.reason, abnormal=cause.abnormal, ran_for=ran_for, at_once=again)


StartTask = Callable[..., None]  # starts `fn(*args)` as a task of the incarnation


@attrs.frozen
class Setup:
    """What each incarnation of one app is made from, and the app actor's hooks: `mourn` acts
    on a death (once, however often it is called), `on_running` adopts a session that has
    listed its catalog and starts the actor's tasks for it; `on_message` and
    `on_server_request` are the SDK client's handlers; `linger` starts a task that may outlive
    the incarnation (what a dead process left behind is taken down there)."""

    definition: AppDefinition
    environ: Mapping[str, str]
    ui: bool
    reaper: Reaper | None
    tail: StderrTail
    mourn: Callable[[Incarnation], None]
    on_running: Callable[[Incarnation, Upstream, Catalog, StartTask], None]
    on_message: Callable[[Any], Awaitable[None]]
    on_server_request: ServerRequestHandler
    linger: Callable[[Callable[[], Awaitable[None]]], None] | None = None
    sign_in: SignIn | None = None  # `auth = "oauth"`
    start_slots: trio.CapacityLimiter | None = None  # shared by the apps (startslots.py)


@attrs.frozen
class SignIn:
    """How an incarnation of an app that signs in makes its OAuth client: the token file, the
    callback the authorization server sends the person back to, the scopes to ask for, and the
    app actor's mailbox, which the client's redirect handler tells."""

    file: TokenFile
    redirect_uri: str
    scopes: tuple[str, ...]
    tell: Callable[[AppMessage], None]


async def live(incarnation: Incarnation, setup: Setup) -> None:
    """Connect, list the catalog (under `startupTimeoutSeconds`) and serve until death is
    declared; then the session and the process are taken down, under that cancellation."""
    await _Life(incarnation, setup).run()


class _Life:
    def __init__(self, incarnation: Incarnation, setup: Setup) -> None:
        self.incarnation = incarnation
        self.setup = setup
        self.app_id = setup.definition.id
        self._slot: trio.CapacityLimiter | None = None  # held from the spawn until Running

    async def run(self) -> None:
        incarnation = self.incarnation
        slots = self.setup.start_slots if incarnation.process else None
        if slots is not None:
            # Loaded, waiting for a start slot: the start-up deadline has not begun.
            if not slots.available_tokens:
                logger.info(
                    "app %s: waiting to start: %d apps are starting ([apps] max_starting)",
                    self.app_id,
                    slots.borrowed_tokens,
                )
            await slots.acquire_on_behalf_of(incarnation)
            self._slot = slots
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._end_on_death, nursery)
                nursery.start_soon(self._start_up_deadline)
                try:
                    await self._serve(nursery)
                except* Exception as group:
                    self._failure(group)
        except* Exception as group:  # a bug of ours must end this incarnation, not the actor
            logger.exception("app %s: unexpected error", self.app_id, exc_info=group)
            incarnation.declare(InternalError(error_text(first_leaf(group))))
        finally:
            self._free_slot()

    def _free_slot(self) -> None:
        """The start is over (Running, or dead before): the next app may take the slot."""
        if self._slot is not None:
            self._slot.release_on_behalf_of(self.incarnation)
            self._slot = None

    async def _end_on_death(self, nursery: trio.Nursery) -> None:
        await self.incarnation.died.wait()
        self.setup.mourn(self.incarnation)
        nursery.cancel_scope.cancel()

    async def _start_up_deadline(self) -> None:
        """`startupTimeoutSeconds` of the app's own time: the clock stops while a person signs
        in (however long that takes), and goes on where it stopped once the answer is in."""
        incarnation = self.incarnation
        seconds = self.setup.definition.manifest.startup_timeout_seconds
        left = float(seconds)
        while left > 0:
            if incarnation.waiting_for_person:
                await incarnation.person_changed()
                continue
            began = trio.current_time()
            with trio.move_on_after(left):
                await incarnation.person_changed()
            left -= trio.current_time() - began
        if not incarnation.running:
            incarnation.declare(StartupTimeout(seconds, self.setup.tail.hint()))

    def _failure(self, error: BaseException) -> None:
        """Declare the death an error of the session or the transport stands for, and act on
        it at once (the teardown that follows may take a while)."""
        error = first_leaf(error)
        if isinstance(error, SpawnError):
            self.incarnation.declare(SpawnFailed(str(error)))
        else:
            running, hint = self.incarnation.running, self.setup.tail.hint()
            self.incarnation.declare(ConnectionFailed(error_text(error), running, hint))
        self.setup.mourn(self.incarnation)

    async def _serve(self, nursery: trio.Nursery) -> None:
        setup, incarnation = self.setup, self.incarnation
        async with (
            self._link(nursery) as link,
            connect(
                link.transport,
                protocol=setup.definition.protocol,
                ui=setup.ui,
                on_message=setup.on_message,
                on_server_request=setup.on_server_request,
                direct=link.direct,
            ) as upstream,
        ):
            try:
                incarnation.protocol_version = upstream.protocol_version
                catalog = await upstream.catalog()
            except Exception as error:
                self._failure(error)
                raise
            incarnation.serve(upstream, nursery)
            self._free_slot()
            setup.on_running(incarnation, upstream, catalog, self._tasks(nursery))
            # Until death is declared, when `_end_on_death` cancels all of this; leaving these
            # blocks (the session's and the process's teardown) runs under that cancellation.
            await trio.sleep_forever()

    def _tasks(self, nursery: trio.Nursery) -> StartTask:
        def start(fn: Callable[..., Awaitable[Any]], *args: Any) -> None:
            nursery.start_soon(self._guarded, fn, *args)

        return start

    async def _guarded(self, fn: Any, *args: Any) -> None:
        """Run a task of the incarnation; whatever it raises ends this incarnation only (and is
        restarted as the policy says), never the actor, the registry or another app."""
        incarnation = self.incarnation
        try:
            await fn(*args)
        except BaseException as caught:
            cancelled, error = split_cancelled(caught)
            if not isinstance(error, Exception):
                raise
            if cancelled or incarnation.died.is_set():
                # Failed as the incarnation went down: that is the death, declared already.
                logger.debug("app %s: %s ended with the incarnation", self.app_id, fn.__name__)
                return
            leaf = first_leaf(error)
            if isinstance(leaf, Exception) and isinstance(upstream_error(leaf), UpstreamLost):
                await incarnation.lost(leaf)
            else:
                logger.exception("app %s: unexpected error in %s", self.app_id, fn.__name__)
                incarnation.declare(InternalError(error_text(leaf)))

    def _link(self, nursery: trio.Nursery) -> contextlib.AbstractAsyncContextManager[Link]:
        """What the SDK client runs over, opened as the app's transport says."""
        setup = self.setup
        auth = None
        if (sign_in := setup.sign_in) is not None:
            url = setup.definition.manifest.url
            assert url is not None  # auth = "oauth" is for apps at a URL
            flow = SignInFlow(sign_in.tell, self.incarnation)
            auth = app_auth(url, sign_in.file, sign_in.redirect_uri, sign_in.scopes, flow)
        return CONNECTS[setup.definition.transport](
            Wiring(
                definition=setup.definition,
                environ=setup.environ,
                incarnation=self.incarnation,
                tail=setup.tail,
                reaper=setup.reaper,
                start_task=self._tasks(nursery),
                on_failure=self._failure,
                auth=auth,
                linger=setup.linger,
            )
        )


def first_leaf(error: BaseException) -> BaseException:
    """The first real error inside (possibly nested) exception groups."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    return error
