"""The app actor: one per app. It alone owns the app's process or HTTP client, its MCP session,
its catalog and its lifecycle state; everyone else sends it messages.

Inside, two kinds of task share the actor's state: the mailbox loop, which answers at once and
never waits on the app, and the supervision loop, which runs one *incarnation* after another (a
process or HTTP session from connect to death, `actors/apps/incarnation.py`) as the
`SupervisionPolicy` says. Tool calls run in the incarnation's own nursery, so when the
incarnation dies they die with it, and each caller is told why at that moment.

Its parts live beside it: how one incarnation connects, serves and dies
(`actors/apps/incarnation.py`), the app's process as a transport (`actors/apps/child.py`), the calls
(`actors/apps/calls.py`), what the clients asked of the app's one session
(`actors/apps/sessionstate.py`), the app's notifications and catalog refresh
(`actors/apps/changes.py`) and the liveness pings (`actors/apps/liveness.py`).
"""

from __future__ import annotations

import contextlib
import enum
import hmac
import logging
import math
import random
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import mcp_types as types
import trio

from actors.apps.calls import Calls, unsendable
from actors.apps.changes import Changes
from actors.apps.child import StderrTail
from actors.apps.death import SessionEnded, SignInLost
from actors.apps.incarnation import Incarnation, Setup, SignIn, StartTask, live
from actors.apps.liveness import Heard, watch_liveness
from actors.apps.reaper import Reaper
from actors.apps.sessionstate import SessionState
from actors.apps.signin import Client, SignInPlace, TokenFile
from actors.apps.supervision import Ended, Exit, GaveUp, Retry, supervise, wants_restart
from actors.apps.upstream import Upstream
from actors.catalog import Catalog, Wire
from actors.messages import (
    AppFact,
    AppMessage,
    AppStatus,
    AppUnavailable,
    CallFailed,
    CatalogChanged,
    Drain,
    GetCatalog,
    GetStatus,
    HandOver,
    Inherit,
    ReleaseSubscriptions,
    Restart,
    SignInAnswer,
    SignInCallback,
    SignInNeeded,
    SignInRefused,
    SignOut,
    Start,
    StateChanged,
    Stop,
    UpstreamRequest,
)
from actors.metrics import Metrics
from actors.runtime import Actor, Mailbox, Recipient, unhandled
from supervisor.model.envrefs import expand
from supervisor.model.lifecycle import AppState, may_move
from supervisor.model.manifest import AppDefinition

logger = logging.getLogger("mcpapps.app")


class Stopping(enum.Enum):
    """Why the app is going down by request, as a refused call is told ("is restarting")."""

    STOP = "stopping"
    RESTART = "restarting"

    @property
    def told(self) -> str:
        """How a call the stop cut short is told ("was restarted")."""
        return "was restarted" if self is Stopping.RESTART else "was stopped"


class AppActor(Actor[AppMessage]):
    def __init__(
        self,
        definition: AppDefinition,
        *,
        events: Recipient[AppFact],
        environ: Mapping[str, str],
        ui: bool = True,
        source: Path | None = None,
        rng: random.Random | None = None,
        reaper: Reaper | None = None,
        metrics: Metrics | None = None,
        stopped: bool = False,
        sign_in: SignInPlace | None = None,
        start_slots: trio.CapacityLimiter | None = None,
    ) -> None:
        """`stopped`: the app begins Stopped, not Validated (a reload gave a Stopped app a new
        definition); it runs once started. `sign_in`: where an app with `auth = "oauth"` keeps
        its token and is called back. `start_slots`: shared with the other apps, how many
        processes start at once (actors/apps/startslots.py)."""
        self.definition = definition
        self.id = definition.id
        self.mailbox: Mailbox[AppMessage] = Mailbox()
        self._events = events
        self._source = source
        self._rng = rng or random.Random()
        self._stderr = StderrTail(self.id)

        self._state = AppState.STOPPED if stopped else AppState.VALIDATED
        self._entered: dict[str, float] = {self._state.value: time.time()}
        self._last_error: str | None = None
        self._catalog = Catalog()
        self._restarts = 0
        self._next_retry_at: float | None = None
        self._gave_up = False

        self._nursery: trio.Nursery | None = None
        # Start, Stop and Restart run one at a time, in the order they came, so that a Stop
        # sent just after a Restart is never undone by it.
        self._commands_in, self._commands = trio.open_memory_channel[Any](math.inf)
        # Going down by request: calls in flight may finish, new ones are refused.
        self._stopping: Stopping | None = None
        self._loop_scope: trio.CancelScope | None = None
        self._loop_done = trio.Event()
        self._loop_done.set()
        self._loaded = trio.Event()
        self._current = Incarnation()  # the one running, or the last one (none yet: blank)
        self._settled = trio.Event()  # set (and replaced) when a call ends or the state changes
        self._heard = Heard()
        self._session = SessionState(self.id, definition.manifest.request_timeout_seconds)
        # The actor of the app's new definition, once a reload has handed the session to it.
        self._successor: Recipient[AppMessage] | None = None
        self._changes = Changes(self.id, events, self._catalog_changed, self._session.subscribers)
        # The sign-in in progress (while NeedsSignIn): where the person's answer goes.
        self._pending: SignInNeeded | None = None
        # Why the app must be signed in again, until it runs: what NeedsSignIn shows as its
        # last error, even if a connection failed in between.
        self._sign_in_lost: str | None = None
        self._sign_in = _sign_in(definition, environ, sign_in, self.mailbox.tell)
        self._setup = Setup(
            definition,
            environ=dict(environ),
            ui=ui,
            reaper=reaper,
            tail=self._stderr,
            mourn=self._mourn,
            on_running=self._on_running,
            on_message=self._changes.on_message,
            on_server_request=self._on_server_request,
            sign_in=self._sign_in,
            linger=self._spawn,
            start_slots=start_slots,
        )
        self._calls = Calls(
            self.id,
            timeout_s=definition.manifest.request_timeout_seconds,
            slots=definition.supervision.max_concurrent_calls,
            metrics=metrics,
            on_answer=self._answered,
            on_done=self._session.done,
            on_settled=self._wake_drain,
            stopped_text=self._stopped_text,
        )

    # ---- the mailbox -------------------------------------------------------------------------

    async def _begin(self, nursery: trio.Nursery) -> None:
        # The lifecycle waits for the owner's `Start` message.
        nursery.start_soon(self._lifecycle)

    def _handle(self, message: AppMessage) -> None:
        match message:
            case UpstreamRequest():
                self._call(message)
            case GetStatus(reply):
                reply.send(self.status())
            case GetCatalog(reply):
                reply.send(self._catalog)
            case Start() | Stop() | Restart() | Drain() | SignOut():
                self._commands_in.send_nowait(message)
            case ReleaseSubscriptions(owner) if self._successor is not None:
                self._successor.tell(message)  # the subscriptions are the successor's now
            case ReleaseSubscriptions(owner):
                calls = self._current.calls
                start = None if calls is None else calls.start_soon
                self._session.release(owner, self._current.upstream, start)
            case HandOver(successor, reply):
                successor.tell(Inherit(self._session.snapshot()))
                self._successor = successor
                reply.send(None)
            case Inherit(snapshot):
                self._session.inherit(snapshot)
            case SignInNeeded():
                self._asked(message)
            case SignInCallback():
                self._answered_sign_in(message)
            case _:
                unhandled(f"app {self.id}", message)

    # ---- status ------------------------------------------------------------------------------

    def status(self) -> AppStatus:
        m = self.definition.manifest
        running = self._state is AppState.RUNNING
        return AppStatus(
            id=self.id,
            name=m.name or self.id,
            state=self._state,
            entered_at=dict(self._entered),
            transport=self.definition.transport,
            source=str(self._source) if self._source else None,
            url=m.url if self.definition.transport_spec.remote else None,
            pid=self._current.pid,
            protocol_version=self._current.protocol_version,
            counts=self._catalog.counts(),
            has_ui=m.has_ui,
            restarts=self._restarts,
            next_retry_at=self._next_retry_at,
            gave_up=self._gave_up,
            last_error=None if running else self._last_error,
            previous_error=self._last_error if running else None,
            stderr=tuple(self._stderr.lines),
            in_flight=len(self._calls.in_flight),
            auth=m.auth if self.definition.signs_in else None,
            sign_in_url=self._pending.url if self._pending is not None else None,
            onboarding_skill=m.onboarding_skill,
        )

    def _enter(self, state: AppState, *, error: str | None = None) -> None:
        previous = self._state
        if not may_move(previous, state):
            # A bug of ours; the state still follows what happened, so that status is true.
            logger.error(
                "app %s: %s → %s is not a transition of the lifecycle", self.id, previous, state
            )
        self._state = state
        # The catalog is the Running app's: it goes when the app leaves Running, and is told
        # after the state, so that the registry never holds a Running app without its tools
        # (a call meanwhile would hear "unknown tool" rather than "not available").
        emptied = previous is AppState.RUNNING and self._catalog != Catalog()
        if state is not AppState.RUNNING:
            self._catalog = Catalog()
        self._wake_drain()
        self._entered[state.value] = time.time()
        if error is not None:
            self._last_error = error
        if state is not AppState.FAILED:
            self._next_retry_at = None
        if state is not AppState.NEEDS_SIGN_IN:
            self._pending = None
        detail = ""
        if state is AppState.RUNNING:
            summary = self._catalog.summary()
            detail = f" ({summary}; protocol {self._current.protocol_version})"
        elif state is AppState.FAILED and error:
            detail = f": {error}"
        elif state is AppState.LOADED and self._current.pid:
            detail = f" (pid {self._current.pid})"
        elif state is AppState.NEEDS_SIGN_IN:
            # Never the URL or a token in the log: the control page shows where to sign in.
            detail = ": a person must sign in (the control page's Sign in button)"
        level = logging.WARNING if state is AppState.FAILED else logging.INFO
        logger.log(level, "app %s: %s → %s%s", self.id, previous, state, detail)
        self._events.tell(StateChanged(self.status()))
        if emptied:
            self._events.tell(CatalogChanged(self.id, self._catalog))

    # ---- lifecycle control -------------------------------------------------------------------

    async def _lifecycle(self) -> None:
        async for command in self._commands:
            match command:
                case Start(reply):
                    await self._start()
                case Drain(reply):
                    await self._drain(Stopping.STOP)
                case Stop(reply, grace):
                    await self._stop(Stopping.STOP, grace=grace)
                case Restart(reply):
                    await self._stop(Stopping.RESTART)
                    await self._start()
                case SignOut(reply):
                    if self._sign_out(reply):
                        await self._stop(Stopping.RESTART)
                        await self._start()
            reply.send(self.status())

    async def _start(self) -> None:
        """Start supervising; returns once the app is Loaded, so the answer to Start or Restart
        shows the new process. A no-op when already supervised, except while the app is dead
        and waits for its automatic restart: the person asked for it now, so that wait ends and
        supervision begins anew (its restart limit counted afresh, as after a start from
        Stopped or from a given-up Failed)."""
        if not self._loop_done.is_set():
            if self._state is not AppState.FAILED:
                return  # Loaded or Running: it is started
            await self._stop(Stopping.RESTART, grace=False)  # no calls: they died with it
        self._gave_up = False
        self._loaded = trio.Event()
        self._loop_done = trio.Event()
        self._loop_scope = trio.CancelScope()
        self._spawn(self._supervised, self._loop_scope)
        await self._loaded.wait()

    async def _supervised(self, scope: trio.CancelScope) -> None:
        try:
            with scope:
                outcome = await supervise(
                    self._incarnation,
                    self.definition.supervision,
                    on_retry=self._on_retry,
                    rng=self._rng,
                )
                match outcome:
                    case GaveUp(exit):
                        self._gave_up = True
                        p = self.definition.supervision
                        self._last_error = (
                            f"{exit.reason}; gave up after {p.intensity} restarts within"
                            f" {p.period_s:g} s (restart it by hand once the cause is fixed)"
                        )
                        logger.error("app %s: %s", self.id, self._last_error)
                        self._events.tell(StateChanged(self.status()))
                    case Ended(exit):
                        self._gave_up = False
                        if not exit.abnormal and self._state is not AppState.STOPPED:
                            self._enter(AppState.STOPPED)
        finally:
            self._loop_scope = None
            self._loop_done.set()

    def _on_retry(self, exit: Exit, retry: Retry) -> None:
        if self._stopping is not None and self._loop_scope is not None:
            self._loop_scope.cancel()  # being stopped: no new process just to stop it again
            return
        self._restarts += 1
        self._next_retry_at = time.time() + retry.delay
        logger.info(
            "app %s: restarting in %.2f s (restart %d)", self.id, retry.delay, self._restarts
        )
        self._events.tell(StateChanged(self.status()))

    async def _drain(self, why: Stopping) -> None:
        """Refuse new calls; let those in flight finish for up to `stop_grace_s` (or until the
        app dies, which answers them anyway)."""
        self._stopping = why
        with trio.move_on_after(self.definition.supervision.stop_grace_s):
            while self._calls.in_flight and self._state is AppState.RUNNING:
                await self._settled.wait()

    def _wake_drain(self) -> None:
        self._settled.set()
        self._settled = trio.Event()

    async def _stop(self, why: Stopping, *, grace: bool = True) -> None:
        """End the incarnation (its process goes down the stop ladder) and the supervision
        loop; with `grace`, calls in flight may finish first."""
        supervised = not self._loop_done.is_set()
        if supervised:
            if grace:
                await self._drain(why)
            self._stopping = why
            if self._loop_scope is not None:
                self._loop_scope.cancel()
            await self._loop_done.wait()
        # A restart's calls are refused as "restarting" until its next process is Loaded
        # (`_incarnation`), not as those of an app that is not running though Running.
        self._stopping = why if why is Stopping.RESTART else None
        if why is Stopping.STOP and (supervised or self._state is AppState.FAILED):
            self._gave_up = False
            self._enter(AppState.STOPPED)

    # ---- one incarnation ---------------------------------------------------------------------

    async def _incarnation(self) -> Exit:
        """Connect, enumerate, serve until the connection dies; say how it ended."""
        incarnation = self._current = Incarnation(process=self.definition.transport_spec.process)
        if self._stopping is Stopping.RESTART:
            self._stopping = None  # the restart asked for is under way
        self._stderr.new_process()
        self._enter(AppState.LOADED)
        self._loaded.set()
        try:
            await live(incarnation, self._setup)
            incarnation.declare(SessionEnded())  # only if nothing said why
            self._mourn(incarnation)
            return incarnation.exit()
        finally:
            # Stopped or restarted by request (cancelled): the callers still waiting hear why.
            # The app stays Running (its catalog with it) until the stop or the next start
            # says what it is now; calls meanwhile are refused as the app's (`_stopping`).
            incarnation.end()
            self._calls.fail_all(self._stopped_text())

    def _mourn(self, incarnation: Incarnation) -> None:
        """The moment the incarnation is known dead: no new calls, the calls in flight fail
        with the cause, and the state says so — before the (possibly slow) teardown."""
        if not incarnation.mourn():
            return
        exit = incarnation.exit()
        self._calls.fail_all(f"app '{self.id}' died during the call: {exit.reason}")
        if exit.at_once:  # connected again at once (`_incarnation` enters Loaded)
            self._last_error = self._sign_in_lost = exit.reason
            logger.info("app %s: %s", self.id, exit.reason)
        elif exit.abnormal or wants_restart(self.definition.supervision.restart, exit):
            self._enter(AppState.FAILED, error=exit.reason)
        else:  # a clean exit that is not restarted: the app has stopped by itself
            self._enter(AppState.STOPPED, error=exit.reason)

    def _on_running(
        self, incarnation: Incarnation, upstream: Upstream, catalog: Catalog, start: StartTask
    ) -> None:
        """The incarnation's session listed its catalog: the app is Running, and its tasks
        start (each ends the incarnation if it fails)."""
        self._catalog = catalog
        self._sign_in_lost = None
        upstream.log_level = self._session.log_level
        self._heard.now()
        # The catalog first: the moment the registry hears Running, the app's tools are there.
        self._events.tell(CatalogChanged(self.id, self._catalog))
        self._enter(AppState.RUNNING)
        changes = self._changes
        start(self._watch_liveness, incarnation, upstream)
        start(changes.refresh, upstream)
        start(self._session.watch, upstream, changes.list_changed, changes.resource_updated)
        start(self._session.restore, upstream)

    async def _on_server_request(self, method: str, params: Wire) -> Wire:
        timeout = self.definition.manifest.request_timeout_seconds
        return await self._calls.in_flight.ask_client(method, params, timeout)

    def _catalog_changed(self, catalog: Catalog) -> None:
        self._catalog = catalog
        self._events.tell(CatalogChanged(self.id, catalog))
        self._events.tell(StateChanged(self.status()))

    async def _watch_liveness(self, incarnation: Incarnation, upstream: Upstream) -> None:
        policy = self.definition.supervision
        incarnation.declare(await watch_liveness(self.id, upstream, policy, self._heard))

    # ---- calls -------------------------------------------------------------------------------

    def _call(self, message: UpstreamRequest) -> None:
        if self._stopping is not None:
            text = f"app '{self.id}' is {self._stopping.value}"
            message.reply.fail(AppUnavailable(self.id, text))
            return
        incarnation = self._current
        upstream, calls = incarnation.upstream, incarnation.calls
        if self._state is not AppState.RUNNING or calls is None or upstream is None:
            message.reply.fail(AppUnavailable(self.id, self._unavailable_text()))
            return
        if (why := unsendable(message)) is not None:
            # Refused here: the session's writer could not encode it, and would take the whole
            # session down with it.
            error = types.ErrorData(code=types.INVALID_PARAMS, message=why)
            message.reply.fail(CallFailed(self.id, why, rpc_error=error))
            return
        if self._session.handle(message, upstream):
            return
        self._calls.start(message, upstream, calls, incarnation.lost)

    def _unavailable_text(self) -> str:
        if self._state is AppState.NEEDS_SIGN_IN:
            return (
                f"app '{self.id}' is waiting for a person to sign in: press Sign in for it on"
                " the control page"
            )
        text = f"app '{self.id}' is not running (state {self._state}"
        if self._last_error and self._state is not AppState.RUNNING:
            text += f": {self._last_error}"
        if self._next_retry_at is not None:
            text += f"; next restart in {max(0.0, self._next_retry_at - time.time()):.1f} s"
        return text + ")"

    def _answered(self, message: UpstreamRequest | None) -> None:
        """The app answered a request (`message`, if it was one it agreed to): it is alive."""
        self._heard.now()
        if message is not None:
            self._session.answered(message)

    # ---- signing in ----------------------------------------------------------------------------

    def _asked(self, message: SignInNeeded) -> None:
        """The incarnation's OAuth client needs a person. While connecting, the app waits for
        them (NeedsSignIn, the start-up clock stopped); once Running, the sign-in it ran on is
        gone, and a new connection asks (with no backoff: this is no failure)."""
        incarnation = self._current
        if message.incarnation is not incarnation or incarnation.died.is_set():
            return  # an incarnation that has ended asked
        if incarnation.running:
            why = message.why or "the app refused its token, and it could not be renewed"
            incarnation.declare(SignInLost(why))
            return
        self._pending = message
        incarnation.wait_for_person(True)
        if message.why is not None:
            self._sign_in_lost = f"needs a new sign-in: {message.why}"
        if self._sign_in_lost is not None:
            self._last_error = self._sign_in_lost
        self._enter(AppState.NEEDS_SIGN_IN)

    def _answered_sign_in(self, message: SignInCallback) -> None:
        """The front door brought the authorization server's answer: the right one goes to the
        OAuth client that waits for it, and the app goes on connecting (Loaded)."""
        pending, reply = self._pending, message.reply
        if self._sign_in is None:
            reply.fail(SignInRefused(self.id, f"app '{self.id}' does not sign in"))
            return
        if pending is None or self._state is not AppState.NEEDS_SIGN_IN:
            reply.fail(
                SignInRefused(
                    self.id,
                    f"app '{self.id}' is not waiting for a sign-in (it is {self._state}): this"
                    " answer came too late or twice. If the app still needs one, press Sign in"
                    " again on the control page.",
                )
            )
            return
        if message.state is None or not hmac.compare_digest(
            message.state.encode(), pending.state.encode()
        ):
            reply.fail(
                SignInRefused(
                    self.id,
                    f"this answer does not belong to the sign-in in progress for app"
                    f" '{self.id}' (its state does not match), so it is refused. Press Sign in"
                    " on the control page and finish the sign-in in the page it opens.",
                )
            )
            return
        if message.error is not None or not message.code:
            said = message.error or "no authorization code"
            self._current.declare(SignInLost(f"the sign-in was refused ({said})"))
            reply.fail(
                SignInRefused(
                    self.id,
                    f"the authorization server did not sign you in to app '{self.id}'"
                    f" ({said}). Press Sign in on the control page to try again.",
                )
            )
            return
        # Its client may be gone (the incarnation ended): then the state says what comes next.
        with contextlib.suppress(
            trio.WouldBlock, trio.BrokenResourceError, trio.ClosedResourceError
        ):
            pending.answers.send_nowait(SignInAnswer(message.code, message.state, message.iss))
        self._current.wait_for_person(False)
        self._enter(AppState.LOADED)
        logger.info("app %s: signed in; connecting", self.id)
        reply.send(self.status())

    def _sign_out(self, reply: Any) -> bool:
        """Forget the token and the client registration; whether the app must connect again
        (it is connected, or connecting, with what was forgotten)."""
        if self._sign_in is None:
            reply.fail(
                SignInRefused(self.id, f"app '{self.id}' does not sign in (its auth is not oauth)")
            )
            return False
        self._sign_in.file.forget()
        logger.info("app %s: signed out (its sign-in is forgotten)", self.id)
        if self._loop_done.is_set() or self._state not in (AppState.LOADED, AppState.RUNNING):
            return False
        self._last_error = self._sign_in_lost = "needs a new sign-in: signed out by request"
        return True

    def _stopped_text(self) -> str:
        return f"app '{self.id}' {(self._stopping or Stopping.STOP).told} during the call"


def _sign_in(
    definition: AppDefinition,
    environ: Mapping[str, str],
    place: SignInPlace | None,
    tell: Any,
) -> SignIn | None:
    """How the app's incarnations sign in, if it is an app that does (`auth = "oauth"`)."""
    if not definition.signs_in or place is None:
        return None
    m = definition.manifest
    client = None
    if m.client_id is not None:
        secret = expand(m.client_secret, environ) if m.client_secret is not None else None
        client = Client(m.client_id, secret)
    redirect_uri = place.callback_url(definition.id)
    file = TokenFile(place.token_path(definition.id), redirect_uri, client)
    return SignIn(file=file, redirect_uri=redirect_uri, scopes=m.scopes, tell=tell)
