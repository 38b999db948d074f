"""Who has an id and who has a public name, as the files say and not as history says: a reload
that brings a duplicate id keeps the running app, a tool name shared by two apps goes to the
app discovered first (the same live and after a restart), and each app is in one list of the
reload's answer, also when SIGTERM cuts the reload short. `mcpapps run` in a subprocess, real
apps, files edited on disk, real reloads."""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import httpx2
import trio

from actors.tls import client_tls
from tests.support.frontdoor import wait_running
from tests.support.helpers import Project, run_mcpapps
from tests.support.running import FAST, GUARD_S, Supervisor, fixture_manifest, logged_supervisor


def write_config(project: Project) -> None:
    supervision = "\n".join(f"{k} = {v}" for k, v in FAST.items())
    project.config(f'[apps]\ndiscovery_paths = ["./apps"]\n[supervision]\n{supervision}\n')


def add_app(project: Project, folder: str, app_id: str, *options: str, **fields: Any) -> Path:
    # The `pid` tool tells which app answered: it says the pid the supervisor shows.
    manifest = fixture_manifest(app_id, *options, **fields)
    return project.manifest(f"apps/{folder}", manifest)


async def get(supervisor: Supervisor, path: str) -> Any:
    async with httpx2.AsyncClient(verify=client_tls(), timeout=GUARD_S) as http:
        return (await http.get(supervisor.url(path))).json()


async def reload(supervisor: Supervisor) -> dict[str, Any]:
    async with httpx2.AsyncClient(verify=client_tls(), timeout=GUARD_S) as http:
        response = await http.post(supervisor.url("/admin/reload"))
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def lists(body: dict[str, Any]) -> dict[str, list[str]]:
    keys = ("started", "stopped", "restarted", "unchanged")
    return {
        **{k: sorted(body[k]) for k in keys},
        "refused": sorted(r["app"] for r in body["refused"]),
    }


async def owner_of(supervisor: Supervisor, public_name: str) -> tuple[str, str]:
    """The app that `public_name` reaches on /admin/call, and the pid its `pid` tool says."""
    async with httpx2.AsyncClient(verify=client_tls(), timeout=GUARD_S) as http:
        response = await http.post(
            supervisor.url("/admin/call"), json={"name": public_name, "arguments": {}}
        )
    assert response.status_code == 200, response.text
    body = response.json()
    return body["app"], body["text"]


async def test_a_newcomer_with_a_running_apps_id_is_the_refused_duplicate(
    project: Project,
) -> None:
    """A manifest added in a folder scanned before the running app's, with the same id, is
    refused by its path, and the running app keeps its process and its definition; when the
    running app's own manifest changes too, it is restarted on that one. `validate` (like a
    fresh start) judges by scan order alone, and says so."""
    own = add_app(project, "alpha", "alpha")
    write_config(project)
    async with logged_supervisor(project) as supervisor:
        await wait_running(supervisor, "alpha")
        pid = (await get(supervisor, "/admin/apps/alpha"))["pid"]

        newcomer = add_app(project, "aaa", "alpha", "--stderr-lines", "3")
        body = await reload(supervisor)
        assert lists(body) == {
            "started": [],
            "stopped": [],
            "restarted": [],
            "unchanged": ["alpha"],
            "refused": [str(newcomer)],
        }
        [problem] = body["refused"][0]["problems"]
        assert problem.startswith(f"{newcomer}: duplicate id 'alpha', already defined by ")
        assert "apps/alpha/openclaw.mcpapp.json, whose app is running" in problem
        alpha = await get(supervisor, "/admin/apps/alpha")
        assert (alpha["pid"], alpha["source"], alpha["state"]) == (pid, str(own), "Running")
        listed = {a["id"]: a for a in (await get(supervisor, "/admin/apps"))["apps"]}
        assert listed[str(newcomer)]["state"] == "Discovered"
        assert listed["alpha"]["source"] == str(own)

        # The running app's own manifest changes: it is restarted on it, not on the newcomer's.
        own.write_text(json.dumps(fixture_manifest("alpha", "--stderr-lines", "1")))
        body = await reload(supervisor)
        assert lists(body)["restarted"] == ["alpha"]
        assert lists(body)["refused"] == [str(newcomer)]
        await wait_running(supervisor, "alpha")
        alpha = await get(supervisor, "/admin/apps/alpha")
        assert alpha["source"] == str(own)
        assert alpha["stderr"] == ["fixture stderr line 1"]

    # Without a running app to hold the id, the first in scan order has it.
    validated = await trio.to_thread.run_sync(lambda: run_mcpapps("validate", cwd=project.root))
    assert validated.returncode == 1
    assert f"{own.relative_to(project.root)}: duplicate id 'alpha'" in validated.stdout


async def test_the_app_discovered_first_owns_a_shared_tool_name_live_and_after_a_restart(
    project: Project,
) -> None:
    """`aardvark`, added live with alpha's prefix and discovered before it, takes `a.pid`
    from the running alpha at once (alpha's warning says why), as it has it after a restart
    with the same files; and an app restarted by a reload keeps a name it had over an app
    discovered after it."""
    add_app(project, "alpha", "alpha", toolNamePrefix="a.")
    add_app(project, "zebra", "zebra", toolNamePrefix="a.")
    write_config(project)
    async with logged_supervisor(project) as supervisor:
        await wait_running(supervisor, "alpha")
        await wait_running(supervisor, "zebra")
        alpha_pid = str((await get(supervisor, "/admin/apps/alpha"))["pid"])
        assert await owner_of(supervisor, "a.pid") == ("alpha", alpha_pid)

        # alpha restarted by a reload starts after zebra, and keeps the name all the same.
        add_app(project, "alpha", "alpha", "--stderr-lines", "1", toolNamePrefix="a.")
        assert (await reload(supervisor))["restarted"] == ["alpha"]
        await wait_running(supervisor, "alpha")
        alpha_pid = str((await get(supervisor, "/admin/apps/alpha"))["pid"])
        assert await owner_of(supervisor, "a.pid") == ("alpha", alpha_pid)

        add_app(project, "aardvark", "aardvark", toolNamePrefix="a.")
        assert (await reload(supervisor))["started"] == ["aardvark"]
        await wait_running(supervisor, "aardvark")
        aardvark_pid = str((await get(supervisor, "/admin/apps/aardvark"))["pid"])
        with trio.fail_after(GUARD_S):
            while (await owner_of(supervisor, "a.pid"))[0] != "aardvark":
                await trio.sleep(0.05)
        assert await owner_of(supervisor, "a.pid") == ("aardvark", aardvark_pid)
        await supervisor.wait_for_log(
            "tool 'a.pid' of app 'alpha' is not offered to the model: app 'aardvark' already"
            " offers a tool of that name and keeps it (the app discovered first does)"
        )

    async with logged_supervisor(project) as supervisor:
        for app_id in ("aardvark", "alpha", "zebra"):
            await wait_running(supervisor, app_id)
        aardvark_pid = str((await get(supervisor, "/admin/apps/aardvark"))["pid"])
        assert await owner_of(supervisor, "a.pid") == ("aardvark", aardvark_pid)


async def test_a_reload_cut_short_by_sigterm_lists_the_app_it_stopped(project: Project) -> None:
    """SIGTERM while a reload stops an app to restart it: the app is not started again, and the
    reload's answer lists it as stopped; every app is in exactly one list."""
    slow = add_app(project, "slow", "slow", "--stubborn")
    add_app(project, "calm", "calm")
    write_config(project)
    answers: list[dict[str, Any]] = []
    async with logged_supervisor(project) as supervisor:
        await wait_running(supervisor, "slow")
        await wait_running(supervisor, "calm")
        slower = fixture_manifest("slow", "--stubborn", "--stderr-lines", "1")
        slow.write_text(json.dumps(slower))

        async def ask_reload() -> None:
            answers.append(await reload(supervisor))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(ask_reload)
            # Discovery is done and the registry has the reload: it is stopping `slow`, which
            # takes seconds (the app stays after its stdin closes, and ignores SIGTERM).
            with trio.fail_after(GUARD_S):
                while supervisor.log.count("app slow: found in") < 2:
                    await trio.sleep(0.02)
            assert supervisor.process is not None
            supervisor.process.send_signal(signal.SIGTERM)
        assert await supervisor.wait() == 0
        await supervisor.wait_for_log("app slow: not started by the reload: shutdown has begun")
    [body] = answers
    assert lists(body) == {
        "started": [],
        "stopped": ["slow"],
        "restarted": [],
        "unchanged": ["calm"],
        "refused": [],
    }
