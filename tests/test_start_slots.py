"""Start slots: with `[apps] max_starting`, no more app processes are starting at once (from
their spawn until Running) than it says, and every app still starts."""

from __future__ import annotations

import re

import trio

from actors.apps.startslots import start_slots
from supervisor.model.config import AppsConfig, Config
from supervisor.model.reload import needs_restart
from tests.support.frontdoor import write
from tests.support.helpers import Project
from tests.support.running import GUARD_S, supervisor_running

APPS = ("fx-a", "fx-b", "fx-c")
STARTED = re.compile(r"app (\S+): started pid \d+")
RUNNING = re.compile(r"app (\S+): \S+ → Running")


def most_starting_at_once(log: str) -> int:
    """The most apps that were between their spawn and Running at once, read from the log."""
    starting: set[str] = set()
    most = 0
    for line in log.splitlines():
        if found := STARTED.search(line):
            starting.add(found.group(1))
            most = max(most, len(starting))
        elif found := RUNNING.search(line):
            starting.discard(found.group(1))
    return most


async def test_apps_start_one_at_a_time_with_one_slot(project: Project) -> None:
    write(project, "", *((app, ()) for app in APPS), extra="", grocery=False)
    config = project.root / "config.toml"
    config.write_text(config.read_text().replace("[apps]\n", "[apps]\nmax_starting = 1\n", 1))
    async with supervisor_running(project) as supervisor:
        with trio.fail_after(GUARD_S):
            while len(RUNNING.findall(supervisor.log)) < len(APPS):
                await trio.sleep(0.05)
        log = supervisor.log
    assert most_starting_at_once(log) == 1, log
    assert "waiting to start: 1 apps are starting ([apps] max_starting)" in log


def test_the_default_is_twice_the_cores_and_a_change_needs_a_restart() -> None:
    import os

    assert start_slots().total_tokens == 2 * len(os.sched_getaffinity(0))
    assert start_slots(3).total_tokens == 3
    before = Config(apps=AppsConfig())
    after = Config(apps=AppsConfig(max_starting=4))
    assert "apps.max_starting" in needs_restart(before, after)
