"""Helpers for tests that run apps: fixture manifests, a registry under a nursery, waiting for
states. Everything is real: real child processes, the real SDK."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import Any

import trio

from actors.apps.processgroup import ChildProcess
from actors.apps.stdio import StdioTransport, pump_stderr
from actors.apps.upstream import Upstream, connect
from actors.chat.agent import call_tool
from actors.chat.bridge import ToolBridge
from actors.messages import AppStatus, GetStatus, Snapshot, StopAll, ToApp
from actors.registry import Registry
from actors.runtime import ask
from supervisor.model.config import config_from_data
from supervisor.model.discovery import discover
from supervisor.model.lifecycle import AppState
from tests.support import forkserver
from tests.support.helpers import Project, free_port_pair

FIXTURE_APP = Path(__file__).parent.parent / "apps" / "fixture_app.py"
GROCERY = Path(__file__).parents[2] / "mcpapps" / "grocery-inventory"
GUARD_S = 60  # a hang guard, not a speed claim
# The bundled app's tools: every one of them, as its own endpoint lists them.
GROCERY_TOOLS = frozenset(
    {
        "get_categories",
        "get_products",
        "get_suppliers",
        "get_stores",
        "get_inventory",
        "get_low_stock",
        "set_inventory",
        "adjust_stock",
        "get_server_stats",
        "get_caller_session",
        "show_store_inventory_dashboard",
        "get_store_dashboard_data",
        "guided_restock",
        "confirm_adjustment",
        "open_inventory_file",
    }
)
# Those of its tools that only its views call (`visibility: ["app"]`): never offered to a model.
GROCERY_APP_ONLY = frozenset({"get_store_dashboard_data", "open_inventory_file"})

# Fast supervision for tests: short backoff and pings, so restarts happen in test time.
FAST = {
    "backoff_initial_s": 0.05,
    "backoff_max_s": 0.2,
    "ping_interval_s": 0.5,
    "ping_timeout_s": 0.5,
    "ping_misses": 2,
    "stop_grace_s": 1.0,
}


def environment() -> dict[str, str]:
    """The supervisor's environment: ours, with this interpreter first on PATH (so `python3`
    in a manifest has the SDK), and before it the launcher that forks it ready-made
    (tests/support/forklauncher.py) unless forking is off."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCPAPPS_")}
    folders = [str(Path(p).parent) for p in {forkserver.python(), sys.executable}]
    env["PATH"] = os.pathsep.join([*sorted(folders, key=_venv_last), env.get("PATH", "")])
    return env


def _venv_last(folder: str) -> bool:
    return folder == str(Path(sys.executable).parent)


def fixture_manifest(
    app_id: str, *options: str, forked: bool = True, **fields: Any
) -> dict[str, Any]:
    """The fixture app's manifest. `forked`: started by the worker's fork server (faster), unless
    the test needs the app to be the process the supervisor started (its pid, its process group
    for a grandchild)."""
    forked = forked and "--grandchild" not in options
    return {
        "id": app_id,
        "command": forkserver.python() if forked else sys.executable,
        "arguments": [str(FIXTURE_APP), "--name", app_id, *options],
        "toolNamePrefix": f"{app_id}.",
        **fields,
    }


def config_data(supervision: Mapping[str, Any] | None = None, **apps: Any) -> dict[str, Any]:
    return {
        "apps": {"discovery_paths": ["./apps"], **apps},
        "supervision": {**FAST, **(supervision or {})},
    }


@contextlib.asynccontextmanager
async def running(
    project: Project,
    data: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
) -> AsyncIterator[Registry]:
    """A registry running every app of `project` (manifests under `apps/`), stopped after."""
    env = dict(environ or environment())
    config = config_from_data(dict(data or config_data()), project.config_path, env)
    registry = Registry(discover(config, env).apps, environ=env)
    async with trio.open_nursery() as nursery:
        await nursery.start(registry.run)
        try:
            yield registry
        finally:
            with trio.CancelScope(shield=True), trio.fail_after(GUARD_S):
                await ask(registry.mailbox, StopAll)
            nursery.cancel_scope.cancel()


async def status(registry: Registry, app_id: str) -> AppStatus:
    return await ask(registry.mailbox, lambda r: ToApp(app_id, GetStatus(r)), GUARD_S)


async def snapshot(registry: Registry) -> dict[str, AppStatus]:
    return {s.id: s for s in await ask(registry.mailbox, Snapshot, GUARD_S)}


async def wait_for(
    registry: Registry,
    app_id: str,
    check: Callable[[AppStatus], bool] | AppState,
    *,
    timeout: float = GUARD_S,
) -> AppStatus:
    """Poll the app's status until `check` holds (or the state is reached)."""
    if isinstance(check, AppState):
        wanted = check
        check = lambda s: s.state is wanted  # noqa: E731
    with trio.fail_after(timeout):
        while True:
            current = await status(registry, app_id)
            if check(current):
                return current
            await trio.sleep(0.02)


class ModelBridge(ToolBridge):
    """The tool bridge as a model uses it: `call` answers with the text the model reads
    (`actors.chat.agent.call_tool`, the one way an engine calls a tool)."""

    async def call(self, public_name: str, arguments: Any) -> str:
        return (await call_tool(self, public_name, arguments)).text


def bridge(registry: Registry) -> ModelBridge:
    return ModelBridge(registry.mailbox, timeout=GUARD_S)


def alive(pid: int) -> bool:
    """Whether `pid` is a live process (a zombie counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except FileNotFoundError:
        return False
    return stat[stat.rfind(b")") + 2 :].split()[0] != b"Z"


async def wait_gone(pid: int, timeout: float = GUARD_S) -> None:
    with trio.fail_after(timeout):
        while alive(pid):
            await trio.sleep(0.02)


@contextlib.asynccontextmanager
async def calling(
    b: ToolBridge, public_name: str, arguments: dict[str, Any], times: int = 1
) -> AsyncIterator[list[str]]:
    """Make `times` calls in the background; on leaving, wait for all of them. The list fills
    with what each call returned, in the order they ended."""
    results: list[str] = []

    async def one() -> None:
        results.append(await b.call(public_name, arguments))

    async with trio.open_nursery() as nursery:
        for _ in range(times):
            nursery.start_soon(one)
        yield results


class Supervisor:
    """`mcpapps run` in a subprocess; its stderr (the log) is read as it comes."""

    def __init__(
        self,
        project: Project,
        config: str = "config.toml",
        extra_env: dict[str, str] | None = None,
    ) -> None:
        self.project = project
        self.config = config
        self.extra_env = extra_env or {}
        self.log = ""
        self.log_ended = False  # stderr is closed: the process is gone
        self.process: trio.Process | forkserver.ForkedProcess | None = None
        self.port = int(self.extra_env.get("MCPAPPS_PORT") or free_port_pair())

    async def start(self, nursery: trio.Nursery) -> None:
        command = [str(Path(sys.executable).parent / "mcpapps"), "run", "--config", self.config]
        env = {**environment(), "MCPAPPS_PORT": str(self.port), **self.extra_env}
        stderr: trio.abc.ReceiveStream
        if forkserver.enabled(env):
            read, write = os.pipe()
            try:
                self.process = forkserver.fork_mcpapps(
                    command[1:], cwd=self.project.root, env=env, stderr=write
                )
            finally:
                os.close(write)
            stderr = trio.lowlevel.FdStream(read)
        else:
            self.process = process = await trio.lowlevel.open_process(
                command,
                cwd=self.project.root,
                env=env,
                stderr=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
            )
            assert process.stderr is not None
            stderr = process.stderr
        nursery.start_soon(self._read, stderr)

    async def _read(self, stderr: trio.abc.ReceiveStream) -> None:
        async with stderr:
            async for chunk in stderr:
                self.log += chunk.decode()
        self.log_ended = True

    async def wait_for_log(self, text: str) -> None:
        with trio.fail_after(GUARD_S):
            while text not in self.log:
                assert not self.log_ended, f"mcpapps ended without logging {text!r}:\n{self.log}"
                await trio.sleep(0.02)

    async def stop(self, signum: signal.Signals = signal.SIGTERM) -> int:
        """Send `signum` and wait for the exit status."""
        assert self.process is not None
        self.process.send_signal(signum)
        return await self.wait()

    async def wait(self) -> int:
        assert self.process is not None
        with trio.fail_after(GUARD_S):
            if isinstance(self.process, forkserver.ForkedProcess):
                return await self.process.wait_exit()
            return await self.process.wait()

    def url(self, path: str = "") -> str:
        return f"http://127.0.0.1:{self.port}{path}"


@contextlib.asynccontextmanager
async def supervisor_running(
    project: Project, extra_env: dict[str, str] | None = None, ready: str = "ready: "
) -> AsyncIterator[Supervisor]:
    """`mcpapps run` on the project, serving on a free port; stopped with SIGTERM after."""
    supervisor = Supervisor(project, extra_env=extra_env)
    async with trio.open_nursery() as nursery:
        await supervisor.start(nursery)
        try:
            await supervisor.wait_for_log(ready)
            await supervisor.wait_for_log("front door listening on")
            yield supervisor
        finally:
            assert supervisor.process is not None
            if supervisor.process.returncode is None:
                with trio.CancelScope(shield=True):
                    await supervisor.stop()


@contextlib.asynccontextmanager
async def logged_supervisor(project: Project) -> AsyncIterator[Supervisor]:
    """`supervisor_running`, with the supervisor's log printed when the test fails (pytest
    shows it): a reload's story is in its log."""
    async with supervisor_running(project) as supervisor:
        try:
            yield supervisor
        except BaseException:
            print(supervisor.log)
            raise


@contextlib.asynccontextmanager
async def notify_socket(folder: Path) -> AsyncIterator[tuple[str, list[str]]]:
    """A systemd notification socket (what $NOTIFY_SOCKET names) in `folder`, read while the
    block runs: its address, and the list each message is added to as it arrives."""
    address = str(folder / "notify.sock")
    received: list[str] = []
    with trio.socket.socket(trio.socket.AF_UNIX, trio.socket.SOCK_DGRAM) as sock:
        await sock.bind(address)

        async def listen() -> None:
            while True:
                received.append((await sock.recv(4096)).decode())

        async with trio.open_nursery() as nursery:
            nursery.start_soon(listen)
            yield address, received
            nursery.cancel_scope.cancel()


@contextlib.asynccontextmanager
async def fixture_upstream(
    *options: str,
) -> AsyncIterator[tuple[ChildProcess, Upstream, list[str]]]:
    """The fixture app over stdio with the real SDK, as an app actor's connection sees it: its
    process, the `Upstream`, and the lines it writes to stderr as they come."""
    child = ChildProcess.spawn(
        [sys.executable, str(FIXTURE_APP), "--name", "fx", *options], env=dict(os.environ), cwd=None
    )
    stderr: list[str] = []

    async def ignore(message: Any) -> None:
        pass

    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(pump_stderr, child, stderr.append)
            transport = StdioTransport(child, "fx", lambda: None)
            async with connect(
                transport,
                protocol="handshake",
                ui=False,
                on_message=ignore,
                direct=transport.direct,
            ) as upstream:
                yield child, upstream, stderr
            nursery.cancel_scope.cancel()
    finally:
        with trio.CancelScope(shield=True):
            await child.stop(1.0)
            await child.close_pipes()
