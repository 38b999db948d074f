"""The registry actor: knows every app, routes requests to app actors by app id and by public
tool name, answers status snapshots, and passes the apps' facts on to its watchers.

App actors run in the registry's nursery, started in discovery order and stopped in reverse.
Two jobs the registry delegates and calls, its state staying its own: the tool table's upkeep
(`actors/toolupkeep.py`), and a reload, applied as one of its tasks through its own steps
(`actors/applyreload.py`, which also hands a changed app over to its successor).
"""

from __future__ import annotations

import itertools
import logging
import random
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import trio

from actors.applyreload import Held, Newcomer, apply_reload
from actors.apps.app import AppActor
from actors.apps.processgroup import KILL_REAP_S, STDIN_CLOSE_GRACE_S
from actors.apps.reaper import Reaper
from actors.apps.signin import SignInPlace
from actors.asking import bind_caller
from actors.messages import (
    ActorOf,
    AppFact,
    ApplyReload,
    AppNotification,
    AppStatus,
    AppUnavailable,
    CallPublicTool,
    CatalogChanged,
    Drain,
    Fact,
    FromApp,
    GetStatus,
    GetToolReport,
    GetToolTable,
    Lookup,
    RegistryMessage,
    Reloaded,
    SamplingAllowed,
    Snapshot,
    Start,
    StateChanged,
    Stop,
    StopAll,
    ToApp,
    ToolTableChanged,
    UnknownApp,
    UnknownTool,
    UpstreamRequest,
    Watch,
    WhenReady,
)
from actors.metrics import Metrics
from actors.runtime import Actor, Forward, Mailbox, Recipient, Reply, ask, unhandled
from actors.toolupkeep import Offerer, ToolUpkeep
from supervisor.model.discovery import DiscoveredApp, Discovery
from supervisor.model.errors import ActorUnavailable
from supervisor.model.lifecycle import AppState
from supervisor.model.reload import ReloadDiff, RunningApp

logger = logging.getLogger("mcpapps.registry")

STOP_MARGIN_S = 10.0  # beyond an app's own stop ladder, before shutdown stops waiting for it


def static_status(app: DiscoveredApp) -> AppStatus:
    """The status of an app that is not run: invalid (Discovered) or Disabled."""
    manifest = app.definition.manifest if app.definition else None
    return AppStatus(
        id=app.id or str(app.source),
        name=(manifest.name if manifest else None) or app.id or str(app.source),
        state=app.state,
        entered_at={app.state.value: time.time()},
        transport=app.transport,
        source=str(app.source),
        has_ui=bool(manifest and manifest.has_ui),
        disabled_reason=app.disabled_reason,
        errors=tuple(str(e) for e in app.errors),
        last_error=str(app.errors[0]) if app.errors else None,
    )


class Registry(Actor[RegistryMessage]):
    def __init__(
        self,
        apps: Sequence[DiscoveredApp],
        *,
        environ: Mapping[str, str],
        ui: bool = True,
        rng: random.Random | None = None,
        reaper: Reaper | None = None,
        metrics: Metrics | None = None,
        sign_in: SignInPlace | None = None,
        start_slots: trio.CapacityLimiter | None = None,
    ) -> None:
        """`sign_in`: where the apps that sign in (`auth = "oauth"`) keep their tokens and are
        called back; `start_slots`: how many app processes start at once
        (actors/apps/startslots.py), shared by every app of this registry, reloaded ones too."""
        self.mailbox: Mailbox[RegistryMessage] = Mailbox()
        self._sign_in = sign_in
        self._environ = environ
        self._ui = ui
        self._rng = rng
        self._reaper = reaper
        self._metrics = metrics
        self._start_slots = start_slots
        self._actors: dict[str, AppActor] = {}
        self._statuses: dict[str, AppStatus] = {}
        self._sources: dict[str, Path] = {}
        self._facts: dict[str, Recipient[AppFact]] = {}  # the current actor's voice, per app id
        self._numbers = itertools.count(1)
        self._actor_numbers: dict[str, int] = {}  # the current actor's number, per app id
        self._scopes: dict[str, trio.CancelScope] = {}
        self._held = Held()  # the commands to apps a reload is replacing, for their successors
        self._stopping = False
        self._tools = ToolUpkeep(apps)
        for app in apps:
            if app.state is AppState.VALIDATED and app.definition is not None:
                self.register(self.make_actor(app), app.source)
        self._statuses = self._listed(apps)
        self._unsettled = set(self._actors)
        self._waiting: list[Reply[tuple[AppStatus, ...]]] = []
        self._nursery: trio.Nursery | None = None
        self._watchers: list[trio.MemorySendChannel[Fact]] = []

    def make_actor(self, app: DiscoveredApp, *, stopped: bool = False) -> Newcomer:
        assert app.definition is not None
        facts = self._voice(app.definition.id)
        actor = AppActor(
            app.definition,
            events=facts,
            environ=self._environ,
            ui=self._ui,
            source=app.source,
            rng=self._rng,
            reaper=self._reaper,
            metrics=self._metrics,
            stopped=stopped,
            sign_in=self._sign_in,
            start_slots=self._start_slots,
        )
        return Newcomer(actor, facts)

    def _voice(self, app_id: str) -> _Facts:
        """Where a new app actor tells its facts."""
        return _Facts(self.mailbox, app_id)

    def register(self, newcomer: Newcomer, source: Path) -> None:
        """From now on the newcomer is the app's: requests are routed to it, its facts are
        heard."""
        actor = newcomer.actor
        self._actors[actor.id] = actor
        self._actor_numbers[actor.id] = next(self._numbers)
        self._facts[actor.id] = newcomer.voice
        self._sources[actor.id] = source

    def _listed(self, apps: Sequence[DiscoveredApp]) -> dict[str, AppStatus]:
        """Every app in discovery order: the status of each app actor, and a static one for
        the apps that are not run (a duplicate id is listed too, under its path)."""
        listed: dict[str, AppStatus] = {}
        for app in apps:
            if app.id in self._actors and app.id not in listed and app.duplicate_of is None:
                listed[app.id] = self._statuses.get(app.id) or self._actors[app.id].status()
                continue
            status = static_status(app)
            duplicate = app.duplicate_of is not None or status.id in listed
            key = str(app.source) if duplicate else status.id
            listed[key] = attrs.evolve(status, id=key) if key != status.id else status
        for app_id, actor in self._actors.items():  # kept by a reload that refused its manifest
            if app_id not in listed:
                listed[app_id] = self._statuses.get(app_id) or actor.status()
        return listed

    async def _begin(self, nursery: trio.Nursery) -> None:
        for actor in self._actors.values():
            await nursery.start(self._run_actor, actor)
        # Every app is started at once; their processes take the start slots in turn.
        for actor in self._actors.values():
            actor.mailbox.tell(Start(Reply()))

    def _handle(self, message: RegistryMessage) -> None:
        match message:
            case FromApp(app_id, voice, fact):
                # A fact of an actor a reload has replaced (its last Stopped, its emptied
                # catalog) must not overwrite what its successor says.
                if self._facts.get(app_id) is voice:
                    self._handle(fact)
            case StateChanged(status):
                self._on_state(status)
                self.publish(message)
            case CatalogChanged(app_id, catalog):
                self._tools.catalogs[app_id] = catalog
                self.publish(message)
                self._rebuild()
            case AppNotification():
                self.publish(message)
            case Watch(channel):
                self._watchers.append(channel)
                self._replay(channel)
            case CallPublicTool():
                self._call(message)
            case ToApp(app_id, request, number) if number not in (
                None,
                self._actor_numbers.get(app_id),
            ):
                if (reply := getattr(request, "reply", None)) is not None:
                    why = f"app '{app_id}' was changed by a reload since this was asked of it"
                    reply.fail(AppUnavailable(app_id, why))
            case ToApp(app_id, request):
                self._route(app_id, request)
            case ActorOf(app_id, reply):
                if app_id in self._actors:
                    reply.send(self._actor_numbers[app_id])
                elif app_id in self._statuses:
                    reply.send(None)
                else:
                    reply.fail(UnknownApp(app_id, f"unknown app '{app_id}'"))
            case SamplingAllowed(app_id):
                if (actor := self._actors.get(app_id)) is not None:
                    message.reply.send(actor.definition.sampling)
                else:
                    message.reply.fail(UnknownApp(app_id, f"there is no app '{app_id}'"))
            case GetToolTable():
                message.reply.send(self._tools.table)
            case GetToolReport():
                message.reply.send(self._tools.report(self._offerers()))
            case Snapshot():
                message.reply.send(self.snapshot())
            case Lookup(app_id):
                if (known := self._statuses.get(app_id)) is not None:
                    message.reply.send(known)
                else:
                    message.reply.fail(UnknownApp(app_id, f"unknown app '{app_id}'"))
            case WhenReady(reply):
                if self._unsettled:
                    self._waiting.append(reply)
                else:
                    reply.send(self.snapshot())
            case StopAll(reply):
                self._stopping = True
                self._spawn(self._stop_all, reply)
            case ApplyReload(discovery, reply):
                self._spawn(self._reload, discovery, reply)
            case Reloaded():
                self.publish(message)
            case _:
                unhandled("registry", message)

    def publish(self, fact: Fact) -> None:
        for channel in list(self._watchers):
            try:
                channel.send_nowait(fact)
            except trio.WouldBlock:
                logger.warning("registry: a watcher is behind; it missed %s", type(fact).__name__)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                self._watchers.remove(channel)

    def _replay(self, channel: trio.MemorySendChannel[Fact]) -> None:
        """A new watcher first hears how things stand, so it misses nothing said before. The tool
        table comes last: the control page takes it as the end of that picture."""
        facts: list[Fact] = [StateChanged(status) for status in self._statuses.values()]
        facts += [CatalogChanged(app_id, c) for app_id, c in self._tools.catalogs.items()]
        facts.append(ToolTableChanged(self._tools.table))
        for fact in facts:
            try:
                channel.send_nowait(fact)
            except (trio.WouldBlock, trio.BrokenResourceError, trio.ClosedResourceError):
                logger.warning("registry: a new watcher could not take the current state")
                return

    def snapshot(self) -> tuple[AppStatus, ...]:
        return tuple(self._statuses.values())

    def _on_state(self, status: AppStatus) -> None:
        before = self._statuses.get(status.id)
        self._statuses[status.id] = status
        # An app waiting for a person to sign in has started as far as it can by itself.
        settled = (AppState.RUNNING, AppState.FAILED, AppState.STOPPED, AppState.NEEDS_SIGN_IN)
        if status.state in settled and status.id in self._unsettled:
            self._unsettled.discard(status.id)
            if not self._unsettled:
                for reply in self._waiting:
                    reply.send(self.snapshot())
                self._waiting.clear()
        if before is None or (before.state is AppState.RUNNING) != (
            status.state is AppState.RUNNING
        ):
            self._rebuild()

    def _offerers(self) -> list[Offerer]:
        """The Running apps, whose catalogs make the tool table."""
        return [
            Offerer(
                app_id, actor.definition.manifest.tool_name_prefix or "", self._sources.get(app_id)
            )
            for app_id, actor in self._actors.items()
            if self._statuses[app_id].state is AppState.RUNNING
        ]

    def _rebuild(self) -> None:
        if (table := self._tools.rebuild(self._offerers())) is not None:
            self.publish(ToolTableChanged(table))

    def _route(self, app_id: str, request: Any) -> None:
        if self._held.keep(app_id, request):
            return
        actor = self._actors.get(app_id)
        if actor is not None:
            actor.mailbox.tell(request)
            return
        reply = getattr(request, "reply", None)
        if reply is None:
            return
        status = self._statuses.get(app_id)
        if status is None:
            reply.fail(UnknownApp(app_id, f"unknown app '{app_id}'"))
        elif isinstance(request, GetStatus):
            reply.send(status)
        else:
            why = status.disabled_reason or status.last_error or "it is not run"
            reply.fail(AppUnavailable(app_id, f"app '{app_id}' is {status.state}: {why}"))

    def _call(self, message: CallPublicTool) -> None:
        tool = self._tools.table.find(message.public_name)
        if tool is None:
            down = self._owner_not_running(message.public_name)
            if down is not None:
                message.reply.fail(AppUnavailable(down[0], down[1]))
            else:
                message.reply.fail(UnknownTool(None, f"unknown tool '{message.public_name}'"))
            return
        answer = Forward(message.reply, lambda result: (tool, result))
        params: dict[str, Any] = {"name": tool.name, "arguments": message.arguments}
        if message.meta:
            params["_meta"] = message.meta
        if message.resumed:
            params.update(message.resumed)
        definition = self._actors[tool.app_id].definition
        timeout, sampling = definition.manifest.request_timeout_seconds, definition.sampling
        bind_caller(message.caller, tool.app_id, tool.public_name, timeout, sampling)
        request = UpstreamRequest(
            "tools/call", params, answer, message.caller, abandoned=message.abandoned
        )
        self._actors[tool.app_id].mailbox.tell(request)

    def _owner_not_running(self, name: str) -> tuple[str, str] | None:
        """The app whose prefix the name has, if it is not Running: the tool is not unknown,
        its app is down (and says why)."""
        by_discovery = sorted(
            self._actors.items(),
            key=lambda item: self._tools.place(item[0], self._sources.get(item[0])),
        )
        for app_id, actor in by_discovery:
            if not name.startswith(actor.definition.manifest.tool_name_prefix or "\0"):
                continue
            status = self._statuses[app_id]
            if status.state is not AppState.RUNNING:
                why = f" ({status.last_error})" if status.last_error else ""
                return app_id, (
                    f"tool '{name}' is not available: app '{app_id}' that would offer it is"
                    f" {status.state}{why}"
                )
        return None

    async def _stop_all(self, reply: Reply[None]) -> None:
        """Shutdown: every app refuses new calls at once and its calls in flight get
        up to `stop_grace_s` together; then the apps stop one by one in reverse start order."""
        async with trio.open_nursery() as nursery:
            for actor in list(self._actors.values()):
                grace = actor.definition.supervision.stop_grace_s
                nursery.start_soon(_ask_quietly, actor, Drain, grace + STOP_MARGIN_S)
        for actor in reversed(list(self._actors.values())):
            policy = actor.definition.supervision
            limit = STDIN_CLOSE_GRACE_S + policy.stop_grace_s + KILL_REAP_S + STOP_MARGIN_S
            await _ask_quietly(actor, lambda r: Stop(r, grace=False), limit)
        reply.send(None)

    async def _run_actor(
        self, actor: AppActor, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """One app actor; a bug in it ends that app (Failed), never the registry or the others.
        A reload that removes the app cancels it once the app is stopped."""
        scope = self._scopes[actor.id] = trio.CancelScope()
        try:
            with scope:
                await actor.run(task_status=task_status)
        except Exception as error:
            logger.exception("app %s: its actor failed", actor.id)
            if self._actors.get(actor.id) is not actor:
                return  # a reload has replaced it already
            self._actors.pop(actor.id, None)
            self._facts.pop(actor.id, None)
            self._unsettled.discard(actor.id)
            self._on_state(
                attrs.evolve(
                    self._statuses[actor.id],
                    state=AppState.FAILED,
                    pid=None,
                    last_error=f"internal error in mcpapps: {error!r}; see the log",
                )
            )

    # ---- the steps of a reload (actors/applyreload.py) -----------------------------------

    async def _reload(self, discovery: Discovery, reply: Reply[ReloadDiff]) -> None:
        reply.send(await apply_reload(self, self._held, discovery))

    @property
    def stopping(self) -> bool:
        return self._stopping

    def running(self) -> dict[str, RunningApp]:
        return {
            app_id: RunningApp(
                actor.definition,
                self._sources[app_id],
                stopped=self._statuses[app_id].state is AppState.STOPPED,
            )
            for app_id, actor in self._actors.items()
        }

    def actor(self, app_id: str) -> AppActor | None:
        return self._actors.get(app_id)

    def status(self, app_id: str) -> AppStatus:
        return self._statuses[app_id]

    async def launch(self, actor: AppActor) -> None:
        self._statuses[actor.id] = actor.status()
        assert self._nursery is not None
        await self._nursery.start(self._run_actor, actor)

    async def stop(self, actor: AppActor) -> None:
        policy = actor.definition.supervision
        limit = STDIN_CLOSE_GRACE_S + 2 * policy.stop_grace_s + KILL_REAP_S + STOP_MARGIN_S
        await _ask_quietly(actor, Stop, limit)

    def forget(self, app_id: str) -> None:
        self._statuses.pop(app_id, None)
        self._rebuild()

    def rediscovered(self, apps: Sequence[DiscoveredApp]) -> None:
        self._tools.rediscovered(apps)

    def relist(self, apps: Sequence[DiscoveredApp]) -> None:
        self._statuses = self._listed(apps)
        self._rebuild()

    def end(self, actor: AppActor) -> None:
        app_id = actor.id
        if self._actors.get(app_id) is actor:
            self._actors.pop(app_id)
            self._actor_numbers.pop(app_id, None)
            self._facts.pop(app_id, None)
            self._sources.pop(app_id, None)
        self._tools.catalogs.pop(app_id, None)
        if (scope := self._scopes.pop(app_id, None)) is not None:
            scope.cancel()


class _Facts:
    """Where one app actor tells its facts: into the registry's mailbox, marked as its own."""

    def __init__(self, registry: Mailbox[RegistryMessage], app_id: str) -> None:
        self._registry = registry
        self.app_id = app_id

    def tell(self, message: AppFact) -> None:
        self._registry.tell(FromApp(self.app_id, self, message))


async def _ask_quietly(actor: AppActor, make: Any, limit: float) -> None:
    try:
        await ask(actor.mailbox, make, limit)
    except ActorUnavailable:
        logger.error("app %s did not stop within %g s", actor.id, limit)
