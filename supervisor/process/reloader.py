"""Drives a reload (SIGHUP, `POST /admin/reload`, `mcpapps reload`, the file watcher): read the
config again, discover again, have the registry apply the difference, and tell systemd, the log
and the registry's watchers how it went.

Reloads run one at a time, in the order they were asked for; once shutdown has begun, none is
taken. A config that cannot be loaded changes nothing: the answer lists its problems (as the
config's, not as any app's refusal), and every app runs on as it was.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from pathlib import Path

import trio

from actors.messages import ApplyReload, RegistryMessage, Reloaded, Snapshot
from actors.runtime import Mailbox, ask
from supervisor.model.config import Config, ConfigError, load_config
from supervisor.model.discovery import Discovery, discover, log_discovery
from supervisor.model.lifecycle import AppState
from supervisor.model.reload import ReloadDiff, ReloadRefused, needs_restart
from supervisor.model.viewsconfig import Approval
from supervisor.process.sdnotify import notify

logger = logging.getLogger("mcpapps.supervisor")


class Reloader:
    def __init__(
        self, config: Config, environ: Mapping[str, str], registry: Mailbox[RegistryMessage]
    ):
        self._running = config  # what the process started with: the settings only it applies
        self._environ = environ
        self._registry = registry
        self._lock = trio.Lock()
        self._closed = False

    def close(self) -> None:
        """Shutdown has begun: refuse every reload from now on."""
        self._closed = True

    async def reload(self, why: str) -> ReloadDiff:
        """Reload now (after any reload under way); raises ReloadRefused during shutdown."""
        self._refuse_if_closed()
        async with self._lock:
            self._refuse_if_closed()
            logger.info("reloading (%s)", why)
            usec = time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
            notify(f"RELOADING=1\nMONOTONIC_USEC={usec}", self._environ)
            try:
                diff, approvals = await self._reload()
            finally:
                notify("READY=1", self._environ)
            if diff.config_refused:
                # Nothing was reloaded: no "reloaded:" line.
                problems = "; ".join(diff.config_problems)
                logger.error("reload refused: the config cannot be loaded: %s", problems)
            else:
                for refusal in diff.refused:
                    for problem in refusal.problems:
                        logger.error("reload refused %s: %s", refusal.app, problem)
                for key in diff.needs_restart:
                    logger.warning("reload: %s changed and needs a restart to take effect", key)
                logger.info("reloaded: %s", diff.summary())
            self._registry.tell(Reloaded(diff, approvals))
            return diff

    def _refuse_if_closed(self) -> None:
        if self._closed:
            raise ReloadRefused("the supervisor is shutting down: no reload is taken")

    async def _reload(self) -> tuple[ReloadDiff, tuple[tuple[str, Approval], ...] | None]:
        """The diff, and the reloaded config's view approvals (None when it was refused)."""
        try:
            config = load_config(self._running.path, self._environ)
        except ConfigError as error:
            statuses = await ask(self._registry, Snapshot)
            not_run = (AppState.DISABLED, AppState.DISCOVERED)
            running = tuple(s.id for s in statuses if s.state not in not_run)
            problems = tuple(str(p) for p in error.problems)
            return ReloadDiff(unchanged=running, config_problems=problems), None
        # A running app keeps its id against a newcomer that repeats it, wherever that one is
        # in the scan order: the registry's statuses say which apps run and from which file.
        statuses = await ask(self._registry, Snapshot)
        not_run = (AppState.DISABLED, AppState.DISCOVERED)
        held = {s.id: Path(s.source) for s in statuses if s.state not in not_run and s.source}
        discovery: Discovery = discover(config, self._environ, held)
        log_discovery(discovery)
        diff: ReloadDiff = await ask(self._registry, lambda reply: ApplyReload(discovery, reply))
        applied = ReloadDiff(
            started=diff.started,
            stopped=diff.stopped,
            restarted=diff.restarted,
            still_stopped=diff.still_stopped,
            unchanged=diff.unchanged,
            refused=diff.refused,
            needs_restart=needs_restart(self._running, config),
        )
        return applied, tuple(sorted(config.apps.approvals().items()))
