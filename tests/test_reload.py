"""Reload as an operator uses it: `mcpapps run` in a subprocess, real apps, real clients, the
config and the manifests edited on disk, then POST /admin/reload, SIGHUP, `mcpapps reload`, or
the file watcher."""

from __future__ import annotations

import json
import re
import signal
from pathlib import Path
from typing import Any

import httpx2
import trio

from actors.tls import client_tls
from tests.support.frontdoor import only_text, wait_running
from tests.support.helpers import Project, run_mcpapps
from tests.support.officialclients import ts_client
from tests.support.running import (
    FAST,
    GUARD_S,
    Supervisor,
    alive,
    fixture_manifest,
    logged_supervisor,
    notify_socket,
    wait_gone,
)


def write_config(project: Project, extra: str = "", apps: str = "") -> None:
    supervision = "\n".join(f"{k} = {v}" for k, v in FAST.items())
    project.config(
        f'[apps]\ndiscovery_paths = ["./apps"]\n{apps}\n[supervision]\n{supervision}\n{extra}'
    )


def add_app(project: Project, app_id: str, *options: str) -> Path:
    return project.manifest(f"apps/{app_id}", fixture_manifest(app_id, *options))


async def admin(supervisor: Supervisor, method: str, path: str) -> httpx2.Response:
    async with httpx2.AsyncClient(verify=client_tls(), timeout=GUARD_S) as http:
        return await http.request(method, supervisor.url(path))


async def apps(supervisor: Supervisor) -> dict[str, dict[str, Any]]:
    response = await admin(supervisor, "GET", "/admin/apps")
    return {app["id"]: app for app in response.json()["apps"]}


async def reload(supervisor: Supervisor) -> tuple[int, dict[str, Any]]:
    response = await admin(supervisor, "POST", "/admin/reload")
    return response.status_code, response.json()


def diff_of(body: dict[str, Any]) -> dict[str, Any]:
    """The diff's app lists, order-free."""
    keys = ("started", "stopped", "restarted", "unchanged")
    return {
        **{k: sorted(body[k]) for k in keys},
        "refused": sorted(r["app"] for r in body["refused"]),
    }


async def test_a_reload_applies_only_the_difference(project: Project) -> None:
    """One reload adds, removes, changes and leaves alone apps at once. The untouched app keeps
    its process, a call in flight on it finishes, and a client's MCP session on
    /apps/mcp/<id> goes on without a new initialize; the changed app runs its new definition;
    the removed app's process is gone; /mcp clients hear tools/list_changed; the diff is
    exact."""
    add_app(project, "keep")
    add_app(project, "change")
    gone_manifest = add_app(project, "gone")
    write_config(project)
    async with (
        logged_supervisor(project) as supervisor,
        ts_client(supervisor.url("/apps/mcp/keep")) as keep_client,
        ts_client(supervisor.url("/mcp")) as mcp_client,
    ):
        assert await mcp_client.get_stream() == 200
        session = keep_client.ready["sessionId"]
        before = await apps(supervisor)
        keep_pid, change_pid, gone_pid = (before[a]["pid"] for a in ("keep", "change", "gone"))

        # The edit: `gone` removed, `change` runs with another name, `new` appears.
        gone_manifest.unlink()
        gone_manifest.parent.rmdir()
        add_app(project, "change", "--stderr-lines", "1")
        add_app(project, "new")

        in_flight: dict[str, Any] = {}
        seen = len(mcp_client.notifications)

        async def slow_call() -> None:
            in_flight.update(
                await keep_client.request(
                    "call_tool", name="sleep", arguments={"seconds": 1.5}, timeout=GUARD_S
                )
            )

        async with trio.open_nursery() as nursery:
            nursery.start_soon(slow_call)
            await supervisor.wait_for_log("app keep stderr: fixture: sleep started")
            status, body = await reload(supervisor)
        assert status == 200, body
        assert diff_of(body) == {
            "started": ["new"],
            "stopped": ["gone"],
            "restarted": ["change"],
            "unchanged": ["keep"],
            "refused": [],
        }
        assert body["needsRestart"] == []
        assert in_flight["ok"] is True, in_flight
        assert only_text(in_flight["result"]) == "slept"

        # The untouched app: same process, same client session, no new initialize.
        assert (await apps(supervisor))["keep"]["pid"] == keep_pid
        echoed = await keep_client.result("call_tool", name="echo", arguments={"text": "still"})
        assert only_text(echoed) == "still"
        assert (await keep_client.result("session"))["sessionId"] == session
        assert supervisor.log.count("app keep: Loaded → Running") == 1

        # The changed app runs its new definition, on a new process; the removed one is gone.
        await wait_running(supervisor, "change")
        await wait_running(supervisor, "new")
        after = await apps(supervisor)
        assert after["change"]["pid"] != change_pid
        assert "gone" not in after
        await wait_gone(gone_pid)
        assert not alive(change_pid)
        detail = (await admin(supervisor, "GET", "/admin/apps/change")).json()
        assert "fixture stderr line 1" in " ".join(detail["stderr"])
        new = (await admin(supervisor, "GET", "/admin/apps/new")).json()
        assert new["state"] == "Running"

        # /mcp clients hear that the tool table changed; the new app is served at once.
        await mcp_client.wait_for_notification(
            "notifications/tools/list_changed", after=seen, timeout=GUARD_S
        )
        names = {t["name"] for t in (await mcp_client.result("list_tools"))["tools"]}
        assert "new.echo" in names
        assert "gone.echo" not in names
        async with ts_client(supervisor.url("/apps/mcp/new")) as new_client:
            echoed = await new_client.result("call_tool", name="echo", arguments={"text": "hi"})
            assert only_text(echoed) == "hi"
        assert "reloaded: started new; stopped gone; restarted change; unchanged keep" in (
            supervisor.log
        )


async def test_a_broken_config_is_refused_and_nothing_changes(project: Project) -> None:
    add_app(project, "one")
    write_config(project)
    async with logged_supervisor(project) as supervisor:
        pid = (await apps(supervisor))["one"]["pid"]
        add_app(project, "two")  # would start, if the config could be read
        project.config("[apps\nnot toml")
        status, body = await reload(supervisor)
        assert status == 422, body
        assert body["error"]["code"] == "config_refused"
        assert "is not valid TOML" in body["error"]["message"]
        # The config's problems are the error's, not an app's refusal.
        [problem] = body["error"]["problems"]
        assert problem.startswith(f"{project.config_path}: is not valid TOML")
        assert diff_of(body) == {
            "started": [],
            "stopped": [],
            "restarted": [],
            "unchanged": ["one"],
            "refused": [],
        }
        # Logged once, the path once; and no "reloaded:" line, since nothing was reloaded.
        await supervisor.wait_for_log(f"reload refused: the config cannot be loaded: {problem}")
        assert supervisor.log.count(str(project.config_path)) == 1, supervisor.log
        assert "reloaded:" not in supervisor.log
        now = await apps(supervisor)
        assert set(now) == {"one"}
        assert now["one"]["pid"] == pid
        assert now["one"]["state"] == "Running"

        # Fixed, the next reload applies it.
        write_config(project)
        status, body = await reload(supervisor)
        assert status == 200
        assert body["started"] == ["two"]


async def test_a_broken_manifest_is_refused_and_its_app_runs_on(project: Project) -> None:
    """An app whose manifest became invalid keeps running as it was; the diff names it refused
    with the problem; another app changed in the same reload is still restarted."""
    add_app(project, "one")
    other = add_app(project, "two")
    write_config(project)
    async with logged_supervisor(project) as supervisor:
        before = await apps(supervisor)
        (project.root / "apps" / "one" / "openclaw.mcpapp.json").write_text('{"id": "one", ')
        status, body = await reload(supervisor)
        assert status == 200, body
        assert diff_of(body) == {
            "started": [],
            "stopped": [],
            "restarted": [],
            "unchanged": ["two"],  # `one` runs on, but it is in one list only: refused
            "refused": [str(project.root / "apps" / "one" / "openclaw.mcpapp.json")],
        }
        [refusal] = body["refused"]
        assert "line 1" in refusal["problems"][0]
        now = await apps(supervisor)
        assert now["one"]["pid"] == before["one"]["pid"]
        assert now["one"]["state"] == "Running"

        # A manifest with an id but a broken rule: the same. And `two` changes meanwhile.
        manifest = fixture_manifest("one", startupTimeoutSeconds=0)
        (project.root / "apps" / "one" / "openclaw.mcpapp.json").write_text(json.dumps(manifest))
        other.write_text(json.dumps(fixture_manifest("two", "--stderr-lines", "1")))
        status, body = await reload(supervisor)
        assert diff_of(body)["refused"] == ["one"]
        assert diff_of(body)["restarted"] == ["two"]
        assert diff_of(body)["unchanged"] == []
        assert "startupTimeoutSeconds" in body["refused"][0]["problems"][0]
        assert (await apps(supervisor))["one"]["pid"] == before["one"]["pid"]


async def test_sighup_reloads_and_never_exits(project: Project) -> None:
    """SIGHUP reloads and the process lives on; two reloads asked at once run one after the
    other; `mcpapps reload` prints the diff; a new config setting that only a restart
    applies is reported as such."""
    add_app(project, "one")
    write_config(project)
    async with logged_supervisor(project) as supervisor:
        assert supervisor.process is not None
        add_app(project, "two")
        supervisor.process.send_signal(signal.SIGHUP)
        await supervisor.wait_for_log("reloaded: started two")
        assert supervisor.process.returncode is None
        await wait_running(supervisor, "two")

        # Two at once: each is answered, the second after the first has ended.
        answers: list[dict[str, Any]] = []

        async def one() -> None:
            answers.append((await reload(supervisor))[1])

        add_app(project, "three")
        async with trio.open_nursery() as nursery:
            nursery.start_soon(one)
            nursery.start_soon(one)
        assert sorted(a["started"] for a in answers) == [[], ["three"]]
        steps = re.findall(r"mcpapps\.supervisor: (reloading|reloaded)", supervisor.log)
        assert steps[-4:] == [
            "reloading",
            "reloaded",
            "reloading",
            "reloaded",
        ], steps

        write_config(project, extra="[state]\ndir = './elsewhere'\n")
        done = await trio.to_thread.run_sync(
            lambda: run_mcpapps("reload", "--url", supervisor.url(), cwd=project.root)
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.splitlines() == [
            "started: -",
            "stopped: -",
            "restarted: -",
            "unchanged: one, three, two",
            "needs a restart: state.dir changed",
        ]
        assert await supervisor.stop() == 0


async def test_a_reload_during_shutdown_is_refused(project: Project) -> None:
    """Once SIGTERM has begun the shutdown, a reload is refused (503) and SIGHUP does nothing
    but say so; the process still exits 0."""
    add_app(project, "slow", "--stubborn")
    write_config(project, extra="", apps="")
    async with logged_supervisor(project) as supervisor:
        assert supervisor.process is not None
        supervisor.process.send_signal(signal.SIGTERM)
        await supervisor.wait_for_log("received SIGTERM: stopping")
        supervisor.process.send_signal(signal.SIGHUP)
        await supervisor.wait_for_log("received SIGHUP while shutting down: no reload")
        assert await supervisor.wait() == 0


async def test_sd_notify_reloading_then_ready(project: Project, tmp_path: Path) -> None:
    """Under systemd (Type=notify-reload): RELOADING=1 with MONOTONIC_USEC, then READY=1."""
    add_app(project, "one")
    write_config(project)
    async with notify_socket(tmp_path) as (address, received), trio.open_nursery() as nursery:
        supervisor = Supervisor(project, extra_env={"NOTIFY_SOCKET": address})
        await supervisor.start(nursery)
        await supervisor.wait_for_log("ready: 1 running")
        assert supervisor.process is not None
        supervisor.process.send_signal(signal.SIGHUP)
        await supervisor.wait_for_log("reloaded: ")
        with trio.fail_after(GUARD_S):
            while received[-1:] != ["READY=1"]:
                await trio.sleep(0.02)
        assert await supervisor.stop() == 0
    reloading = [i for i, m in enumerate(received) if m.startswith("RELOADING=1\n")]
    assert len(reloading) == 1, received
    usec = received[reloading[0]].split("\n")[1]
    assert usec.startswith("MONOTONIC_USEC=")
    assert int(usec.removeprefix("MONOTONIC_USEC=")) > 0
    assert received[reloading[0] + 1] == "READY=1"
    assert received.index("STOPPING=1") > reloading[0] + 1


async def test_watch_reloads_once_per_edit(project: Project) -> None:
    """`[apps] watch = true`: saving a manifest triggers one reload, with the same diff."""
    add_app(project, "one")
    write_config(project, apps="watch = true\n")
    async with logged_supervisor(project) as supervisor:
        await supervisor.wait_for_log("watching ")
        pid = (await apps(supervisor))["one"]["pid"]
        path = project.root / "apps" / "one" / "openclaw.mcpapp.json"
        # An editor's save: a temporary file renamed over the manifest, then touched again, a
        # moment apart each.
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(fixture_manifest("one", "--stderr-lines", "1")))
        await trio.sleep(0.1)
        tmp.rename(path)
        await trio.sleep(0.1)
        path.touch()
        await supervisor.wait_for_log("reloaded: ")
        assert "restarted one" in supervisor.log
        await wait_running(supervisor, "one")
        assert (await apps(supervisor))["one"]["pid"] != pid
        await trio.sleep(2.5)  # longer than the debounce: a second reload would show by now
        assert supervisor.log.count("reloading (") == 1, supervisor.log


async def test_an_app_that_gave_up_starts_again_when_its_definition_changes(
    project: Project,
) -> None:
    add_app(project, "broken", "--crash-at-start")
    add_app(project, "fine")
    write_config(project, apps="[apps.entries.broken]\nintensity = 1\n")
    async with logged_supervisor(project) as supervisor:
        with trio.fail_after(GUARD_S):
            while not (await apps(supervisor))["broken"]["gaveUp"]:
                await trio.sleep(0.05)
        # Reloading an unchanged definition leaves it as it is: given up.
        _, body = await reload(supervisor)
        assert sorted(body["unchanged"]) == ["broken", "fine"]
        assert (await apps(supervisor))["broken"]["gaveUp"] is True
        # The cause fixed: the reload starts it again.
        add_app(project, "broken")
        _, body = await reload(supervisor)
        assert body["restarted"] == ["broken"]
        await wait_running(supervisor, "broken")
        assert (await apps(supervisor))["broken"]["gaveUp"] is False


async def test_an_app_the_operator_stopped_stays_stopped_across_reloads(project: Project) -> None:
    """A reload takes a stopped app's new definition but does not start it; the next start
    runs the new one. An app removed and added again is a new app: it starts."""
    held_manifest = add_app(project, "held")
    add_app(project, "other")
    write_config(project)
    async with logged_supervisor(project) as supervisor:
        pid = (await apps(supervisor))["held"]["pid"]
        stopped = await admin(supervisor, "POST", "/admin/apps/held/stop")
        assert stopped.json()["app"]["state"] == "Stopped"
        await wait_gone(pid)

        _, body = await reload(supervisor)
        assert sorted(body["unchanged"]) == ["held", "other"]
        assert body["stillStopped"] == []

        add_app(project, "held", "--stderr-lines", "1")
        done = await trio.to_thread.run_sync(
            lambda: run_mcpapps("reload", "--url", supervisor.url(), cwd=project.root)
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.splitlines() == [
            "started: -",
            "stopped: -",
            "restarted: -",
            "unchanged: other",
            "still stopped: held",
        ]
        assert "reloaded: started -; stopped -; restarted -; unchanged other; refused -;" in (
            supervisor.log
        )
        assert "; still stopped held" in supervisor.log
        held = (await apps(supervisor))["held"]
        assert (held["state"], held["pid"]) == ("Stopped", None)
        await trio.sleep(0.5)  # a start the reload had asked for would show by now
        assert (await apps(supervisor))["held"]["state"] == "Stopped"

        # The operator's start runs the new definition.
        started = await admin(supervisor, "POST", "/admin/apps/held/start")
        assert started.json()["app"]["state"] in ("Loaded", "Running")
        await wait_running(supervisor, "held")
        detail = (await admin(supervisor, "GET", "/admin/apps/held")).json()
        assert detail["stderr"] == ["fixture stderr line 1"]

        # Removed, then added again: a new app, started like any new one.
        await admin(supervisor, "POST", "/admin/apps/held/stop")
        held_manifest.unlink()
        _, body = await reload(supervisor)
        assert body["stopped"] == ["held"]
        add_app(project, "held")
        _, body = await reload(supervisor)
        assert body["started"] == ["held"]
        await wait_running(supervisor, "held")


async def test_the_watcher_does_not_start_a_stopped_app(project: Project) -> None:
    """Saving the manifest of an app the operator stopped: the watcher's reload takes the new
    definition, and the app stays Stopped."""
    add_app(project, "held")
    write_config(project, apps="watch = true\n")
    async with logged_supervisor(project) as supervisor:
        await supervisor.wait_for_log("watching ")
        await admin(supervisor, "POST", "/admin/apps/held/stop")
        add_app(project, "held", "--stderr-lines", "1")
        await supervisor.wait_for_log("reloaded: ")
        held = (await apps(supervisor))["held"]
        assert (held["state"], held["pid"]) == ("Stopped", None)
        assert "still stopped held" in supervisor.log
