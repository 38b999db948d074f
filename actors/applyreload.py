"""A reload applied to the app actors (`ApplyReload`): the plan `supervisor.model.reload` makes
from what runs and a new discovery, carried out. A removed app is stopped and forgotten; a
changed one is stopped and its place taken by an actor of its new definition, to which the
stopped actor hands its clients' session state; a new one is started; the diff is said back.

The registry alone owns the app actors and its tables. A reload runs as one of the registry's
tasks and changes them only through the registry's own steps (`Host`): this module holds the
order of the steps, the registry holds the state. `supervisor.process.reloader` drives the whole
reload (one at a time, the config read, the systemd and log lines).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol

import attrs
import trio

from actors.apps.app import AppActor
from actors.messages import (
    AppFact,
    AppStatus,
    AppUnavailable,
    Fact,
    HandOver,
    ReleaseSubscriptions,
    Restart,
    Start,
    StateChanged,
    Stop,
)
from actors.runtime import ASK_TIMEOUT_S, Recipient, Reply, ask
from supervisor.model.discovery import DiscoveredApp, Discovery
from supervisor.model.errors import ActorUnavailable
from supervisor.model.reload import ReloadDiff, ReloadPlan, RunningApp, plan_reload

logger = logging.getLogger("mcpapps.registry")

Command = Start | Stop | Restart


@attrs.frozen
class Newcomer:
    """An app actor made but not yet the app's: `voice` is where it tells its facts, which the
    registry hears from the moment it registers it."""

    actor: AppActor
    voice: Recipient[AppFact]


class Host(Protocol):
    """The registry's steps a reload takes, each a change of the registry's own state."""

    @property
    def stopping(self) -> bool:
        """Shutdown has begun: nothing new starts."""
        ...

    def running(self) -> Mapping[str, RunningApp]: ...

    def actor(self, app_id: str) -> AppActor | None: ...

    def make_actor(self, app: DiscoveredApp, *, stopped: bool) -> Newcomer: ...

    def register(self, newcomer: Newcomer, source: Path) -> None:
        """From now on the newcomer is the app's: requests go to it, its facts are heard."""
        ...

    async def launch(self, actor: AppActor) -> None:
        """List the registered actor with its status and run it in the registry's nursery."""
        ...

    def status(self, app_id: str) -> AppStatus: ...

    async def stop(self, actor: AppActor) -> None:
        """Stop the app down its stop ladder (its calls in flight may finish first)."""
        ...

    def end(self, actor: AppActor) -> None:
        """Forget a stopped app actor (if it is still the app's) and cancel its task."""
        ...

    def forget(self, app_id: str) -> None:
        """A removed app's status and tools are gone."""
        ...

    def rediscovered(self, apps: Sequence[DiscoveredApp]) -> None:
        """The apps in the new discovery's order; with `relist`, their new statuses."""
        ...

    def relist(self, apps: Sequence[DiscoveredApp]) -> None: ...

    def publish(self, fact: Fact) -> None: ...


class Held:
    """The apps a reload is replacing: the Start, Stop and Restart sent to each meanwhile, kept
    for its successor (its old actor would act on them only to be stopped and replaced)."""

    def __init__(self) -> None:
        self._commands: dict[str, list[Command]] = {}

    def replacing(self, app_id: str) -> None:
        self._commands[app_id] = []

    def keep(self, app_id: str, request: object) -> bool:
        """Whether `request` is kept for the app's successor (else it goes to its actor)."""
        held = self._commands.get(app_id)
        if held is not None and isinstance(request, Start | Stop | Restart):
            held.append(request)
            return True
        return False

    def release(self, app_id: str) -> list[Command]:
        return self._commands.pop(app_id, [])


async def apply_reload(host: Host, held: Held, discovery: Discovery) -> ReloadDiff:
    """Apply the difference between the apps that run and `discovery`: every app that is
    neither stopped nor restarted keeps its actor, its process and its sessions. A Stopped
    app whose definition changed gets an actor with the new one, Stopped too."""
    plan = plan_reload(host.running(), discovery)
    host.rediscovered(discovery.apps)
    restarted = {app.id for app in plan.restart}
    redefined = {app.id for app in plan.redefine}
    replaced = (*plan.restart, *plan.redefine)
    for app in replaced:
        assert app.id is not None
        held.replacing(app.id)
    async with trio.open_nursery() as nursery:
        for app_id in plan.stop:
            nursery.start_soon(_retire, host, app_id)
        for app in replaced:
            assert app.id is not None
            # Its actor stays, stopped, until its successor takes over: a call meanwhile
            # hears that the app is Stopped (for a moment), not that there is no such app,
            # and a client's release still reaches the subscriptions it ends.
            old = host.actor(app.id)
            assert old is not None
            nursery.start_soon(host.stop, old)
    started: list[str] = []
    for app in (*replaced, *plan.start):
        assert app.id is not None
        if not host.stopping:
            stopped = app.id in redefined
            if app.id in restarted or stopped:
                actor = await _succeed(host, app, stopped=stopped)
            else:
                newcomer = host.make_actor(app, stopped=False)
                host.register(newcomer, app.source)
                actor = newcomer.actor
            await host.launch(actor)
        elif app.id in restarted | redefined and (old := host.actor(app.id)):
            _end(host, old)  # stopped for a restart that shutdown keeps from happening
        if host.stopping:  # also when shutdown began while its actor was set up
            # Nothing new starts. An app stopped for a restart (or taking a new definition
            # while Stopped) is then `stopped` in the diff; a new one is in no list (it
            # never ran). An actor set up already is stopped with the others.
            logger.warning("app %s: not started by the reload: shutdown has begun", app.id)
            for command in held.release(app.id):
                why = f"app '{app.id}' is not started: the supervisor is shutting down"
                command.reply.fail(AppUnavailable(app.id, why))
            continue
        if actor.id in redefined:
            host.publish(StateChanged(host.status(actor.id)))  # Stopped, new definition
        else:
            actor.mailbox.tell(Start(Reply()))
        # What was asked of the app while it was being replaced is asked of its successor,
        # after the reload's own start: a start given meanwhile is not undone, nor a stop.
        for command in held.release(actor.id):
            actor.mailbox.tell(command)
        started.append(actor.id)
    host.relist(discovery.apps)
    return reload_diff(plan, started)


def reload_diff(plan: ReloadPlan, started: Sequence[str]) -> ReloadDiff:
    """What the reload did, each app in one list: a kept app (its manifest refused, it runs
    on) is in `refused` only, and an app stopped for a restart that shutdown kept from
    starting (not in `started`) is `stopped`."""
    restarted = {app.id for app in plan.restart}
    redefined = {app.id for app in plan.redefine}
    replaced = (*plan.restart, *plan.redefine)
    return ReloadDiff(
        started=tuple(a.id for a in plan.start if a.id is not None and a.id in started),
        stopped=(*plan.stop, *(a.id for a in replaced if a.id and a.id not in started)),
        restarted=tuple(a for a in started if a in restarted),
        still_stopped=tuple(a for a in started if a in redefined),
        unchanged=plan.unchanged,
        refused=plan.refused,
    )


async def _succeed(host: Host, app: DiscoveredApp, *, stopped: bool) -> AppActor:
    """The actor of the app's new definition takes the place of the stopped one. What the
    clients asked of the app's session (log level, resource subscriptions) is theirs, not
    the definition's: the old actor hands it to the new one by message, as an operator's
    restart would keep it, and the new process is given it once it runs (for an app that
    stays Stopped, once it is started)."""
    newcomer = host.make_actor(app, stopped=stopped)
    actor = newcomer.actor
    old = host.actor(actor.id)
    if old is not None:
        try:
            await ask(old.mailbox, lambda reply: HandOver(actor.mailbox, reply), ASK_TIMEOUT_S)
        except ActorUnavailable:
            logger.error(
                "app %s: its stopped actor did not hand over its clients' log level and"
                " resource subscriptions; its new process starts without them",
                actor.id,
            )
        _end(host, old, successor=actor)
    host.register(newcomer, app.source)
    return actor


async def _retire(host: Host, app_id: str) -> None:
    """A reload removed the app: stop it, end its actor, and forget it."""
    actor = host.actor(app_id)
    assert actor is not None
    await host.stop(actor)
    _end(host, actor)
    host.forget(app_id)


def _end(host: Host, actor: AppActor, successor: AppActor | None = None) -> None:
    """End a stopped app actor. Whatever is still in its mailbox is answered, not dropped:
    a request fails, and a client's release goes to its `successor`, which holds the
    subscriptions now."""
    host.end(actor)
    actor.mailbox.close()
    app_id = actor.id
    for message in actor.mailbox.take_waiting():
        if isinstance(message, ReleaseSubscriptions) and successor is not None:
            successor.mailbox.tell(message)
        elif (reply := getattr(message, "reply", None)) is not None:
            reply.fail(AppUnavailable(app_id, f"app '{app_id}' was stopped by a reload"))
