"""A reload's edges: what an operator asks of an app while a reload is replacing its actor
(in process: the registry, the reloader and the fixture app's real processes)."""

from __future__ import annotations

import json
from pathlib import Path

import httpx2
import trio

from actors.messages import ApplyReload, Start, Stop, StopAll, ToApp
from actors.metrics import Metrics
from actors.registry import Registry
from actors.runtime import Mailbox, ask
from actors.tls import client_tls
from actors.views.hub import ViewHub
from supervisor.model.discovery import discover
from supervisor.model.lifecycle import AppState
from supervisor.process.reloader import Reloader
from tests.support.helpers import Project
from tests.support.running import GUARD_S, bridge, environment, fixture_manifest, status, wait_for
from web.asgi import FrontDoor
from web.mcpdoor.aggregate import AggregateEndpoint
from web.routes import create_app
from web.security import AccessPolicy

POLICY = AccessPolicy(
    require_auth=False,
    token=None,
    hosts=frozenset({"127.0.0.1"}),
    origins=frozenset(),
    sandbox_origin=None,
)


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


async def test_an_approval_given_before_the_view_side_hears_of_a_reload_runs_nothing(
    project: Project,
) -> None:
    """A view of `fx` holds a call for the person's approval; a reload restarts `fx` with a
    changed definition, and its new process is Running before the view side has heard of the
    reload (here it never hears: the reload is applied without the `Reloaded` fact that ends
    the view). The person's approval then runs nothing on the new process: the view was opened
    for the app's old actor, and the call is refused."""
    env = environment()
    project.config('[apps]\ndiscovery_paths = ["./apps"]\n')
    project.manifest("apps/fx", fixture_manifest("fx"))
    config = project.load(env)
    registry = Registry(discover(config, env).apps, environ=env)
    with trio.fail_after(3 * GUARD_S):
        async with trio.open_nursery() as nursery:
            await nursery.start(registry.run)
            first = await wait_for(registry, "fx", AppState.RUNNING)
            hub = ViewHub(registry.mailbox, approvals={"fx": "always"})
            await nursery.start(hub.run)
            routes = create_app(
                registry.mailbox,
                POLICY,
                None,
                chats=Mailbox(1),
                metrics=Metrics(),
                views=hub.mailbox,
            )
            front_door = FrontDoor(
                POLICY, registry.mailbox, routes, {}, AggregateEndpoint(registry.mailbox)
            )
            transport = httpx2.ASGITransport(app=front_door)
            async with httpx2.AsyncClient(
                verify=client_tls(), transport=transport, base_url="http://127.0.0.1:1"
            ) as http:
                opened = await http.post("/apps/views", json={"appId": "fx"})
                assert opened.status_code == 201, opened.text
                view = opened.json()["viewId"]
                answers: list[str] = []

                async def call() -> None:
                    message = {
                        "jsonrpc": "2.0",
                        "id": 7,
                        "method": "tools/call",
                        "params": {"name": "pid", "arguments": {}},
                    }
                    answer = await http.post(f"/apps/views/{view}/mcp", json=message)
                    answers.append(answer.text)

                nursery.start_soon(call)
                while not hub.state.held:
                    await trio.sleep(0.01)
                [approval] = hub.state.held

                project.manifest("apps/fx", fixture_manifest("fx", "--tools", "1"))
                discovery = discover(
                    project.load(env), env, {"fx": project.root / "apps/fx/openclaw.mcpapp.json"}
                )
                diff = await ask(registry.mailbox, lambda r: ApplyReload(discovery, r), GUARD_S)
                assert diff.restarted == ("fx",)
                second = await wait_for(registry, "fx", AppState.RUNNING)
                assert second.pid != first.pid

                decided = await http.post(
                    f"/apps/views/{view}/approvals/{approval}", json={"decision": "once"}
                )
                assert decided.status_code == 200, decided.text
                while not answers:
                    await trio.sleep(0.01)
            [event] = [line for line in answers[0].splitlines() if line.startswith("data: {")][-1:]
            outcome = json.loads(event[len("data: ") :])
            assert "result" not in outcome, outcome
            assert "was changed by a reload" in outcome["error"]["message"]
            await ask(registry.mailbox, StopAll, GUARD_S)
            nursery.cancel_scope.cancel()
