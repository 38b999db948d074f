"""A reload's edges: what an operator asks of an app while a reload is replacing its actor
(in process: the registry, the reloader and the fixture app's real processes)."""

from __future__ import annotations

from pathlib import Path

import trio

from actors.messages import Start, Stop, StopAll, ToApp
from actors.registry import Registry
from actors.runtime import ask
from supervisor.model.discovery import discover
from supervisor.model.lifecycle import AppState
from supervisor.reloader import Reloader
from tests.support.helpers import Project
from tests.support.running import GUARD_S, bridge, environment, fixture_manifest, status, wait_for


async def test_a_start_given_while_a_reload_replaces_a_stopped_app_is_not_undone(
    project: Project, tmp_path: Path
) -> None:
    """`b` is Stopped and its manifest changed: the reload gives it an actor with the new
    definition, Stopped too. An operator's start that comes after the reload's plan, while
    another app's stop holds the reload (its call in flight may finish), is the successor's:
    `b` ends up running its new definition, not Stopped."""
    env = environment()
    gate = tmp_path / "gate"
    project.config(
        '[apps]\ndiscovery_paths = ["./apps"]\n[supervision]\n'
        f"stop_grace_s = {GUARD_S}\nbackoff_initial_s = 0.05\n"
    )
    project.manifest("apps/a", fixture_manifest("a", "--gates"))
    project.manifest("apps/b", fixture_manifest("b"))
    config = project.load(env)
    registry = Registry(discover(config, env).apps, environ=env)
    with trio.fail_after(3 * GUARD_S):
        async with trio.open_nursery() as nursery:
            await nursery.start(registry.run)
            await wait_for(registry, "a", AppState.RUNNING)
            await wait_for(registry, "b", AppState.RUNNING)
            await ask(registry.mailbox, lambda r: ToApp("b", Stop(r)), GUARD_S)
            calls = bridge(registry)
            nursery.start_soon(calls.call, "a.gate", {"path": str(gate)})
            while await calls.call("a.gated", {}) != "1":
                await trio.sleep(0.02)

            project.manifest("apps/a", fixture_manifest("a", "--gates", "--tools", "1"))
            project.manifest("apps/b", fixture_manifest("b", "--tools", "1"))
            diffs = []

            async def reload() -> None:
                diffs.append(await Reloader(config, env, registry.mailbox).reload("a test"))

            nursery.start_soon(reload)
            # The reload has planned and is stopping `a`, whose call may finish first.
            while "is stopping" not in await calls.call("a.echo", {"text": "x"}):
                await trio.sleep(0.02)
            started = []

            async def start_b() -> None:
                start = await ask(registry.mailbox, lambda r: ToApp("b", Start(r)), GUARD_S)
                started.append(start)

            nursery.start_soon(start_b)
            gate.write_text("open")
            b = await wait_for(registry, "b", AppState.RUNNING)
            assert b.counts["tools"] == 9  # the new definition's process
            assert diffs[0].still_stopped == ("b",)
            assert started[0].pid == (await status(registry, "b")).pid
            await ask(registry.mailbox, StopAll, GUARD_S)
            nursery.cancel_scope.cancel()
