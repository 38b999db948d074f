"""Reload: what changes when the config and the manifests are read again, as pure values.

`plan_reload` compares the apps the registry runs with a new discovery and says which apps to
start, stop and restart, which stay untouched and which are refused; `needs_restart` names the
settings of a new config that only take effect when the process starts again. The registry
applies a plan (it alone owns the app actors; `actors/applyreload.py` holds the steps);
`supervisor.process.reloader` drives the whole reload.

The rules:
- an app is compared by its *effective* definition (the manifest with its config entry applied,
  its supervision policy and protocol): any difference restarts it, none leaves it alone;
- an app that is Stopped (on purpose: an operator's stop, or a clean exit its restart type does
  not restart) takes a new definition but stays Stopped: a reload is not a start;
- an app whose manifest has errors is refused: if it runs, it goes on with the definition it
  has (a half-saved file must not take a working app down), and the others are reloaded anyway;
- a manifest that repeats a running app's id is a refused duplicate, named by its path, whatever
  its place in the scan order (discovery, told which apps run, judges that);
- each app is in one list of the diff: a running app whose manifest is refused only under
  `refused` (it runs on), not also under `unchanged`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import attrs

from supervisor.model.config import Config
from supervisor.model.discovery import DiscoveredApp, Discovery
from supervisor.model.errors import McpappsError
from supervisor.model.lifecycle import AppState
from supervisor.model.manifest import AppDefinition


@attrs.frozen
class RunningApp:
    """An app the registry runs now: its definition, the manifest (or config) it came from, and
    whether it is Stopped."""

    definition: AppDefinition
    source: Path
    stopped: bool = False


@attrs.frozen
class Refusal:
    """An app the reload could not take: its id (or, without a usable id, its manifest's path)
    and every problem of its manifest."""

    app: str
    problems: tuple[str, ...]


@attrs.frozen(kw_only=True)
class ReloadPlan:
    start: tuple[DiscoveredApp, ...] = ()  # new apps, in discovery order
    stop: tuple[str, ...] = ()  # removed, newly disabled or newly invalid-and-not-kept apps
    restart: tuple[DiscoveredApp, ...] = ()  # run with a new definition
    redefine: tuple[DiscoveredApp, ...] = ()  # Stopped, with a new definition: not started
    unchanged: tuple[str, ...] = ()
    refused: tuple[Refusal, ...] = ()
    kept: tuple[str, ...] = ()  # running apps whose new manifest was refused: they go on


def plan_reload(running: Mapping[str, RunningApp], discovery: Discovery) -> ReloadPlan:
    """What to do to go from the apps that run to the apps a new discovery describes."""
    wanted = {
        app.id: app
        for app in discovery.apps
        if app.state is AppState.VALIDATED and app.definition is not None and app.id
    }
    refused = [app for app in discovery.apps if app.errors]
    kept = [
        app_id
        for app_id, now in running.items()
        if app_id not in wanted
        and any(
            (app.id == app_id and app.duplicate_of is None) or app.source == now.source
            for app in refused
        )
    ]
    changed = [
        app
        for app_id, app in wanted.items()
        if app_id in running and app.definition != running[app_id].definition
    ]
    return ReloadPlan(
        start=tuple(app for app_id, app in wanted.items() if app_id not in running),
        stop=tuple(a for a in running if a not in wanted and a not in kept),
        restart=tuple(app for app in changed if not running[str(app.id)].stopped),
        redefine=tuple(app for app in changed if running[str(app.id)].stopped),
        unchanged=tuple(
            app_id
            for app_id, app in wanted.items()
            if app_id in running and app.definition == running[app_id].definition
        ),
        refused=tuple(
            Refusal(_refused_name(app), tuple(str(e) for e in app.errors)) for app in refused
        ),
        kept=tuple(kept),
    )


def _refused_name(app: DiscoveredApp) -> str:
    """A refused manifest by its app's id, or by its path when it has no usable id or its id
    belongs to another manifest (a duplicate must not read as the app that has the id)."""
    if app.id is None or app.duplicate_of is not None:
        return str(app.source)
    return app.id


# Sections applied by a reload: discovery and supervision make the apps' definitions.
_APPLIED = frozenset({"apps", "supervision"})


def needs_restart(running: Config, loaded: Config) -> tuple[str, ...]:
    """The keys of `loaded` that differ from the config the process runs with and that a reload
    does not apply (the listen address and ports, the state dir, the token, the agent...)."""
    before = attrs.asdict(running, recurse=True)
    after = attrs.asdict(loaded, recurse=True)
    changed: list[str] = []
    if running.apps.watch != loaded.apps.watch:
        changed.append("apps.watch")  # the watcher is started (or not) with the process
    if running.apps.max_starting != loaded.apps.max_starting:
        changed.append("apps.max_starting")  # the start slots are made with the process
    for section in after:
        if section == "path" or section in _APPLIED:
            continue
        changed += _differences(before[section], after[section], section)
    return tuple(changed)


def _differences(before: Any, after: Any, where: str) -> Iterator[str]:
    if isinstance(before, dict) and isinstance(after, dict) and where.count(".") == 0:
        for key in sorted(set(before) | set(after)):
            if before.get(key) != after.get(key):
                yield f"{where}.{key}"
    elif before != after:
        yield where


@attrs.frozen(kw_only=True)
class ReloadDiff:
    """The answer to a reload, by app id. `still_stopped` are the Stopped apps whose definition
    changed: the new one is taken, and they stay Stopped until started. `config_problems` holds
    why the config itself could not be loaded: then nothing changed, every running app is
    `unchanged`, and no app is `refused` (the config is not an app)."""

    started: tuple[str, ...] = ()
    stopped: tuple[str, ...] = ()
    restarted: tuple[str, ...] = ()
    still_stopped: tuple[str, ...] = ()
    unchanged: tuple[str, ...] = ()
    refused: tuple[Refusal, ...] = ()
    needs_restart: tuple[str, ...] = ()
    config_problems: tuple[str, ...] = ()

    @property
    def config_refused(self) -> bool:
        return bool(self.config_problems)

    @property
    def tools_may_change(self) -> bool:
        return bool(self.started or self.stopped or self.restarted)

    def summary(self) -> str:
        """One log line."""
        parts = [
            f"{name} {', '.join(ids) if ids else '-'}"
            for name, ids in (
                ("started", self.started),
                ("stopped", self.stopped),
                ("restarted", self.restarted),
                ("unchanged", self.unchanged),
                ("refused", tuple(r.app for r in self.refused)),
            )
        ]
        if self.still_stopped:
            parts.append(f"still stopped {', '.join(self.still_stopped)}")
        if self.needs_restart:
            parts.append(f"needs a restart: {', '.join(self.needs_restart)}")
        return "; ".join(parts)


Reload = Callable[[str], Awaitable[ReloadDiff]]
"""Reload now, for the reason given; what the front door and the watcher are handed."""


class ReloadRefused(McpappsError):
    """No reload now (the supervisor is shutting down); the message says so."""
