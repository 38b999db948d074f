"""The reload's decisions as pure values: which apps start, stop, restart, stay, are refused,
and which settings need a restart."""

from __future__ import annotations

import json

import attrs

from supervisor.model.discovery import discover
from supervisor.model.lifecycle import AppState
from supervisor.model.reload import RunningApp, needs_restart, plan_reload
from tests.support.helpers import Project, stdio


def running_now(project: Project) -> dict[str, RunningApp]:
    return {
        app.id: RunningApp(app.definition, app.source)
        for app in project.discover().apps
        if app.definition is not None and app.id is not None
    }


def test_each_kind_of_change(project: Project) -> None:
    project.config('[apps]\ndiscovery_paths = ["./apps"]\n')
    for app_id in ("keep", "change", "gone", "off"):
        project.manifest(f"apps/{app_id}", stdio(app_id))
    now = running_now(project)

    (project.root / "apps" / "gone" / "openclaw.mcpapp.json").unlink()
    project.manifest("apps/change", stdio("change", arguments=["-v"]))
    project.manifest("apps/new", stdio("new"))
    project.config('[apps]\ndiscovery_paths = ["./apps"]\ndeny = ["off"]\n')
    plan = plan_reload(now, project.discover())
    assert [a.id for a in plan.start] == ["new"]
    assert sorted(plan.stop) == ["gone", "off"]
    assert [a.id for a in plan.restart] == ["change"]
    assert plan.unchanged == ("keep",)
    assert plan.refused == ()


def test_a_stopped_app_takes_its_new_definition_and_stays_stopped(project: Project) -> None:
    project.config('[apps]\ndiscovery_paths = ["./apps"]\n')
    for app_id in ("held", "same", "running"):
        project.manifest(f"apps/{app_id}", stdio(app_id))
    now = running_now(project)
    now = {app_id: attrs.evolve(app, stopped=app_id != "running") for app_id, app in now.items()}
    project.manifest("apps/held", stdio("held", arguments=["-v"]))
    project.manifest("apps/running", stdio("running", arguments=["-v"]))
    plan = plan_reload(now, project.discover())
    assert [a.id for a in plan.redefine] == ["held"]
    assert [a.id for a in plan.restart] == ["running"]
    assert plan.unchanged == ("same",)
    assert (plan.start, plan.stop) == ((), ())


def test_an_entry_or_a_supervision_key_is_part_of_the_definition(project: Project) -> None:
    project.config('[apps]\ndiscovery_paths = ["./apps"]\n')
    project.manifest("apps/a", stdio("a"))
    project.manifest("apps/b", stdio("b"))
    now = running_now(project)
    project.config(
        '[apps]\ndiscovery_paths = ["./apps"]\n[apps.entries.a]\nenvironment = {X = "1"}\n'
        "[supervision]\nping_interval_s = 7\n"
    )
    plan = plan_reload(now, project.discover())
    assert sorted(a.id for a in plan.restart) == ["a", "b"]


def test_an_invalid_manifest_keeps_its_running_app(project: Project) -> None:
    project.config('[apps]\ndiscovery_paths = ["./apps"]\n')
    project.manifest("apps/a", stdio("a"))
    project.manifest("apps/b", stdio("b"))
    now = running_now(project)
    project.manifest("apps/a", "{not json")  # no id left to match: matched by its file
    project.manifest("apps/b", stdio("b", startupTimeoutSeconds=0))  # matched by its id
    project.manifest("apps/c", stdio("c", transport="carrier-pigeon"))  # new and invalid
    plan = plan_reload(now, project.discover())
    assert plan.stop == ()
    assert plan.start == ()
    assert sorted(plan.kept) == ["a", "b"]
    refused = {r.app: r.problems for r in plan.refused}
    manifest_a = str(project.root / "apps" / "a" / "openclaw.mcpapp.json")
    assert sorted(refused) == sorted(["b", "c", manifest_a])
    assert all(refused.values())


def test_a_running_app_keeps_its_id_against_a_newcomer_whatever_the_scan_order(
    project: Project,
) -> None:
    """Told which apps run, discovery leaves a running app's id with the manifest it came from
    (also while that file is half-saved) and makes the newcomer the duplicate; without that
    (a start, `validate`) the first in scan order has it. A running app's manifest that now
    names another id no longer holds the old one."""
    project.config('[apps]\ndiscovery_paths = ["./apps"]\n[apps.inline.c]\ncommand = "python3"\n')
    own = project.manifest("apps/m", stdio("m"))
    newcomer = project.manifest("apps/a", stdio("m", arguments=["-v"]))
    inline_twin = project.manifest("apps/b", stdio("c"))  # scanned before the inline app
    config = project.load()
    held = {"m": own, "c": project.config_path}

    fresh = {str(a.source): a for a in discover(config, {}).apps if a.id != "c"}
    assert fresh[str(own)].duplicate_of == newcomer
    assert fresh[str(newcomer)].duplicate_of is None

    reloaded = discover(config, {}, held).apps
    by_source = {(str(a.source), a.id): a for a in reloaded}
    assert by_source[str(own), "m"].state is AppState.VALIDATED
    assert by_source[str(newcomer), "m"].duplicate_of == own
    assert "whose app is running" in by_source[str(newcomer), "m"].errors[0].message
    assert by_source[str(project.config_path), "c"].state is AppState.VALIDATED
    assert by_source[str(inline_twin), "c"].duplicate_of == project.config_path
    running = {
        app_id: RunningApp(app.definition, app.source)
        for (_, app_id), app in by_source.items()
        if app.definition is not None and app_id is not None
    }
    plan = plan_reload(running, discover(config, {}, held))
    assert plan.unchanged == ("m", "c")
    assert [r.app for r in plan.refused] == [str(newcomer), str(inline_twin)]

    own.write_text("{half saved")  # still holds the id: the app runs on, the newcomer waits
    plan = plan_reload(running, discover(config, {}, held))
    assert plan.kept == ("m",)
    assert plan.start == plan.restart == ()
    assert sorted(r.app for r in plan.refused) == sorted(
        [str(own), str(newcomer), str(inline_twin)]
    )

    own.write_text(json.dumps(stdio("n")))  # renamed: `m` is now the newcomer's
    plan = plan_reload(running, discover(config, {}, held))
    assert [a.source for a in plan.restart] == [newcomer]
    assert [a.id for a in plan.start] == ["n"]


def test_settings_only_a_restart_applies(project: Project) -> None:
    project.config("[server]\nport = 9000\n")
    before = project.load()
    project.config(
        '[server]\nport = 9001\n[state]\ndir = "./s"\n[apps]\nwatch = true\ndeny = ["x"]\n'
        "[supervision]\nintensity = 2\n"
    )
    after = project.load()
    assert sorted(needs_restart(before, after)) == [
        "apps.watch",
        "sandbox.origin",
        "sandbox.port",
        "server.port",
        "state.dir",
    ]
    assert needs_restart(before, attrs.evolve(before)) == ()


async def test_the_registry_tells_its_watchers_how_a_reload_went(project: Project) -> None:
    """In process: a watcher of the registry (the live page's source) hears `Reloaded` with the
    same diff the reload answered, and the facts of the app it started."""
    import trio

    from actors.messages import Reloaded, StateChanged, StopAll, Watch
    from actors.registry import Registry
    from actors.runtime import ask
    from supervisor.model.discovery import discover
    from supervisor.process.reloader import Reloader
    from tests.support.running import GUARD_S, environment, fixture_manifest

    env = environment()
    project.manifest("apps/one", fixture_manifest("one"))
    project.config('[apps]\ndiscovery_paths = ["./apps"]\n[supervision]\nstop_grace_s = 1\n')
    config = project.load(env)
    registry = Registry(discover(config, env).apps, environ=env)
    facts_in, facts = trio.open_memory_channel[object](1000)
    with trio.fail_after(GUARD_S):
        async with trio.open_nursery() as nursery:
            await nursery.start(registry.run)
            registry.mailbox.tell(Watch(facts_in))
            project.manifest("apps/two", fixture_manifest("two"))
            diff = await Reloader(config, env, registry.mailbox).reload("a test")
            assert diff.started == ("two",)
            assert diff.unchanged == ("one",)
            heard = []
            async for fact in facts:
                heard.append(fact)
                if Reloaded(diff, approvals=()) in heard and any(
                    isinstance(f, StateChanged) and f.status.id == "two" for f in heard
                ):
                    break
            await ask(registry.mailbox, StopAll)
            nursery.cancel_scope.cancel()
