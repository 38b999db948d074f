"""`mcpapps run` as a user runs it: a real supervisor process, real apps, real signals."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import trio

from actors.apps import reaper
from tests.support.helpers import Project
from tests.support.running import (
    FAST,
    GUARD_S,
    Supervisor,
    alive,
    fixture_manifest,
    notify_socket,
    wait_gone,
)


def write_project(project: Project, *apps: tuple[str, tuple[str, ...]]) -> None:
    for app_id, options in apps:
        project.manifest(f"apps/{app_id}", fixture_manifest(app_id, *options))
    supervision = "\n".join(f"{k} = {v}" for k, v in FAST.items())
    project.config(f'[apps]\ndiscovery_paths = ["./apps"]\n\n[supervision]\n{supervision}\n')


REAPER = os.path.abspath(reaper.__file__).encode()


def reapers(cwd: Path) -> list[int]:
    """Live reaper processes started from `cwd` (the supervisor's folder)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            command = (entry / "cmdline").read_bytes().split(b"\0")
            here = (entry / "cwd").resolve() == cwd.resolve()
        except OSError:
            continue
        if here and REAPER in command and alive(int(entry.name)):
            found.append(int(entry.name))
    return found


def pids(project: Project, name: str) -> tuple[int, int]:
    """(app pid, grandchild pid) written by the fixture's --grandchild option."""
    pidfile = project.root / f"{name}.pid"
    return int(Path(f"{pidfile}.self").read_text()), int(pidfile.read_text())


async def test_run_logs_states_ready_and_stops_on_sigterm(project: Project) -> None:
    first, second = project.root / "first.pid", project.root / "second.pid"
    write_project(
        project,
        ("first", ("--grandchild", str(first))),
        ("second", ("--grandchild", str(second))),
        ("broken", ("--crash-at-start",)),
    )
    project.config(project.config_path.read_text() + 'restart = "temporary"\n')
    supervisor = Supervisor(project)
    async with trio.open_nursery() as nursery:
        await supervisor.start(nursery)
        await supervisor.wait_for_log("ready: 2 running, 1 failed, 0 not run")
        assert "app first: Loaded → Running (8 tools" in supervisor.log
        assert "app broken: Loaded → Failed: the process exited with code 2" in supervisor.log
        processes = [*pids(project, "first"), *pids(project, "second")]
        assert all(alive(pid) for pid in processes)
        assert len(reapers(project.root)) == 1
        assert await supervisor.stop(signal.SIGTERM) == 0
    for pid in processes:
        assert not alive(pid)
    assert reapers(project.root) == []
    log = supervisor.log
    assert "received SIGTERM: stopping" in log
    # Reverse start order: second stops before first.
    assert log.index("app second: Running → Stopped") < log.index("app first: Running → Stopped")
    assert log.rstrip().endswith("every app is stopped; exiting")


async def test_sigint_stops_too(project: Project) -> None:
    write_project(project, ("only", ()))
    supervisor = Supervisor(project)
    async with trio.open_nursery() as nursery:
        await supervisor.start(nursery)
        await supervisor.wait_for_log("ready: 1 running")
        assert await supervisor.stop(signal.SIGINT) == 0
    assert "received SIGINT: stopping" in supervisor.log


async def test_a_signal_after_the_shutdown_finished_keeps_exit_status_0(project: Project) -> None:
    write_project(project, ("only", ()))
    supervisor = Supervisor(project)
    async with trio.open_nursery() as nursery:
        await supervisor.start(nursery)
        await supervisor.wait_for_log("ready: 1 running")
        process = supervisor.process
        assert process is not None
        process.send_signal(signal.SIGINT)
        await supervisor.wait_for_log("every app is stopped; exiting")
        # Ctrl-C again (or a SIGTERM) while the process is on its way out: ignored.
        signals = (signal.SIGINT, signal.SIGTERM)
        with trio.fail_after(GUARD_S):
            for n in range(1_000_000):
                if process.poll() is not None:
                    break
                process.send_signal(signals[n % 2])
                await trio.sleep(0.001)
        assert await supervisor.wait() == 0, supervisor.log
    assert "again: stopping at once" not in supervisor.log


async def test_a_second_signal_exits_at_once_and_takes_the_address_file(
    project: Project,
) -> None:
    """Left behind, `supervisor.json` would name a pid that a later process may be given."""
    write_project(project, ("stubborn", ("--stubborn",)))
    project.config(
        project.config_path.read_text().replace("stop_grace_s = 1.0", "stop_grace_s = 600")
    )
    address = project.root / ".mcpapps" / "supervisor.json"
    supervisor = Supervisor(project)
    async with trio.open_nursery() as nursery:
        await supervisor.start(nursery)
        await supervisor.wait_for_log("ready: 1 running")
        await supervisor.wait_for_log("front door listening on")
        process = supervisor.process
        assert process is not None
        assert json.loads(address.read_text())["pid"] == process.pid
        process.send_signal(signal.SIGTERM)
        await supervisor.wait_for_log("received SIGTERM: stopping")
        # The app ignores SIGTERM: its stop would wait 600 s; the second signal does not.
        assert await supervisor.stop(signal.SIGINT) == 1
    assert "received SIGINT again: stopping at once" in supervisor.log
    assert not address.exists()


async def test_sigkill_of_the_supervisor_leaves_no_app_process(project: Project) -> None:
    pidfile = project.root / "app.pid"
    write_project(project, ("app", ("--grandchild", str(pidfile))))
    supervisor = Supervisor(project)
    async with trio.open_nursery() as nursery:
        await supervisor.start(nursery)
        await supervisor.wait_for_log("ready: 1 running")
        app, grandchild = pids(project, "app")
        assert supervisor.process is not None
        supervisor.process.send_signal(signal.SIGKILL)
        await supervisor.wait()
        await wait_gone(app)
        await wait_gone(grandchild)


def test_config_errors_exit_1(project: Project) -> None:
    project.config("[server]\nport = 0\n")
    result = subprocess.run(
        [str(Path(sys.executable).parent / "mcpapps"), "run"],
        cwd=project.root,
        env={k: v for k, v in os.environ.items() if not k.startswith("MCPAPPS_")},
        capture_output=True,
        text=True,
        timeout=GUARD_S,
        check=False,
    )
    assert result.returncode == 1
    assert "config.toml: server.port must be" in result.stderr


async def test_the_readme_run_command_on_the_bundled_apps() -> None:
    """`make run` is `mcpapps run --config config.toml` in the project folder, with the
    virtual environment first on PATH (which `environment()` does too)."""
    root = Path(__file__).parent.parent
    supervisor = Supervisor(Project.__new__(Project), str(root / "config.toml"))
    supervisor.project.root = root
    async with trio.open_nursery() as nursery:
        await supervisor.start(nursery)
        await supervisor.wait_for_log("ready: 1 running, 0 failed, 0 not run")
        assert "app grocery-inventory: Loaded → Running (15 tools, 2 resources" in supervisor.log
        assert f"workspace: {root / 'workspace'}" in supervisor.log  # the sample files
        assert await supervisor.stop(signal.SIGTERM) == 0
    assert "app grocery-inventory: Running → Stopped" in supervisor.log


async def test_json_logs(project: Project) -> None:
    write_project(project, ("only", ()))
    project.config(project.config_path.read_text() + '\n[log]\nformat = "json"\n')
    supervisor = Supervisor(project)
    async with trio.open_nursery() as nursery:
        await supervisor.start(nursery)
        await supervisor.wait_for_log('"message": "ready: 1 running, 0 failed, 0 not run"')
        assert await supervisor.stop(signal.SIGTERM) == 0
    entries = [json.loads(line) for line in supervisor.log.splitlines()]
    assert {"time", "level", "logger", "message"} <= set(entries[0])
    messages = [e["message"] for e in entries]
    assert "app only: Validated → Loaded" in messages
    assert messages[-1] == "every app is stopped; exiting"


async def test_systemd_notifications(project: Project, tmp_path: Path) -> None:
    """With $NOTIFY_SOCKET (as under systemd Type=notify): READY=1 once ready, WATCHDOG=1 when
    asked for, STOPPING=1 on shutdown."""
    write_project(project, ("only", ()))
    async with notify_socket(tmp_path) as (address, received), trio.open_nursery() as nursery:
        environ = {"NOTIFY_SOCKET": address, "WATCHDOG_USEC": "400000"}
        supervisor = Supervisor(project, extra_env=environ)
        await supervisor.start(nursery)
        await supervisor.wait_for_log("ready: 1 running")
        with trio.fail_after(GUARD_S):
            while not any(m.startswith("READY=1") for m in received):
                await trio.sleep(0.02)
        assert await supervisor.stop() == 0
    assert "READY=1\nSTATUS=apps: 1 running, 0 failed, 0 not run" in received
    assert "WATCHDOG=1" in received
    assert received.index("STOPPING=1") > received.index(
        "READY=1\nSTATUS=apps: 1 running, 0 failed, 0 not run"
    )
