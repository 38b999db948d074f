"""The sse transport (HTTP+SSE, protocol revision 2024-11-05): an app built with the SDK's own SSE
server, on loopback, run as an app: its tools through the app's endpoint and `/mcp`, its
headers with their references expanded, the server killed and started again under the app
actor, and a transport that is not one of ours refused by `mcpapps validate`."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import trio

from actors.registry import Registry
from supervisor.model.lifecycle import AppState
from tests.support import forkserver
from tests.support.frontdoor import only_text, sdk_client
from tests.support.helpers import (
    Project,
    free_port,
    run_mcpapps,
    wait_for_port,
    wait_for_port_closed,
)
from tests.support.running import (
    FAST,
    GUARD_S,
    bridge,
    config_data,
    environment,
    running,
    supervisor_running,
    wait_for,
)

SSE_APP = Path(__file__).parent / "apps" / "sse_app.py"


class SseServer:
    """`sse_app.py` as its own process, which a test can kill and start again on its port."""

    def __init__(self, *, forked: bool = True) -> None:
        self.port = free_port()
        self.process: trio.Process | None = None
        # Forked by the worker's fork server unless a test signals the server itself (SIGSTOP
        # cannot be passed on by the launcher that stands in for it).
        self.python = forkserver.python() if forked else sys.executable

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/sse"

    async def start(self) -> None:
        self.process = await trio.lowlevel.open_process(
            [self.python, str(SSE_APP), "--port", str(self.port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        await wait_for_port(self.port, self.process, GUARD_S)

    async def kill(self) -> None:
        if self.process is not None and self.process.returncode is None:
            self.process.kill()
            await self.process.wait()
            await wait_for_port_closed(self.port, GUARD_S)


def sse_manifest(url: str) -> dict[str, object]:
    return {
        "id": "legacy",
        "transport": "SSE",  # any case, as for the other transports
        "url": url,
        "headers": {"X-Key": "${env:SSE_APP_KEY}"},
        "toolNamePrefix": "legacy.",
        "startupTimeoutSeconds": 10,
    }


async def test_an_sse_app_runs_and_survives_its_server_restarting(project: Project) -> None:
    server = SseServer()
    await server.start()
    try:
        project.manifest("apps/legacy", sse_manifest(server.url))
        # No ping in the test's time: the end of the event stream alone must tell.
        quiet = {"intensity": 1000, "backoff_max_s": 0.5, "ping_interval_s": 600}
        env = {**environment(), "SSE_APP_KEY": "k-123"}
        async with running(project, config_data(quiet), env) as registry:
            s = await wait_for(registry, "legacy", AppState.RUNNING)
            assert s.transport == "sse"
            assert s.url == server.url
            assert s.pid is None
            assert s.counts["tools"] == 4
            serial = await _call(registry, "serial")

            await server.kill()
            # The GET stream breaks as the server dies: the actor sees it without a call.
            down = await wait_for(registry, "legacy", lambda s: s.state is not AppState.RUNNING)
            # Its death, or (if a restart was tried already) the failed start that followed.
            assert (down.last_error or "").startswith(
                ("the connection failed: the app's event stream ended", "start-up failed")
            ), down
            await server.start()
            back = await wait_for(
                registry, "legacy", lambda s: s.state is AppState.RUNNING and s.restarts >= 1
            )
            assert back.previous_error is not None
            assert await _call(registry, "serial") != serial  # a new server answers
            assert await _call(registry, "whoami") == "k-123"  # its headers went along again
    finally:
        await server.kill()


async def test_a_hung_sse_app_is_found_by_its_pings(project: Project) -> None:
    """A server that stops answering (stopped, its connections open): pings go unanswered,
    the app is restarted, and runs again once the server answers."""
    server = SseServer(forked=False)
    await server.start()
    assert server.process is not None
    try:
        project.manifest("apps/legacy", sse_manifest(server.url))
        env = {**environment(), "SSE_APP_KEY": "k"}
        data = config_data({"intensity": 1000})
        async with running(project, data, env) as registry:
            await wait_for(registry, "legacy", AppState.RUNNING)
            server.process.send_signal(signal.SIGSTOP)
            try:
                hung = await wait_for(registry, "legacy", lambda s: s.state is not AppState.RUNNING)
                assert (hung.last_error or "").startswith("hung: did not answer 2 pings"), hung
            finally:
                server.process.send_signal(signal.SIGCONT)
            back = await wait_for(
                registry, "legacy", lambda s: s.state is AppState.RUNNING and s.restarts >= 1
            )
            assert back.last_error is None
            assert await _call(registry, "whoami") == "k"
    finally:
        await server.kill()


async def _call(registry: Registry, tool: str) -> str:
    return await bridge(registry).call(f"legacy.{tool}", {})


async def test_an_sse_app_is_served_through_its_endpoint_and_mcp(project: Project) -> None:
    server = SseServer()
    await server.start()
    try:
        project.manifest("apps/legacy", sse_manifest(server.url))
        supervision = "\n".join(f"{k} = {v}" for k, v in FAST.items())
        project.config(f'[apps]\ndiscovery_paths = ["./apps"]\n[supervision]\n{supervision}\n')
        async with supervisor_running(project, extra_env={"SSE_APP_KEY": "k-9"}) as supervisor:
            async with sdk_client(supervisor.url("/apps/mcp/legacy"), "legacy") as client:
                result = await client.call_tool("add", {"a": 2, "b": 40})
                assert only_text(result.model_dump(by_alias=True)) == "42"
                result = await client.call_tool("whoami", {})
                assert only_text(result.model_dump(by_alias=True)) == "k-9"
            async with sdk_client(supervisor.url("/mcp"), "legacy") as client:
                names = {t.name for t in (await client.list_tools()).tools}
                assert {"legacy.echo", "legacy.add", "legacy.whoami", "legacy.serial"} <= names
                result = await client.call_tool("legacy.echo", {"text": "hello"})
                assert only_text(result.model_dump(by_alias=True)) == "hello"
            # Stopped with the supervisor (SIGTERM), as the other transports are.
            assert await supervisor.stop() == 0
    finally:
        await server.kill()


def test_validate_refuses_a_transport_that_is_not_one_of_ours(project: Project) -> None:
    project.manifest("mcpapps/ws", {"id": "ws", "transport": "websocket", "url": "ws://h/x"})
    project.config(
        '[apps.inline.grpc]\ntransport = "grpc"\nurl = "http://127.0.0.1:9/x"\n'
        '[apps.inline.old]\ntransport = "sse"\nurl = "http://127.0.0.1:9/sse"\n'
    )
    result = run_mcpapps("validate", cwd=project.root)
    assert result.returncode == 1
    allowed = "use 'stdio', 'http', 'sse' ('streamable-http' is read as 'http')"
    assert f"'transport' \"websocket\" is not supported: {allowed}" in result.stdout
    assert f"'apps.inline.grpc.transport' \"grpc\" is not supported: {allowed}" in result.stdout
    old = next(line for line in result.stdout.splitlines() if line.startswith("old "))
    assert old.split()[:3] == ["old", "Validated", "sse"]
