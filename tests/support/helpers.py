"""Test helpers: real config files and manifests in temp folders, and the real command."""

from __future__ import annotations

import json
import os
import random
import socket
import subprocess
import sys
from collections import deque
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from supervisor.model.config import Config, load_config
from supervisor.model.discovery import DiscoveredApp, Discovery, discover
from tests.support import forkserver

MANIFEST = "openclaw.mcpapp.json"


def free_port() -> int:
    """A loopback port nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


PAIRS_FROM, PAIRS_TO = 20000, 32000
_handed_out: deque[int] = deque(maxlen=256)


def free_port_pair() -> int:
    """A loopback port P such that P and P + 1 are both free now: a supervisor's main port,
    whose sandbox listener takes the next one by default. Chosen below the kernel's ephemeral
    range, so that no `free_port()` or outgoing connection is handed P + 1 meanwhile; from this
    test worker's own slice of that range, so that no other worker picks P + 1 before the
    supervisor binds it; and never one this worker handed out lately, which may still be
    starting."""
    worker = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw"))
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    width = (PAIRS_TO - PAIRS_FROM) // max(workers, 1)
    low = PAIRS_FROM + width * (worker % max(workers, 1))
    while True:
        port = random.randrange(low, low + width - 1)
        if {port - 1, port, port + 1} & set(_handed_out):
            continue
        try:
            for candidate in (port, port + 1):
                with socket.socket() as s:
                    s.bind(("127.0.0.1", candidate))
        except OSError:
            continue
        _handed_out.extend((port, port + 1))
        return port


class Project:
    """A folder with a config.toml and manifests under it, as a user would lay them out."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.config_path = root / "config.toml"
        self.config_path.write_text("")

    def manifest(self, folder: str, content: dict[str, Any] | str) -> Path:
        path = self.root / folder / MANIFEST
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content if isinstance(content, str) else json.dumps(content))
        return path

    def config(self, text: str) -> Path:
        self.config_path.write_text(text)
        return self.config_path

    def load(self, environ: Mapping[str, str] | None = None) -> Config:
        return load_config(self.config_path, environ or {})

    def discover(self, environ: Mapping[str, str] | None = None) -> Discovery:
        return discover(self.load(environ), environ or {})

    def app(self, app_id: str, environ: Mapping[str, str] | None = None) -> DiscoveredApp:
        matches = [a for a in self.discover(environ).apps if a.id == app_id]
        assert len(matches) == 1, f"expected one app '{app_id}', found {len(matches)}"
        return matches[0]


def stdio(app_id: str, **fields: Any) -> dict[str, Any]:
    """A minimal valid stdio manifest."""
    return {"id": app_id, "command": "python3", **fields}


def messages(app: DiscoveredApp) -> list[str]:
    return [p.message for p in app.errors]


def run_mcpapps(
    *args: str, cwd: Path, env: Mapping[str, str] | None = None, prefix: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    """Run the installed `mcpapps` command as a user would, and capture what it prints."""
    command = [*prefix, str(Path(sys.executable).parent / "mcpapps"), *args]
    environment = {k: v for k, v in os.environ.items() if not k.startswith("MCPAPPS_")}
    environment.update(env or {})
    if not prefix and forkserver.enabled(environment):
        return forkserver.run_mcpapps(args, cwd=cwd, env=environment, timeout=60)
    return subprocess.run(
        command,
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


async def wait_for_port_closed(port: int, timeout: float = 60) -> None:
    """Until nothing accepts connections on the loopback port: a forked app outlives its
    killed launcher by the moment its fork server takes to notice."""
    import trio

    with trio.fail_after(timeout):
        while True:
            try:
                stream = await trio.open_tcp_stream("127.0.0.1", port)
            except OSError:
                return
            await stream.aclose()
            await trio.sleep(0.01)


async def wait_for_port(port: int, process: Any = None, timeout: float = 60) -> None:
    """Until something accepts connections on the loopback port; fails at once if `process`
    (a trio.Process) exits meanwhile."""
    import trio  # here: the pure tests that use this module need no event loop

    with trio.fail_after(timeout):
        while True:
            if process is not None and process.returncode is not None:
                raise AssertionError(f"the server exited with {process.returncode}")
            try:
                stream = await trio.open_tcp_stream("127.0.0.1", port)
            except OSError:
                await trio.sleep(0.05)
                continue
            await stream.aclose()
            return


CLIENT_IDLE_EXPIRY_S = 5.0  # httpx's keepalive_expiry, and so the MCP SDK client's


async def statuses_across_an_idle_pause(port: int, target: str, idle_s: float) -> list[int]:
    """Two GETs of `target` on one HTTP/1.1 connection, `idle_s` apart: the statuses. Fails if
    the server closed the connection meanwhile."""
    import h11
    import trio

    stream = await trio.open_tcp_stream("127.0.0.1", port)
    connection = h11.Connection(h11.CLIENT)
    host = [("host", f"127.0.0.1:{port}")]
    statuses = []
    async with stream:
        for request in range(2):
            if request:
                await trio.sleep(idle_s)
                connection.start_next_cycle()
            await stream.send_all(
                connection.send(h11.Request(method="GET", target=target, headers=host))
                + connection.send(h11.EndOfMessage())
            )
            while not isinstance(event := connection.next_event(), h11.EndOfMessage):
                if event is h11.NEED_DATA:
                    data = await stream.receive_some()
                    assert data or request == 0, f"closed after {idle_s} s idle"
                    connection.receive_data(data)
                elif isinstance(event, h11.Response):
                    statuses.append(event.status_code)
    return statuses


def csp_directives(header: str) -> dict[str, str]:
    """A Content-Security-Policy header's directives, by name (each with its name)."""
    return {d.split(" ")[0]: d for d in (part.strip() for part in header.split(";")) if d}
