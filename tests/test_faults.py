"""Hard faults that are not bugs: an app killed again and again, with and without calls in
flight, is an ordinary death. The log says what happened and why (the state change and its
cause), never a traceback or an "unexpected error" meant for bugs of ours."""

from __future__ import annotations

import logging
import os
import signal

import pytest
import trio

from supervisor.model.lifecycle import AppState
from tests.support.helpers import Project
from tests.support.running import (
    bridge,
    config_data,
    fixture_manifest,
    running,
    wait_for,
)

KILLS = 12


async def test_killing_an_app_again_and_again_raises_no_false_alarm(
    project: Project, caplog: pytest.LogCaptureFixture
) -> None:
    project.manifest("apps/victim", fixture_manifest("victim"))
    caplog.set_level(logging.DEBUG, logger="mcpapps")
    data = config_data({"intensity": 1000, "max_concurrent_calls": 64})
    async with running(project, data) as registry:
        b = bridge(registry)
        answers: list[str] = []

        async def call(seconds: float) -> None:
            answers.append(await b.call("victim.sleep", {"seconds": seconds}))

        for kill in range(KILLS):
            status = await wait_for(registry, "victim", AppState.RUNNING)
            async with trio.open_nursery() as nursery:
                if kill % 2:  # every other kill with calls in flight, some just sent
                    for _ in range(8):
                        nursery.start_soon(call, 30)
                    await wait_for(registry, "victim", lambda s: s.in_flight >= 8)
                    nursery.start_soon(call, 30)
                os.kill(status.pid, signal.SIGKILL)
            await wait_for(registry, "victim", lambda s, pid=status.pid: s.pid not in (None, pid))
        assert answers
        assert all("died during the call" in a or "not running" in a for a in answers), answers

    alarms = [
        r
        for r in caplog.records
        if r.name.startswith("mcpapps") and (r.levelno >= logging.ERROR or r.exc_info)
    ]
    assert not alarms, [f"{r.levelname} {r.getMessage()}" for r in alarms]
    deaths = [r.getMessage() for r in caplog.records if "→ Failed" in r.getMessage()]
    assert len(deaths) >= KILLS
    assert all("SIGKILL" in d or "connection" in d for d in deaths), deaths
