"""The admin API and /metrics over real HTTP to a real `mcpapps run` with real apps:
listings, one app's catalog and stderr, start/stop/restart, calls, errors, and the Prometheus
page as Prometheus' own parser reads it."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from typing import Any

import httpx2
import trio
from prometheus_client.parser import text_string_to_metric_families

from tests.support.frontdoor import http
from tests.support.helpers import Project
from tests.support.running import (
    FAST,
    GROCERY,
    GROCERY_TOOLS,
    GUARD_S,
    alive,
    fixture_manifest,
    supervisor_running,
    wait_gone,
)

TOKEN = "admin-s3cret"
LISTED = {
    "id",
    "name",
    "state",
    "enteredAt",
    "transport",
    "source",
    "url",
    "pid",
    "protocolVersion",
    "counts",
    "hasUi",
    "restarts",
    "nextRetryAt",
    "gaveUp",
    "lastError",
    "previousError",
    "disabledReason",
    "errors",
    "inFlight",
    "auth",
    "signInUrl",
    "onboardingSkill",
}


def write(
    project: Project,
    apps: Sequence[tuple[str, tuple[str, ...]]],
    *,
    grocery: bool = False,
    server: str = "",
    extra: str = "",
) -> None:
    """A project with the fixture apps given (and the bundled grocery app if asked)."""
    if grocery:
        shutil.copytree(GROCERY, project.root / "apps" / "grocery-inventory")
    for app_id, options in apps:
        project.manifest(f"apps/{app_id}", fixture_manifest(app_id, *options))
    supervision = "\n".join(f"{k} = {v}" for k, v in FAST.items())
    project.config(
        f'[server]\n{server}\n[apps]\ndiscovery_paths = ["./apps"]\n{extra}\n'
        f"[supervision]\n{supervision}\n"
    )


async def app_status(client: httpx2.AsyncClient, app_id: str) -> dict[str, Any]:
    response = await client.get(f"/admin/apps/{app_id}")
    assert response.status_code == 200, response.text
    return response.json()


async def wait_state(client: httpx2.AsyncClient, app_id: str, state: str) -> dict[str, Any]:
    with trio.fail_after(GUARD_S):
        while (status := await app_status(client, app_id))["state"] != state:
            await trio.sleep(0.02)
    return status


async def post_call(client: httpx2.AsyncClient, body: Any) -> httpx2.Response:
    return await client.post("/admin/call", json=body)


def samples(page: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """Every sample of a Prometheus text page, by name and labels."""
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(page)
        for sample in family.samples
    }


def labels(**pairs: str) -> frozenset[tuple[str, str]]:
    return frozenset(pairs.items())


# ---- listing and one app ---------------------------------------------------------------------


async def test_apps_lists_every_app_with_camel_case_fields(project: Project) -> None:
    write(
        project,
        [("plain", ()), ("off", ())],
        grocery=True,
        extra="[apps.entries.off]\nenabled = false\n",
    )
    project.manifest("apps/zz-bad", {"id": "bad", "transport": "http", "url": "nope"})
    async with supervisor_running(project) as supervisor, http(supervisor) as client:
        response = await client.get("/admin/apps")
        assert response.status_code == 200
        assert response.headers["content-type"] == "application/json"
        apps = {app["id"]: app for app in response.json()["apps"]}
        assert set(apps) == {"grocery-inventory", "plain", "off", "bad"}
        for app in apps.values():
            assert set(app) == LISTED, app["id"]  # no stderr in a listing

        grocery = apps["grocery-inventory"]
        assert grocery["state"] == "Running"
        assert grocery["name"] == "Grocery Inventory Dashboard"
        assert grocery["transport"] == "stdio"
        assert grocery["hasUi"] is True
        assert alive(grocery["pid"])
        assert grocery["counts"] == {
            "tools": len(GROCERY_TOOLS),
            "resources": 2,  # the store dashboard and the inventory sheet
            "resourceTemplates": 2,
            "prompts": 3,
        }
        assert grocery["protocolVersion"]
        assert {"Validated", "Loaded", "Running"} <= set(grocery["enteredAt"])
        assert grocery["source"].endswith("grocery-inventory/openclaw.mcpapp.json")
        assert (grocery["restarts"], grocery["gaveUp"], grocery["inFlight"]) == (0, False, 0)
        assert grocery["lastError"] is None

        assert apps["off"]["state"] == "Disabled"
        assert apps["off"]["disabledReason"] == "disabled in config entries"
        assert apps["off"]["pid"] is None

        assert apps["bad"]["state"] == "Discovered"
        assert apps["bad"]["errors"] == [apps["bad"]["lastError"]]
        assert "'url'" in apps["bad"]["lastError"]


async def test_one_app_has_its_catalog_and_stderr_tail(project: Project) -> None:
    write(
        project,
        [("chatty", ("--stderr-lines", "3")), ("off", ())],
        grocery=True,
        extra="[apps.entries.off]\nenabled = false\n",
    )
    async with supervisor_running(project) as supervisor, http(supervisor) as client:
        grocery = await app_status(client, "grocery-inventory")
        assert set(grocery) == LISTED | {"stderr", "catalog", "tools"}
        catalog = grocery["catalog"]
        assert {tool["name"] for tool in catalog["tools"]} == GROCERY_TOOLS
        assert [len(catalog[k]) for k in ("resources", "resourceTemplates", "prompts")] == [2, 2, 3]

        chatty = await app_status(client, "chatty")
        assert chatty["stderr"] == [f"fixture stderr line {i}" for i in (1, 2, 3)]

        off = await app_status(client, "off")
        assert off["state"] == "Disabled"
        assert off["stderr"] == []
        assert set(off["catalog"]) == {"tools", "resources", "resourceTemplates", "prompts"}
        assert not any(off["catalog"].values())

        response = await client.get("/admin/apps/nope")
        assert response.status_code == 404
        assert response.json() == {
            "error": {"code": "unknown_app", "message": "unknown app 'nope'"}
        }


# ---- start, stop, restart ----------------------------------------------------------------------


async def test_restart_stop_and_start_change_the_app(project: Project) -> None:
    write(project, [("plain", ())])
    async with supervisor_running(project) as supervisor, http(supervisor) as client:
        before = await app_status(client, "plain")
        old_pid = before["pid"]

        response = await client.post("/admin/apps/plain/restart")
        assert response.status_code == 200
        restarted = response.json()["app"]
        assert "stderr" not in restarted
        assert restarted["state"] in ("Loaded", "Running")
        await wait_gone(old_pid)
        running = await wait_state(client, "plain", "Running")
        assert running["pid"] not in (None, old_pid)
        assert alive(running["pid"])

        response = await client.post("/admin/apps/plain/stop")
        assert response.status_code == 200
        stopped = response.json()["app"]
        assert (stopped["state"], stopped["pid"]) == ("Stopped", None)
        await wait_gone(running["pid"])
        response = await post_call(client, {"name": "plain.echo", "arguments": {"text": "x"}})
        assert response.status_code == 503
        assert response.json()["error"]["code"] == "app_unavailable"

        response = await client.post("/admin/apps/plain/start")
        assert response.status_code == 200
        assert response.json()["app"]["state"] in ("Loaded", "Running")
        started = await wait_state(client, "plain", "Running")
        assert started["pid"] not in (None, running["pid"])
        response = await post_call(client, {"name": "plain.echo", "arguments": {"text": "x"}})
        assert response.json()["text"] == "x"


async def test_commands_on_apps_that_cannot_run_or_do_not_exist(project: Project) -> None:
    write(
        project,
        [("broken", ("--crash-at-start",)), ("off", ())],
        extra="[apps.entries.off]\nenabled = false\n[apps.entries.broken]\nintensity = 0\n",
    )
    ready = "gave up after 0 restarts"
    async with supervisor_running(project, ready=ready) as supervisor, http(supervisor) as client:
        for command in ("start", "stop", "restart"):
            response = await client.post(f"/admin/apps/off/{command}")
            assert response.status_code == 409, command
            assert response.json()["error"] == {
                "code": "app_cannot_run",
                "message": "app 'off' is Disabled: disabled in config entries",
            }
            response = await client.post(f"/admin/apps/nope/{command}")
            assert response.status_code == 404
            assert response.json()["error"]["code"] == "unknown_app"

        assert (await app_status(client, "broken"))["gaveUp"] is True
        # An operator's start clears "gave up" and tries again.
        response = await client.post("/admin/apps/broken/start")
        assert response.status_code == 200
        assert response.json()["app"]["gaveUp"] is False

        response = await client.post("/admin/apps/plain/explode")
        assert response.status_code == 404
        response = await client.get("/admin/apps/off/start")
        assert response.status_code == 405
        assert response.json()["error"]["code"] == "method_not_allowed"


# ---- calls -------------------------------------------------------------------------------------


async def test_call_by_public_name_or_alias(project: Project) -> None:
    write(project, [("plain", ())])
    async with supervisor_running(project) as supervisor, http(supervisor) as client:
        response = await post_call(client, {"name": "plain.echo", "arguments": {"text": "hi"}})
        assert response.status_code == 200
        body = response.json()
        assert body == {
            "name": "plain.echo",
            "app": "plain",
            "text": "hi",
            "isError": False,
            "result": body["result"],
        }
        assert body["result"]["content"] == [{"type": "text", "text": "hi"}]

        response = await post_call(client, {"name": "plain_add", "arguments": {"a": 2, "b": 3}})
        assert response.status_code == 200
        assert (response.json()["name"], response.json()["text"]) == ("plain.add", "5")

        # A tool that reports an error answered all the same: 200, isError.
        response = await post_call(client, {"name": "plain.fail"})
        assert response.status_code == 200
        failed = response.json()
        assert failed["isError"] is True
        assert failed["text"] == "Error: tool 'plain.fail' of app 'plain' failed: fixture failure"

        response = await post_call(client, {"name": "plain.nope", "arguments": {}})
        assert response.status_code == 404
        assert response.json()["error"] == {
            "code": "unknown_tool",
            "message": "unknown tool 'plain.nope'",
        }


async def test_bad_call_bodies_get_precise_messages(project: Project) -> None:
    write(project, [("plain", ())])
    async with supervisor_running(project) as supervisor, http(supervisor) as client:
        bad = {
            '{"name": "plain.echo",': "the body is not valid JSON: Expecting property name"
            " enclosed in double quotes at line 1 column 23",
            "[1]": 'the body must be a JSON object {"name": "<tool>", "arguments": {...}}, got [1]',
            '{"name": "plain.echo", "args": {}}': "unknown key 'args' in the body (the keys"
            " are name, arguments)",
            '{"arguments": {}}': "'name' must be the tool's public name (such as"
            " 'grocery.get_stores'), got nothing",
            '{"name": 7}': "'name' must be the tool's public name (such as"
            " 'grocery.get_stores'), got 7",
            '{"name": "plain.echo", "arguments": "{}"}': "'arguments' must be a JSON object,"
            ' got "{}"',
        }
        headers = {"content-type": "application/json"}
        for body, message in bad.items():
            response = await client.post("/admin/call", content=body, headers=headers)
            assert response.status_code == 400, body
            assert response.json()["error"] == {"code": "bad_request", "message": message}

        response = await client.post("/admin/call", content='{"name": "plain.echo"}')
        assert response.status_code == 415

        # Arguments the tool's schema refuses: the app says so, as a tool error.
        response = await post_call(client, {"name": "plain.add", "arguments": {"a": "x"}})
        assert response.status_code == 200
        assert response.json()["isError"] is True


async def test_a_call_cut_short_by_a_restart_is_503_and_counted(project: Project) -> None:
    write(project, [("plain", ())])
    async with supervisor_running(project) as supervisor, http(supervisor) as client:
        answers: list[httpx2.Response] = []

        async def slow_call() -> None:
            body = {"name": "plain.sleep", "arguments": {"seconds": GUARD_S}}
            answers.append(await post_call(client, body))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(slow_call)
            with trio.fail_after(GUARD_S):
                while (await client.get("/admin/apps")).json()["apps"][0]["inFlight"] != 1:
                    await trio.sleep(0.02)
            page = samples((await client.get("/metrics")).text)
            assert page[("mcpapps_app_in_flight", labels(app="plain"))] == 1
            assert (await client.post("/admin/apps/plain/restart")).status_code == 200

        [answer] = answers
        assert answer.status_code == 503
        assert answer.json()["error"] == {
            "code": "app_unavailable",
            "message": "app 'plain' was restarted during the call",
        }
        page = samples((await client.get("/metrics")).text)
        error = labels(app="plain", method="tools/call", outcome="error")
        assert page[("mcpapps_app_requests_total", error)] == 1


# ---- /metrics ----------------------------------------------------------------------------------


async def test_metrics_count_requests_and_show_states(project: Project) -> None:
    write(
        project,
        [("plain", ()), ("off", ())],
        extra="[apps.entries.off]\nenabled = false\n",
    )
    async with supervisor_running(project) as supervisor, http(supervisor) as client:
        response = await client.get("/metrics")
        assert response.status_code == 200
        assert response.headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8"
        before = samples(response.text)
        assert before[("mcpapps_app_state", labels(app="plain", state="Running"))] == 1
        assert before[("mcpapps_app_state", labels(app="plain", state="Failed"))] == 0
        assert before[("mcpapps_app_state", labels(app="off", state="Disabled"))] == 1
        assert before[("mcpapps_app_restarts_total", labels(app="plain"))] == 0
        assert before[("mcpapps_app_in_flight", labels(app="plain"))] == 0

        await post_call(client, {"name": "plain.echo", "arguments": {"text": "a"}})
        await post_call(client, {"name": "plain.echo", "arguments": {"text": "b"}})
        await post_call(client, {"name": "plain.fail"})

        after = samples((await client.get("/metrics")).text)
        call = {"app": "plain", "method": "tools/call"}
        assert after[("mcpapps_app_requests_total", labels(**call, outcome="ok"))] == 2
        assert after[("mcpapps_app_requests_total", labels(**call, outcome="error"))] == 1
        assert after[("mcpapps_app_request_seconds_count", labels(**call))] == 3
        assert after[("mcpapps_app_request_seconds_sum", labels(**call))] > 0
        infinite = labels(**call, le="+Inf")
        assert after[("mcpapps_app_request_seconds_bucket", infinite)] == 3


async def test_admin_routes_and_metrics_need_the_token_when_auth_is_on(project: Project) -> None:
    write(project, [("plain", ())], server=f'always_require_auth = true\ntoken = "{TOKEN}"')
    async with supervisor_running(project) as supervisor, http(supervisor) as client:
        authorized = {"authorization": f"Bearer {TOKEN}"}
        for method, path in (
            ("GET", "/admin/apps"),
            ("GET", "/admin/apps/plain"),
            ("POST", "/admin/apps/plain/restart"),
            ("POST", "/admin/call"),
            ("GET", "/metrics"),
        ):
            response = await client.request(method, path)
            assert response.status_code == 401, path
            assert response.json()["error"]["code"] == "unauthorized"
        assert (await client.get("/admin/apps", headers=authorized)).status_code == 200
        assert (await client.get("/metrics", headers=authorized)).status_code == 200
