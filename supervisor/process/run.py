"""`mcpapps run`: the root supervisor. It discovers the apps, starts the registry (which starts
every app actor) and the front door, says when it is ready, and on SIGTERM or SIGINT stops
everything (the front door stops taking requests while the apps drain) and returns."""

from __future__ import annotations

import logging
import os
import signal
import socket
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NoReturn

import attrs
import trio

from actors.apps.reaper import Reaper
from actors.apps.signin import SIGN_IN_FOLDER, SignInPlace
from actors.apps.startslots import start_slots
from actors.chat.bridge import ToolBridge
from actors.chat.engines import make_engine
from actors.chat.hub import ChatHub
from actors.chat.retention import Retention
from actors.chat.sessionstore import SessionStore, StoreError
from actors.chat.stores import make_store
from actors.files.actor import WorkspaceActor
from actors.messages import StopAll, StopChats, WhenReady
from actors.metrics import Metrics
from actors.registry import Registry
from actors.runtime import ask
from actors.views.hub import ViewHub
from supervisor.model.address import ADDRESS_FILE, remove_address, write_address
from supervisor.model.config import Config
from supervisor.model.discovery import discover, log_discovery
from supervisor.model.errors import McpappsError
from supervisor.model.lifecycle import AppState
from supervisor.model.reload import ReloadRefused
from supervisor.model.tokens import resolve_token
from supervisor.process.cluster import heartbeat
from supervisor.process.reloader import Reloader
from supervisor.process.sdnotify import notify, watchdog_interval
from supervisor.process.watch import watch_and_reload
from web.mcpdoor.affinity import session_tag
from web.security import AccessPolicy, access_policy
from web.serve import GRACEFUL_S, serve_front_door

logger = logging.getLogger("mcpapps.supervisor")


class StartupError(McpappsError):
    """Something the supervisor needs cannot be had; the message says what and why."""


async def run_supervisor(
    config: Config,
    environ: Mapping[str, str],
    *,
    task_status: trio.TaskStatus[Registry] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Run until SIGTERM or SIGINT (or until cancelled), then stop every app and return.
    SIGHUP reloads (it never stops the process).

    Once this returns the shutdown is done, so a SIGTERM or SIGINT that comes later (Ctrl-C
    twice, just too late) must not change the exit status: they are ignored from here on. The
    receiver puts back the handlers it found, and hands them the signals it did not read, so
    "ignore" is set just before it is opened (which replaces it with its own at once)."""
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, signal.SIG_IGN)
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT, signal.SIGHUP) as signals:
        discovery = discover(config, environ)
        log_discovery(discovery)
        policy = _access_policy(config)
        metrics = Metrics()
        replica = replica_id(config)
        try:
            store = make_store(config.state, environ, replica)
            await store.open()
        except StoreError as error:
            raise StartupError(str(error)) from None
        logger.info(
            "chat sessions are kept in %s; this supervisor is replica %s (its MCP session ids"
            " start with %s)",
            store.where,
            replica,
            session_tag(replica),
        )
        reaper: Reaper | None = None
        try:
            reaper = Reaper()
            registry = Registry(
                discovery.apps,
                environ=environ,
                ui=config.sandbox.enabled,
                reaper=reaper,
                metrics=metrics,
                sign_in=sign_in_place(config),
                start_slots=start_slots(config.apps.max_starting),
            )
            bridge = ToolBridge(registry.mailbox)
            try:
                engine = make_engine(config.agent, bridge, environ)
            except ValueError as error:
                raise StartupError(f"the {config.agent.engine} agent engine: {error}") from None
            retention = Retention.of(
                config.state.chat_sessions_max_age_days, config.state.chat_sessions_max_count
            )
            chats = ChatHub(
                engine,
                store,
                metrics,
                retention=retention,
                history_turns=config.agent.history_turns,
            )
            files = WorkspaceActor(config.workspace, metrics) if config.workspace else None
            parts = _Parts(
                config, policy, registry, chats, metrics, reaper, store, replica, files, bridge
            )
            await _supervise(parts, signals, environ, task_status)
        finally:
            remove_address(config.state.dir, os.getpid())
            if reaper is not None:
                reaper.close()
            with trio.CancelScope(shield=True):
                await store.close()


def replica_id(config: Config) -> str:
    """This supervisor's name among those that share a session database: its host and port
    (the same again after a restart, so the cluster view shows it come back)."""
    return f"{socket.gethostname()}:{config.server.port}"


def _access_policy(config: Config) -> AccessPolicy:
    require = access_policy(config, None).require_auth
    return access_policy(config, resolve_token(config, require_auth=require))


@attrs.frozen
class _Parts:
    config: Config
    policy: AccessPolicy
    registry: Registry
    chats: ChatHub
    metrics: Metrics
    reaper: Reaper
    store: SessionStore
    replica: str
    files: WorkspaceActor | None  # with [workspace] only
    bridge: ToolBridge  # the engine's: told of the view hub, whose views' tools it offers


async def _supervise(
    parts: _Parts,
    signals: Any,
    environ: Mapping[str, str],
    task_status: trio.TaskStatus[Registry],
) -> None:
    config, registry, chats = parts.config, parts.registry, parts.chats
    shutdown, close, closed = trio.Event(), trio.Event(), trio.Event()
    reloader = Reloader(config, environ, registry.mailbox)
    approvals = config.apps.approvals()
    files = parts.files.mailbox if parts.files else None
    views = ViewHub(
        registry.mailbox, chats.mailbox, config.views, approvals, parts.metrics, files=files
    )
    parts.bridge.views = views.mailbox

    async def front_door(task_status: trio.TaskStatus[Any]) -> None:
        try:
            await serve_front_door(
                config,
                parts.policy,
                registry.mailbox,
                chats=chats.mailbox,
                views=views.mailbox,
                metrics=parts.metrics,
                shutdown=shutdown,
                close=close,
                reload=reloader.reload,
                replica=parts.replica,
                files=files,
                task_status=task_status,
            )
        finally:
            closed.set()

    async with trio.open_nursery() as nursery:
        await nursery.start(registry.run)
        await nursery.start(chats.run)
        await nursery.start(views.run)
        if parts.files is not None:
            await nursery.start(parts.files.run)
            logger.info("workspace: %s", parts.files.workspace.root)
        await nursery.start(front_door)
        _record_address(config)
        url = config.server.public_url or config.control_origin
        nursery.start_soon(heartbeat, parts.store, registry.mailbox, parts.replica, url)
        nursery.start_soon(_announce_ready, registry, environ)
        if (interval := watchdog_interval(environ)) is not None:
            nursery.start_soon(_watchdog, interval, environ)
        if config.apps.watch:
            nursery.start_soon(watch_and_reload, config, reloader)
        task_status.started(registry)
        async for signum in signals:
            if signum == signal.SIGHUP:
                nursery.start_soon(_reload_on_signal, reloader)
                continue
            logger.info("received %s: stopping", signal.Signals(signum).name)
            break
        reloader.close()
        nursery.start_soon(_stop_at_once_on_another_signal, signals, parts.reaper, config.state.dir)
        notify("STOPPING=1", environ)
        shutdown.set()  # no new connections; requests in flight go on
        # Chat turns finish first, with the apps still up to answer their tool calls; then
        # the apps drain their calls in flight and stop.
        grace = config.supervision.stop_grace_s
        await ask(chats.mailbox, lambda reply: StopChats(grace, reply))
        await ask(registry.mailbox, StopAll)
        close.set()  # then the open streams end cleanly
        with trio.move_on_after(GRACEFUL_S * 2):
            await closed.wait()
        if not closed.is_set():
            # A client that stopped reading holds a write of Hypercorn's that no cancellation
            # reaches; the apps are stopped, so nothing is lost by not waiting for it.
            _exit_now(
                parts.reaper,
                config.state.dir,
                "a client stopped reading its answer: exiting without it",
                0,
            )
        logger.info("every app is stopped; exiting")
        nursery.cancel_scope.cancel()


def _record_address(config: Config) -> None:
    """Say where the front door listens, in the state dir: the command line finds this
    supervisor there even once config.toml says otherwise (a new port, a typo), so that a
    reload can report it. Without the file it reads the config, as before: not fatal."""
    try:
        write_address(config, os.getpid())
    except OSError as error:
        logger.warning(
            "cannot write %s: %s; `mcpapps` commands will find this supervisor from the config",
            config.state.dir / ADDRESS_FILE,
            error.strerror or error,
        )


async def _reload_on_signal(reloader: Reloader) -> None:
    """A reload asked for by SIGHUP: whatever happens, it is logged and the process goes on."""
    try:
        await reloader.reload("SIGHUP")
    except ReloadRefused as error:
        logger.warning("SIGHUP: %s", error)
    except Exception:
        logger.exception("SIGHUP: the reload failed; the apps run on as they were")


async def _stop_at_once_on_another_signal(signals: Any, reaper: Reaper, state_dir: Path) -> None:
    """A second SIGTERM or SIGINT (Ctrl-C twice) skips the grace periods."""
    async for signum in signals:
        name = signal.Signals(signum).name
        if signum == signal.SIGHUP:
            logger.warning("received SIGHUP while shutting down: no reload")
            continue
        _exit_now(reaper, state_dir, f"received {name} again: stopping at once", 1)


def _exit_now(reaper: Reaper, state_dir: Path, why: str, code: int) -> NoReturn:
    """Leave now, without waiting for any task. The reaper ends every app process group still
    alive; saved chat turns are safe (each was committed). The address file goes too, as on a
    normal stop: left behind, it would name a pid that a later process may be given."""
    logger.warning("%s", why)
    reaper.close()
    remove_address(state_dir, os.getpid())  # one small read and an unlink: no real delay
    logging.shutdown()
    os._exit(code)


async def _watchdog(interval: float, environ: Mapping[str, str]) -> None:
    while True:
        notify("WATCHDOG=1", environ)
        await trio.sleep(interval)


def sign_in_place(config: Config) -> SignInPlace:
    """Token files in the state dir; the callback under `public_url` when set (where the
    person's browser reaches the server), else the front door's own address."""
    base = config.server.public_url or config.control_origin
    return SignInPlace(config.state.dir / SIGN_IN_FOLDER, base)


async def _announce_ready(registry: Registry, environ: Mapping[str, str]) -> None:
    statuses = await ask(registry.mailbox, WhenReady)
    running = sum(s.state is AppState.RUNNING for s in statuses)
    failed = sum(s.state is AppState.FAILED for s in statuses)
    waiting = sum(s.state is AppState.NEEDS_SIGN_IN for s in statuses)
    others = len(statuses) - running - failed - waiting
    summary = f"{running} running, {failed} failed, {others} not run"
    if waiting:
        summary += f", {waiting} waiting for a sign-in"
    logger.info("ready: %s", summary)
    notify(f"READY=1\nSTATUS=apps: {summary}", environ)
