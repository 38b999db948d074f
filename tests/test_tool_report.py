"""Diagnostics where operators look: the tool table with what is not offered and why
(`GET /admin/tools`, `mcpapps tools`, `GET /admin/apps/<id>`), and discovery's log lines."""

from __future__ import annotations

import json
import logging

import httpx2
import pytest
import trio

from actors.tls import client_tls
from actors.toolreport import tool_report
from actors.tooltable import AppTools, build_tool_table
from supervisor.model.discovery import log_discovery
from tests.support.frontdoor import wait_running
from tests.support.helpers import Project, run_mcpapps, stdio
from tests.support.running import FAST, GUARD_S, fixture_manifest, supervisor_running

OBJECT = {"type": "object"}


def test_every_tool_with_why_it_is_or_is_not_offered() -> None:
    apps = [
        AppTools(
            "a",
            "x.",
            (
                {"name": "echo", "inputSchema": OBJECT},
                {
                    "name": "view",
                    "inputSchema": OBJECT,
                    "_meta": {"ui": {"resourceUri": "ui://a/v", "visibility": ["model"]}},
                },
                {"name": "inner", "inputSchema": OBJECT, "_meta": {"ui": {"visibility": ["app"]}}},
                {"name": "broken", "inputSchema": {"type": "string"}},
            ),
        ),
        AppTools("b", "x.", ({"name": "echo", "inputSchema": OBJECT},)),
    ]
    rows = {(r.app_id, r.name): r for r in tool_report(build_tool_table(apps), apps)}
    assert rows["a", "echo"].offered
    assert rows["a", "echo"].alias == "x_echo"
    assert rows["a", "echo"].visibility == ("model", "app")
    assert rows["a", "view"].ui_resource_uri == "ui://a/v"
    assert rows["a", "view"].visibility == ("model",)
    inner = rows["a", "inner"]
    assert not inner.offered
    assert inner.alias is None
    assert inner.reason == "app-only: its visibility is ['app'], without 'model'"
    assert "its inputSchema has type 'string'" in (rows["a", "broken"].reason or "")
    collision = rows["b", "echo"]
    assert not collision.offered
    assert collision.taken_by == "a"
    assert "of app 'b'" in (collision.reason or "")
    assert "app 'a' already offers" in (collision.reason or "")


def test_discovery_logs_one_line_per_app(
    project: Project, caplog: pytest.LogCaptureFixture
) -> None:
    project.config('[apps]\ndiscovery_paths = ["./apps"]\ndeny = ["off"]\n')
    project.manifest("apps/good", stdio("good"))
    project.manifest("apps/off", stdio("off"))
    project.manifest("apps/bad", stdio("bad", transport="pigeon"))
    with caplog.at_level(logging.INFO, logger="mcpapps.discovery"):
        log_discovery(project.discover())
    found = [r.getMessage() for r in caplog.records if ": found in " in r.getMessage()]
    root = project.root / "apps"
    assert found == [
        f"app bad: found in {root}/bad/openclaw.mcpapp.json: refused, 1 problem(s)",
        f"app good: found in {root}/good/openclaw.mcpapp.json: Validated (stdio)",
        f"app off: found in {root}/off/openclaw.mcpapp.json: Disabled (matches deny pattern 'off')",
    ]


async def test_the_tool_table_over_http_and_the_cli(project: Project) -> None:
    """Two apps with the same prefix: the second one's tools collide, and every place an
    operator looks names both apps."""
    project.manifest("apps/a", fixture_manifest("a", "--app-only", toolNamePrefix="t."))
    project.manifest("apps/b", fixture_manifest("b", toolNamePrefix="t."))
    supervision = "\n".join(f"{k} = {v}" for k, v in FAST.items())
    project.config(f'[apps]\ndiscovery_paths = ["./apps"]\n[supervision]\n{supervision}\n')
    async with supervisor_running(project) as supervisor:
        await wait_running(supervisor, "a")
        await wait_running(supervisor, "b")
        async with httpx2.AsyncClient(verify=client_tls(), timeout=GUARD_S) as http:
            listed = (await http.get(supervisor.url("/admin/tools"))).json()["tools"]
            detail = (await http.get(supervisor.url("/admin/apps/b"))).json()
        by_key = {(t["app"], t["name"]): t for t in listed}
        assert by_key["a", "echo"]["offered"] is True
        assert by_key["a", "echo"]["alias"] == "t_echo"
        assert by_key["a", "app_only_tool"]["offered"] is False
        assert by_key["a", "app_only_tool"]["visibility"] == ["app"]
        assert by_key["a", "ui_tool"]["uiResourceUri"].startswith("ui://")
        echo_b = by_key["b", "echo"]
        assert echo_b["offered"] is False
        assert echo_b["takenBy"] == "a"
        assert "of app 'b'" in echo_b["reason"]
        assert "app 'a' already offers" in echo_b["reason"]
        assert [t for t in detail["tools"] if t["name"] == "echo"] == [echo_b]
        assert {t["app"] for t in detail["tools"]} == {"b"}

        printed = await trio.to_thread.run_sync(
            lambda: run_mcpapps("tools", "--url", supervisor.url(), cwd=project.root)
        )
        assert printed.returncode == 0, printed.stderr
        lines = printed.stdout.splitlines()
        assert lines[0].split() == [
            "APP",
            "PUBLIC",
            "NAME",
            "MODEL",
            "ALIAS",
            "VISIBILITY",
            "UI",
            "NOT",
            "OFFERED",
            "BECAUSE",
        ]
        [row] = [line for line in lines if line.startswith("b ") and " t.echo " in line]
        assert "app 'a' already offers a tool of that name" in row
        offered = sum(t["offered"] for t in listed)
        assert lines[-1] == f"{len(listed)} tools: {offered} offered to the model"
        as_json = await trio.to_thread.run_sync(
            lambda: run_mcpapps("tools", "--json", "--url", supervisor.url(), cwd=project.root)
        )
        assert json.loads(as_json.stdout) == {"tools": listed}
