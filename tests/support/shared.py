"""One `mcpapps run` for the tests of a module that only read from it.

Most of the suite's CPU goes into starting Python processes that import the MCP SDK: a supervisor
and each of its apps cost about a second of CPU each before a test does anything. A module whose
tests ask a supervisor things without changing it (no stop, restart, reload, kill, no config of
their own, nothing left open) shares one, started by a module-scoped fixture. pytest-trio runs
each test in an event loop of its own, so the shared supervisor is a plain subprocess, started and
waited for synchronously; the tests talk to it over HTTP as they would to their own.

Each test sees it through a `SharedView` (function-scoped): the same attributes a `Supervisor`
has (`port`, `url`, `project`, `log`, `wait_for_log`), with `log` holding only what was logged
since that test began, so a test's log checks stay its own. On leaving, the view checks that the
test changed nothing a later test could see: the process still runs and every app has the state,
process and restart count it had at the start. A test that changes the supervisor fails there,
and belongs on a supervisor of its own.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2
import trio

from actors.tls import client_tls
from tests.support import forkserver
from tests.support.helpers import Project, free_port_pair
from tests.support.running import GUARD_S, environment

READY = ("ready: ", "front door listening on")


class SharedSupervisor:
    """`mcpapps run` on `project` in a subprocess, its stderr in a file, until `stop`."""

    def __init__(self, project: Project, token: str | None = None) -> None:
        self.project = project
        self.port = free_port_pair()
        self.headers = {"authorization": f"Bearer {token}"} if token else {}
        self.log_path = project.root / "mcpapps.log"
        self.process: subprocess.Popen[bytes] | forkserver.ForkedProcess | None = None

    @property
    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def url(self, path: str = "") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def start(self, ready: tuple[str, ...] = READY) -> None:
        command = [str(Path(sys.executable).parent / "mcpapps"), "run", "--config", "config.toml"]
        env = {**environment(), "MCPAPPS_PORT": str(self.port)}
        with self.log_path.open("wb") as log:
            if forkserver.enabled(env):
                self.process = forkserver.fork_mcpapps(
                    command[1:], cwd=self.project.root, env=env, stderr=log
                )
            else:
                self.process = subprocess.Popen(
                    command,
                    cwd=self.project.root,
                    env=env,
                    stdout=subprocess.DEVNULL,
                    stderr=log,
                )
        deadline = time.monotonic() + GUARD_S
        while not all(text in self.log for text in ready):
            assert self.process.poll() is None, f"mcpapps ended before it was ready:\n{self.log}"
            assert time.monotonic() < deadline, f"mcpapps not ready in {GUARD_S} s:\n{self.log}"
            time.sleep(0.02)

    def apps(self) -> dict[str, tuple[str, int | None, int]]:
        """Each app's state, process id and restart count, from the admin API."""
        response = httpx2.get(
            self.url("/admin/apps"), headers=self.headers, verify=client_tls(), timeout=GUARD_S
        )
        assert response.status_code == 200, response.text
        return {a["id"]: (a["state"], a["pid"], a["restarts"]) for a in response.json()["apps"]}

    def stop(self) -> int:
        """SIGTERM, and the exit status."""
        assert self.process is not None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        return self.process.wait(GUARD_S)


class SharedView:
    """A shared supervisor as one test sees it: a `Supervisor`'s attributes, the log since the
    test began."""

    def __init__(self, shared: SharedSupervisor) -> None:
        self.shared = shared
        self.project = shared.project
        self.port = shared.port
        self._start = len(shared.log)

    @property
    def log(self) -> str:
        return self.shared.log[self._start :]

    @property
    def process(self) -> subprocess.Popen[bytes] | forkserver.ForkedProcess | None:
        return self.shared.process

    def url(self, path: str = "") -> str:
        return self.shared.url(path)

    async def wait_for_log(self, text: str) -> None:
        with trio.fail_after(GUARD_S):
            while text not in self.log:
                await trio.sleep(0.02)


def view_of(shared: SharedSupervisor) -> Iterator[SharedView]:
    """The body of a module's function-scoped fixture: a view of `shared` for one test, and the
    check that the test left the supervisor as it found it."""
    before = shared.apps()
    yield SharedView(shared)
    assert shared.process is not None
    assert shared.process.poll() is None, f"the shared supervisor ended:\n{shared.log}"
    assert shared.apps() == before, "the test changed the shared supervisor's apps"


def shared_supervisor(project: Project, token: str | None = None) -> Iterator[SharedSupervisor]:
    """The body of a module-scoped fixture: `mcpapps run` on `project`, started once, stopped
    after the module's last test (and it must exit cleanly)."""
    shared = SharedSupervisor(project, token)
    try:
        shared.start()
        yield shared
    finally:
        if shared.process is not None:
            code = shared.stop()
            assert code == 0, f"the shared supervisor exited with {code}:\n{shared.log}"
