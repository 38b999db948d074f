"""The app actor: one per app. It alone owns the app's process or HTTP client, its MCP session,
its catalog and its lifecycle state; everyone else sends it messages.

Inside, two kinds of task share the actor's state: the mailbox loop, which answers at once and
never waits on the app, and the supervision loop, which runs one *incarnation* after another (a
process or HTTP session from connect to death) as the `SupervisionPolicy` says. Tool calls run in
the incarnation's own nursery, so when the incarnation dies they die with it, and each caller is
told why at that moment.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import math
import random
import time
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import mcp_types as types
import trio
from mcp.shared.subscriptions import SUBSCRIPTION_ID_META_KEY

from actors.cancellation import split_cancelled
from actors.catalog import Catalog, Wire
from actors.messages import (
    AppFact,
    AppMessage,
    AppNotification,
    AppStatus,
    AppUnavailable,
    CallFailed,
    CallTimeout,
    CatalogChanged,
    Drain,
    GetCatalog,
    GetStatus,
    ReleaseSubscriptions,
    Restart,
    Start,
    StateChanged,
    Stop,
    UpstreamRequest,
)
from actors.metrics import Metrics
from actors.process import ChildProcess, SpawnError, describe_returncode
from actors.reaper import Reaper
from actors.runtime import Answer, Mailbox, Recipient
from actors.stdio import pump_stderr, stdio_streams
from actors.subscriptions import Subscriptions
from actors.supervision import Ended, Exit, GaveUp, Retry, supervise, wants_restart
from actors.upstream import (
    ServerRequestRefused,
    Upstream,
    connect,
    error_text,
    http_transport,
    is_connection_error,
    is_timeout,
)
from supervisor.model import jsonin
from supervisor.model.envrefs import expand
from supervisor.model.era import Era
from supervisor.model.lifecycle import AppState, may_move
from supervisor.model.manifest import AppDefinition

logger = logging.getLogger("mcpapps.app")

STDERR_LINES = 200
AGENT_OWNER = "mcpapps"  # who subscribes when a request has no client behind it
_SUBSCRIPTION_METHODS = ("resources/subscribe", "resources/unsubscribe")
STDERR_DRAIN_S = 0.5  # after an exit, how long the last stderr lines may take to arrive
STDOUT_CLOSED = "the process closed its stdout (it can answer nothing more)"
_LIST_CHANGED = (
    types.ToolListChangedNotification,
    types.ResourceListChangedNotification,
    types.PromptListChangedNotification,
)


class _Death:
    """Why the current incarnation is over; the first cause wins."""

    def __init__(self) -> None:
        self.event = trio.Event()
        self.reason: str | None = None
        self.abnormal = True
        self.handled = False

    def declare(self, reason: str, *, abnormal: bool = True) -> None:
        if not self.event.is_set():
            self.reason, self.abnormal = reason, abnormal
            self.event.set()


class AppActor:
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
    ) -> None:
        self.definition = definition
        self._reaper = reaper
        self._metrics = metrics
        self.id = definition.id
        self.mailbox: Mailbox[AppMessage] = Mailbox()
        self._events = events
        self._environ = dict(environ)
        self._ui = ui
        self._source = source
        self._rng = rng or random.Random()
        self._limiter = trio.CapacityLimiter(definition.supervision.max_concurrent_calls)
        self._stderr: collections.deque[str] = collections.deque(maxlen=STDERR_LINES)

        self._state = AppState.VALIDATED
        self._entered: dict[str, float] = {AppState.VALIDATED.value: time.time()}
        self._last_error: str | None = None
        self._pid: int | None = None
        self._protocol_version: str | None = None
        self._catalog = Catalog()
        self._restarts = 0
        self._next_retry_at: float | None = None
        self._gave_up = False

        self._nursery: trio.Nursery | None = None
        # Start, Stop and Restart run one at a time, in the order they came, so that a Stop
        # sent just after a Restart is never undone by it.
        self._commands_in, self._commands = trio.open_memory_channel[Any](math.inf)
        self._draining = False  # stopping: calls in flight may finish, new ones are refused
        self._stop_reason = "was stopped"  # how a call ended by a stop or restart is told
        self._stderr_total = 0  # lines ever read, so a hint quotes only the current process
        self._stderr_mark = 0
        self._loop_scope: trio.CancelScope | None = None
        self._loop_done = trio.Event()
        self._loop_done.set()
        self._loaded = trio.Event()
        self._upstream: Upstream | None = None
        self._calls: trio.Nursery | None = None
        self._death: _Death | None = None
        self._in_flight: dict[object, Answer[Any]] = {}
        self._settled = trio.Event()  # set (and replaced) when a call ends or the state changes
        self._callers: dict[object, Any] = {}  # in-flight requests whose client can be asked
        self._last_heard = 0.0
        self._catalog_stale = trio.Event()
        # What the app's clients asked of its session; kept across restarts and given to each
        # new session, in the era it speaks.
        self._log_level: str | None = None
        self._subscriptions = Subscriptions()
        self._resubscribe = trio.Event()
        self._awaiting_listen: list[Answer[Any]] = []

    # ---- the mailbox -------------------------------------------------------------------------

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Serve the mailbox until cancelled; the owner starts the app with a `Start` message."""
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            nursery.start_soon(self._lifecycle)
            task_status.started()
            async for message in self.mailbox:
                self._handle(message)

    def _handle(self, message: AppMessage) -> None:
        match message:
            case UpstreamRequest():
                self._call(message)
            case GetStatus(reply):
                reply.send(self.status())
            case GetCatalog(reply):
                reply.send(self._catalog)
            case Start() | Stop() | Restart() | Drain():
                self._commands_in.send_nowait(message)
            case ReleaseSubscriptions(owner):
                self._release(owner)
            case _:
                logger.error("app %s: unknown message %r", self.id, message)

    def _spawn(self, fn: Any, *args: Any) -> None:
        assert self._nursery is not None
        self._nursery.start_soon(fn, *args)

    # ---- status ------------------------------------------------------------------------------

    def status(self) -> AppStatus:
        m = self.definition.manifest
        return AppStatus(
            id=self.id,
            name=m.name or self.id,
            state=self._state,
            entered_at=dict(self._entered),
            transport=self.definition.transport,
            source=str(self._source) if self._source else None,
            url=m.url if self.definition.transport == "http" else None,
            pid=self._pid,
            protocol_version=self._protocol_version,
            counts=self._catalog.counts(),
            has_ui=m.has_ui,
            restarts=self._restarts,
            next_retry_at=self._next_retry_at,
            gave_up=self._gave_up,
            last_error=self._last_error,
            stderr=tuple(self._stderr),
            in_flight=len(self._in_flight),
        )

    def _enter(self, state: AppState, *, error: str | None = None) -> None:
        previous = self._state
        if not may_move(previous, state):
            # A bug of ours; the state still follows what happened, so that status is true.
            logger.error(
                "app %s: %s → %s is not a transition of the lifecycle", self.id, previous, state
            )
        self._state = state
        self._wake_drain()
        self._entered[state.value] = time.time()
        if error is not None:
            self._last_error = error
        if state is not AppState.FAILED:
            self._next_retry_at = None
        detail = ""
        if state is AppState.RUNNING:
            c = self._catalog.counts()
            counted = ", ".join(
                _count(c[key], noun)
                for key, noun in (
                    ("tools", "tool"),
                    ("resources", "resource"),
                    ("resource_templates", "template"),
                    ("prompts", "prompt"),
                )
            )
            detail = f" ({counted}; protocol {self._protocol_version})"
        elif state is AppState.FAILED and error:
            detail = f": {error}"
        elif state is AppState.LOADED and self._pid:
            detail = f" (pid {self._pid})"
        level = logging.WARNING if state is AppState.FAILED else logging.INFO
        logger.log(level, "app %s: %s → %s%s", self.id, previous, state, detail)
        self._events.tell(StateChanged(self.status()))

    # ---- lifecycle control -------------------------------------------------------------------

    async def _lifecycle(self) -> None:
        async for command in self._commands:
            match command:
                case Start(reply):
                    await self._start()
                case Drain(reply):
                    await self._drain("was stopped")
                case Stop(reply, grace):
                    await self._stop("was stopped", grace=grace)
                case Restart(reply):
                    await self._stop("was restarted", restarting=True)
                    await self._start()
            reply.send(self.status())

    async def _start(self) -> None:
        """Start supervising (a no-op when already supervised); returns once the app is
        Loaded, so the answer to Start or Restart shows the new process."""
        if not self._loop_done.is_set():
            return
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
        if self._draining and self._loop_scope is not None:
            self._loop_scope.cancel()  # being stopped: no new process just to stop it again
            return
        self._restarts += 1
        self._next_retry_at = time.time() + retry.delay
        logger.info(
            "app %s: restarting in %.2f s (restart %d)", self.id, retry.delay, self._restarts
        )
        self._events.tell(StateChanged(self.status()))

    async def _drain(self, reason: str) -> None:
        """Refuse new calls; let those in flight finish for up to `stop_grace_s` (or until the
        app dies, which answers them anyway)."""
        self._draining = True
        self._stop_reason = reason
        with trio.move_on_after(self.definition.supervision.stop_grace_s):
            while self._in_flight and self._state is AppState.RUNNING:
                await self._settled.wait()

    def _wake_drain(self) -> None:
        self._settled.set()
        self._settled = trio.Event()

    async def _stop(self, reason: str, *, grace: bool = True, restarting: bool = False) -> None:
        """End the incarnation (its process goes down the stop ladder) and the supervision
        loop; with `grace`, calls in flight may finish first."""
        supervised = not self._loop_done.is_set()
        if supervised:
            if grace:
                await self._drain(reason)
            self._draining = True
            self._stop_reason = reason
            if self._loop_scope is not None:
                self._loop_scope.cancel()
            await self._loop_done.wait()
        self._draining = False
        self._stop_reason = "was stopped"
        if not restarting and (supervised or self._state is AppState.FAILED):
            self._gave_up = False
            self._enter(AppState.STOPPED)

    # ---- one incarnation ---------------------------------------------------------------------

    async def _incarnation(self) -> Exit:
        """Connect, enumerate, serve until the connection dies; say how it ended."""
        death = _Death()
        self._death = death
        self._pid = None
        self._protocol_version = None
        self._catalog = Catalog()
        self._stderr_mark = self._stderr_total
        self._enter(AppState.LOADED)
        self._loaded.set()
        running: list[float] = []  # when it reached Running, if it did
        try:
            await self._live(death, running)
            death.declare("the connection ended")  # only if nothing said why
            ran_for = trio.current_time() - running[0] if running else 0.0
            exit = Exit(reason=death.reason or "", abnormal=death.abnormal, ran_for=ran_for)
            self._after_death(death, exit)
            return exit
        finally:
            # Stopped or restarted by request (cancelled): the callers still waiting hear why.
            self._upstream = self._calls = None
            self._fail_in_flight(self._stopped_text())
            if self._catalog != Catalog():
                self._catalog = Catalog()
                self._events.tell(CatalogChanged(self.id, self._catalog))

    def _after_death(self, death: _Death, exit: Exit | None = None) -> None:
        """The moment the incarnation is known dead: no new calls, the calls in flight fail
        with the cause, and the state says so — before the (possibly slow) teardown."""
        if death.handled:
            return
        death.handled = True
        self._upstream = self._calls = None
        reason = death.reason or "the connection ended"
        self._fail_in_flight(f"app '{self.id}' died during the call: {reason}")
        self._catalog = Catalog()
        self._events.tell(CatalogChanged(self.id, self._catalog))
        exit = exit or Exit(reason=reason, abnormal=death.abnormal)
        if exit.abnormal or wants_restart(self.definition.supervision.restart, exit):
            self._enter(AppState.FAILED, error=reason)
        else:  # a clean exit that is not restarted: the app has stopped by itself
            self._enter(AppState.STOPPED, error=reason)

    async def _end_on_death(self, death: _Death, nursery: trio.Nursery) -> None:
        await death.event.wait()
        self._after_death(death)
        nursery.cancel_scope.cancel()

    async def _start_up_deadline(self, death: _Death, running: list[float]) -> None:
        seconds = self.definition.manifest.startup_timeout_seconds
        await trio.sleep(seconds)
        if not running:
            death.declare(
                f"did not start within {seconds} s (startupTimeoutSeconds){self._stderr_hint()}"
            )

    def _failure(self, death: _Death, error: BaseException, running: list[float]) -> None:
        """Declare the death an error of the session or the transport stands for, and act on
        it at once (the teardown that follows may take a while)."""
        error = first_leaf(error)
        if isinstance(error, SpawnError):
            death.declare(str(error))
        else:
            stage = "the connection failed" if running else "start-up failed"
            death.declare(f"{stage}: {error_text(error)}{self._stderr_hint()}")
        self._after_death(death)

    async def _live(self, death: _Death, running: list[float]) -> None:
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._end_on_death, death, nursery)
                nursery.start_soon(self._start_up_deadline, death, running)
                try:
                    await self._serve(nursery, death, running)
                except* Exception as group:
                    self._failure(death, group, running)
        except* Exception as group:  # a bug of ours must end this incarnation, not the actor
            logger.exception("app %s: unexpected error", self.id, exc_info=group)
            death.declare(f"internal error: {error_text(first_leaf(group))}")

    async def _serve(self, nursery: trio.Nursery, death: _Death, running: list[float]) -> None:
        async with (
            self._transport(nursery, death, running) as transport,
            connect(
                transport,
                protocol=self.definition.protocol,
                ui=self._ui,
                on_message=self._on_message,
                on_server_request=self._on_server_request,
            ) as upstream,
        ):
            try:
                self._protocol_version = upstream.protocol_version
                self._catalog = await upstream.catalog()
            except Exception as error:
                self._failure(death, error, running)
                raise
            upstream.log_level = self._log_level
            self._upstream, self._calls = upstream, nursery
            self._last_heard = trio.current_time()
            running.append(trio.current_time())
            self._enter(AppState.RUNNING)
            self._events.tell(CatalogChanged(self.id, self._catalog))
            nursery.start_soon(self._guarded, death, self._keep_alive, upstream, death)
            nursery.start_soon(self._guarded, death, self._refresh_catalog, upstream, death)
            nursery.start_soon(
                self._guarded,
                death,
                upstream.watch_changes,
                self._catalog_stale_now,
                self._on_resource_updated,
                lambda: tuple(self._subscriptions),
                lambda: self._resubscribe,
                self._listening,
            )
            nursery.start_soon(self._guarded, death, self._restore_session, upstream)
            # Until death is declared, when `_end_on_death` cancels all of this; leaving these
            # blocks (the session's and the process's teardown) runs under that cancellation.
            await trio.sleep_forever()

    async def _guarded(self, death: _Death, fn: Any, *args: Any) -> None:
        """Run a task of the incarnation; whatever it raises ends this incarnation only (and is
        restarted as the policy says), never the actor, the registry or another app."""
        try:
            await fn(*args)
        except BaseException as caught:
            cancelled, error = split_cancelled(caught)
            if not isinstance(error, Exception):
                raise
            if cancelled or death.event.is_set():
                # Failed as the incarnation went down: that is the death, declared already.
                logger.debug("app %s: %s ended with the incarnation", self.id, fn.__name__)
                return
            if is_connection_error(first_leaf(error)):
                await self._connection_lost(death, first_leaf(error))
            else:
                logger.exception("app %s: unexpected error in %s", self.id, fn.__name__)
                death.declare(f"internal error: {error_text(first_leaf(error))}")

    def _stderr_hint(self) -> str:
        if not self._stderr or self._stderr_total == self._stderr_mark:
            return ""  # nothing from this process: an older line would mislead
        return f"; last stderr line: {self._stderr[-1][:300]}"

    @contextlib.asynccontextmanager
    async def _transport(
        self, nursery: trio.Nursery, death: _Death, running: list[float]
    ) -> AsyncIterator[Any]:
        manifest = self.definition.manifest
        if self.definition.transport == "http":
            headers = {k: expand(v, self._environ) for k, v in manifest.headers.items()}
            assert manifest.url is not None
            yield http_transport(manifest.url, headers, manifest.request_timeout_seconds)
            return
        assert manifest.command is not None
        env = dict(self._environ)
        env.update({k: expand(v, self._environ) for k, v in manifest.environment.items()})
        child = ChildProcess.spawn(
            [manifest.command, *manifest.arguments], env=env, cwd=manifest.working_directory
        )
        self._pid = child.pid
        if self._reaper is not None:
            self._reaper.watch(child.pid)
        logger.info("app %s: started pid %d: %s", self.id, child.pid, manifest.command)
        stderr_done = trio.Event()
        stdout_closed = trio.Event()
        stopping = False

        async def stderr() -> None:
            try:
                await pump_stderr(child, self._on_stderr)
            finally:
                stderr_done.set()

        async def exited_by_itself(code: int) -> None:
            # The last stderr lines usually say why; give them a moment to arrive.
            with trio.CancelScope(shield=True), trio.move_on_after(STDERR_DRAIN_S):
                await stderr_done.wait()
            death.declare(
                f"the process {describe_returncode(code)}{self._stderr_hint()}",
                abnormal=code != 0,
            )

        async def watch() -> None:
            code = await child.wait()
            self._pid = None  # reaped: the status must not show a pid that may be reused
            if not stopping:
                await exited_by_itself(code)

        async def watch_stdout() -> None:
            # An app that closes its stdout can answer nothing more, even if it lives on. An
            # exiting process closes it a moment before its status is known: wait for that.
            await stdout_closed.wait()
            with trio.move_on_after(STDERR_DRAIN_S * 2):
                await death.event.wait()
            death.declare(STDOUT_CLOSED)

        try:
            nursery.start_soon(self._guarded, death, stderr)
            nursery.start_soon(self._guarded, death, watch)
            nursery.start_soon(self._guarded, death, watch_stdout)
            yield stdio_streams(child, self.id, stdout_closed.set)  # the SDK client enters it
        except Exception as error:
            # The session broke. A dying child closes its stdout a moment before it can be
            # reaped, and its exit status is the better reason: give it that moment.
            with trio.CancelScope(shield=True), trio.move_on_after(STDERR_DRAIN_S):
                await child.exited.wait()
            if (code := child.poll()) is not None:
                await exited_by_itself(code)
            elif stdout_closed.is_set():
                death.declare(STDOUT_CLOSED)
            self._failure(death, error, running)  # before the stop ladder, which may be slow
            raise
        finally:
            stopping = True
            # Shielded: this runs under cancellation too (stop, start-up deadline), and every
            # step must happen or a process, a pipe or a reaper entry would be left behind.
            with trio.CancelScope(shield=True):
                if (code := child.poll()) is not None:
                    await exited_by_itself(code)
                await child.stop(self.definition.supervision.stop_grace_s)
                await child.close_pipes()
            self._pid = None
            if self._reaper is not None:
                self._reaper.forget(child.pid)

    def _on_stderr(self, line: str) -> None:
        self._stderr.append(line)
        self._stderr_total += 1
        logger.info("app %s stderr: %s", self.id, line)

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, _LIST_CHANGED):
            # Clients hear of it once the catalog is current (CatalogChanged).
            self._catalog_stale.set()
        elif isinstance(message, Exception):
            logger.debug("app %s: transport reported %s", self.id, error_text(message))
        elif isinstance(message, types.ProgressNotification):
            pass  # the request it belongs to has it already (its `on_progress`)
        elif hasattr(message, "model_dump"):
            wire = message.model_dump(by_alias=True, mode="json", exclude_none=True)
            meta = (wire.get("params") or {}).get("_meta") or {}
            if SUBSCRIPTION_ID_META_KEY in meta:
                return  # a frame of our listen stream: `watch_changes` hands it on
            self._events.tell(AppNotification(self.id, wire["method"], wire.get("params")))

    async def _on_server_request(self, method: str, params: Wire) -> Wire:
        """The app asks its client something (sampling, elicitation) during a request. In the
        handshake era nothing on the wire says which of our requests caused it, so a client is
        asked only when its request is the one in flight: with two, the question could reach
        the wrong person, and is refused instead. (On 2026-07-28 the question is the result
        of the very request, and the front door asks that request's client.)"""
        callers = list(self._callers.values())
        if len(self._in_flight) == 1 and len(callers) == 1:
            timeout = self.definition.manifest.request_timeout_seconds
            with trio.move_on_after(timeout):
                return await callers[0].ask(method, params)
            raise ServerRequestRefused(
                f"the client did not answer {method} within {timeout:g} s (requestTimeoutSeconds)"
            )
        if not callers:
            why = "no client of its requests in flight can be asked"
        else:
            why = (
                f"{len(self._in_flight)} requests were in flight and nothing says which one"
                " asked (handshake era), so no client is asked"
            )
        raise ServerRequestRefused(f"app '{self.id}' asked for {method}, but {why}")

    def _catalog_stale_now(self) -> None:
        self._catalog_stale.set()

    def _on_resource_updated(self, uri: str) -> None:
        self._events.tell(AppNotification(self.id, "notifications/resources/updated", {"uri": uri}))

    async def _restore_session(self, upstream: Upstream) -> None:
        """A new session (after a restart) gets the log level and the resource subscriptions
        the clients asked of the old one; on 2026-07-28 the listen stream and the per-request
        log level carry them instead."""
        if upstream.era is Era.STATELESS:
            return
        requests: list[tuple[str, Wire]] = [
            ("resources/subscribe", {"uri": uri}) for uri in self._subscriptions
        ]
        if self._log_level is not None:
            requests.insert(0, ("logging/setLevel", {"level": self._log_level}))
        timeout = self.definition.manifest.request_timeout_seconds
        for method, params in requests:
            try:
                await upstream.send(method, params, timeout=timeout)
            except Exception as error:
                if is_connection_error(error):
                    raise
                logger.warning(
                    "app %s: could not restore %s: %s", self.id, method, error_text(error)
                )

    def _session_request(self, message: UpstreamRequest) -> bool:
        """Requests about the app's one session, shared by all its clients, rather than one
        answer: the log level (the last one set wins, as on the app) and resource
        subscriptions, kept per client so that the app hears the first subscribe and the last
        unsubscribe of a resource and one client cannot end another's. Both are restored after
        a restart, and on 2026-07-28, which has neither method, carried out here (per-request
        log level, the listen stream). True if answered here."""
        upstream = self._upstream
        assert upstream is not None
        params = message.params or {}
        if message.method == "logging/setLevel" and isinstance(params.get("level"), str):
            self._log_level = upstream.log_level = params["level"]
            if upstream.era is Era.STATELESS:
                message.reply.send({})
                return True
            return False
        uri = params.get("uri")
        if message.method not in _SUBSCRIPTION_METHODS or not isinstance(uri, str):
            return False  # anything wrong with it, the app says
        if upstream.era is Era.STATELESS and not upstream.capabilities.resources:
            return False  # an app without resources says so itself
        owner = getattr(message.caller, "owner", None) or AGENT_OWNER
        table = self._subscriptions
        if message.method == "resources/subscribe":
            if not table.is_wanted(uri) and upstream.era is Era.HANDSHAKE:
                return False  # the app is asked; `_subscribed` records the owner if it agrees
            if table.add(uri, owner):
                # Answered once the app watches the resource, so no update can be missed.
                self._listen_again(message.reply)
                return True
        elif table.remove(uri, owner):
            if upstream.era is Era.HANDSHAKE:
                return False  # the app hears that its last subscriber left
            self._listen_again()
        message.reply.send({})
        return True

    def _subscribed(self, message: UpstreamRequest) -> None:
        """The app agreed to a subscribe it was asked for: its client is a subscriber now."""
        if message.method == "resources/subscribe":
            owner = getattr(message.caller, "owner", None) or AGENT_OWNER
            self._subscriptions.add(str((message.params or {})["uri"]), owner)

    def _release(self, owner: str) -> None:
        """A client is gone: its subscriptions end; a resource nobody wants any more is
        unsubscribed from."""
        upstream, calls = self._upstream, self._calls
        for uri in self._subscriptions.release(owner):
            if upstream is not None and upstream.era is Era.STATELESS:
                self._listen_again()
            elif upstream is not None and calls is not None:
                calls.start_soon(self._unsubscribe_quietly, upstream, uri)

    async def _unsubscribe_quietly(self, upstream: Upstream, uri: str) -> None:
        timeout = self.definition.manifest.request_timeout_seconds
        with contextlib.suppress(Exception):
            await upstream.send("resources/unsubscribe", {"uri": uri}, timeout=timeout)

    def _listen_again(self, reply: Answer[Any] | None = None) -> None:
        """The set of subscribed resources changed: the listen stream (2026-07-28) is opened
        again with the new set; `reply` gets `{}` once the app has acknowledged it."""
        if reply is not None:
            self._awaiting_listen.append(reply)
        self._resubscribe.set()
        self._resubscribe = trio.Event()

    def _listening(self) -> None:
        for reply in self._awaiting_listen:
            reply.send({})
        self._awaiting_listen.clear()

    async def _refresh_catalog(self, upstream: Upstream, death: _Death) -> None:
        """Re-enumerate after a list_changed notification (coalescing a burst of them)."""
        while True:
            await self._catalog_stale.wait()
            self._catalog_stale = trio.Event()
            try:
                catalog = await upstream.catalog()
            except Exception as error:
                if is_connection_error(error):
                    await self._connection_lost(death, error)
                    return
                logger.warning(
                    "app %s: refreshing the catalog failed: %s", self.id, error_text(error)
                )
                continue
            self._catalog = catalog
            logger.info("app %s: catalog changed (%d tools)", self.id, len(catalog.tools))
            self._events.tell(CatalogChanged(self.id, catalog))
            self._events.tell(StateChanged(self.status()))

    async def _keep_alive(self, upstream: Upstream, death: _Death) -> None:
        """Probe the app when it has been quiet for `ping_interval_s`; `ping_misses` misses in a
        row mean it is hung, which is handled as a crash."""
        policy = self.definition.supervision
        misses = 0
        while True:
            await trio.sleep_until(self._last_heard + policy.ping_interval_s)
            if trio.current_time() < self._last_heard + policy.ping_interval_s:
                continue  # a call answered meanwhile: the app is alive
            missed = False
            with trio.move_on_after(policy.ping_timeout_s + 1.0) as probe:
                try:
                    await upstream.probe(policy.ping_timeout_s)
                except Exception as error:
                    if is_connection_error(error):
                        await self._connection_lost(death, error)
                        return
                    # Any answer, even an error, proves the app is alive; a timeout does not.
                    missed = is_timeout(error)
            if missed or probe.cancelled_caught:
                misses += 1
                logger.warning(
                    "app %s: no answer to a ping within %g s (%d of %d)",
                    self.id,
                    policy.ping_timeout_s,
                    misses,
                    policy.ping_misses,
                )
                if misses >= policy.ping_misses:
                    death.declare(
                        f"hung: did not answer {misses} pings in a row"
                        f" ({policy.ping_timeout_s:g} s each)"
                    )
                    return
                self._last_heard = trio.current_time() - policy.ping_interval_s  # probe again now
            else:
                misses = 0
                self._last_heard = trio.current_time()

    # ---- calls -------------------------------------------------------------------------------

    def _call(self, message: UpstreamRequest) -> None:
        if self._draining:
            doing = "restarting" if self._stop_reason == "was restarted" else "stopping"
            message.reply.fail(AppUnavailable(self.id, f"app '{self.id}' is {doing}"))
            return
        if self._state is not AppState.RUNNING or self._calls is None or self._upstream is None:
            message.reply.fail(AppUnavailable(self.id, self._unavailable_text()))
            return
        if (why := _unsendable(message)) is not None:
            # Refused here: the session's writer could not encode it, and would take the whole
            # session down with it.
            error = types.ErrorData(code=types.INVALID_PARAMS, message=why)
            message.reply.fail(CallFailed(self.id, why, rpc_error=error))
            return
        if self._session_request(message):
            return
        token = object()
        self._in_flight[token] = message.reply
        if message.caller is not None:
            self._callers[token] = message.caller
        self._calls.start_soon(self._run_call, message, self._upstream, self._death, token)

    def _unavailable_text(self) -> str:
        text = f"app '{self.id}' is not running (state {self._state}"
        if self._last_error and self._state is not AppState.RUNNING:
            text += f": {self._last_error}"
        if self._next_retry_at is not None:
            text += f"; next restart in {max(0.0, self._next_retry_at - time.time()):.1f} s"
        return text + ")"

    async def _run_call(
        self,
        message: UpstreamRequest,
        upstream: Upstream,
        death: _Death | None,
        token: object,
    ) -> None:
        timeout = self.definition.manifest.request_timeout_seconds
        began = trio.current_time()
        deadline = began + timeout
        reply = message.reply
        method, params, what = _request_of(message)
        caller = self._callers.get(token)
        answer: Any = None  # what the caller gets: a result, or an error
        try:
            with trio.move_on_at(deadline) as waiting:
                await self._limiter.acquire_on_behalf_of(token)
            if waiting.cancelled_caught:
                answer = CallTimeout(self.id, self._timeout_text(what, timeout, False))
                return
            abandoned = message.abandoned
            try:
                # A caller that gives up (its client cancelled or went away) cancels the
                # request: the SDK tells the app, and the call slot is free again.
                async with _cancelled_when(abandoned):
                    result = await upstream.send(
                        method,
                        params,
                        timeout=max(deadline - trio.current_time(), 0.001),
                        on_progress=getattr(caller, "on_progress", None),
                    )
            finally:
                self._limiter.release_on_behalf_of(token)
            if abandoned is not None and abandoned.is_set():
                answer = CallFailed(
                    self.id, f"{what} of app '{self.id}' was cancelled by its caller"
                )
                return
            self._last_heard = trio.current_time()
            self._subscribed(message)
            answer = result
        except BaseException as caught:
            cancelled, error = split_cancelled(caught)
            if not isinstance(error, Exception):
                raise
            if cancelled:
                # Failed as the incarnation went down: the caller is told why below (or was
                # told already by the death), and the cancellation has done its work.
                return
            if is_timeout(error):
                answer = CallTimeout(self.id, self._timeout_text(what, timeout, True))
                return
            if is_connection_error(error) and death is not None:
                reason = await self._connection_lost(death, error)
                answer = AppUnavailable(self.id, f"app '{self.id}' died during the call: {reason}")
            else:
                self._last_heard = trio.current_time()
                answer = CallFailed(
                    self.id,
                    f"{what} of app '{self.id}' failed: {error_text(error)}",
                    rpc_error=getattr(error, "error", None),
                )
        finally:
            self._callers.pop(token, None)
            # Not listed any more: the death of the incarnation has already answered it.
            if self._in_flight.pop(token, None) is not None:
                self._wake_drain()
                if answer is None:  # cancelled (a stop or a restart) before any answer
                    answer = AppUnavailable(self.id, self._stopped_text())
                if isinstance(answer, BaseException):
                    reply.fail(answer)
                else:
                    reply.send(answer)
            self._observe(method, began, answer)

    def _observe(self, method: str, began: float, answer: Any) -> None:
        """Count the request in /metrics. Its time includes any wait for a call slot: that is
        what the caller waited, and a queue there is worth seeing. A tool result that is an
        error counts as one, like an error answer or no answer at all."""
        if self._metrics is None:
            return
        ok = isinstance(answer, dict) and not answer.get("isError")
        self._metrics.observe_request(self.id, method, trio.current_time() - began, ok)

    def _timeout_text(self, what: str, timeout: float, sent: bool) -> str:
        if sent:
            return (
                f"{what} of app '{self.id}' timed out after {timeout:g} s"
                " (requestTimeoutSeconds); the request was cancelled upstream"
            )
        return (
            f"{what} of app '{self.id}' timed out after {timeout:g} s"
            " (requestTimeoutSeconds) waiting for one of its"
            f" {self.definition.supervision.max_concurrent_calls} call slots"
            " (max_concurrent_calls)"
        )

    async def _connection_lost(self, death: _Death, error: BaseException) -> str:
        """Declare the incarnation dead because a request found the connection broken. A dying
        process breaks the pipe a moment before its exit status is known, and the status says
        more; so wait that moment for it."""
        if self.definition.transport == "stdio":
            with trio.move_on_after(STDERR_DRAIN_S * 3):
                await death.event.wait()
        death.declare(f"the connection failed: {error_text(error)}")
        return death.reason or ""

    def _stopped_text(self) -> str:
        return f"app '{self.id}' {self._stop_reason} during the call"

    def _fail_in_flight(self, text: str) -> None:
        """Every call still waiting fails now with `text`, which names the app and the cause
        (never replayed: a tool call may not be idempotent)."""
        for reply in self._in_flight.values():
            reply.fail(AppUnavailable(self.id, text))
        self._in_flight.clear()
        self._callers.clear()
        self._wake_drain()


@contextlib.asynccontextmanager
async def _cancelled_when(event: trio.Event | None) -> AsyncIterator[None]:
    """Cancel the block when `event` is set; errors come out as themselves, not in a group."""
    if event is None:
        yield
        return

    async def watch(scope: trio.CancelScope) -> None:
        await event.wait()
        scope.cancel()

    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(watch, nursery.cancel_scope)
            yield
            nursery.cancel_scope.cancel()
    except BaseExceptionGroup as group:
        if len(group.exceptions) == 1:
            raise group.exceptions[0] from None
        raise


def _request_of(message: UpstreamRequest) -> tuple[str, Wire | None, str]:
    """The method and params to send upstream, and how errors name the request."""
    if message.method == "tools/call" and message.params is not None:
        return message.method, message.params, f"tool '{message.params.get('name')}'"
    return message.method, message.params, f"request {message.method}"


def _unsendable(message: UpstreamRequest) -> str | None:
    """Why the request cannot be put on the wire, if it cannot. Checked with the serializer the
    session's writer uses (pydantic's), whose limits are its own: a lone surrogate (which a JSON
    `\\ud800` escape makes) has no UTF-8 form, and nesting has a maximum depth."""
    method, params, what = _request_of(message)
    if jsonin.depth(params) > jsonin.MAX_DEPTH:
        return f"{what} cannot be sent to the app: {jsonin.too_deep('its params')}"
    try:
        request = types.JSONRPCRequest(jsonrpc="2.0", id=0, method=method, params=params)
        request.model_dump_json(by_alias=True, exclude_unset=True)
    except (ValueError, RecursionError) as error:
        why = str(error).removeprefix("Error serializing to JSON: ")
        if "UnicodeEncodeError" in why:
            return f"{what} cannot be sent to the app: it holds text that is not valid Unicode"
        return f"{what} cannot be sent to the app as JSON: {why}"
    return None


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def first_leaf(error: BaseException) -> BaseException:
    """The first real error inside (possibly nested) exception groups."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    return error
