"""Structured settings (`openai/settings`) over HTTP, against apps built with the OpenAI
extensions SDK run by a real `mcpapps run`: read in both eras, a change sent as only what
changed, a bad value refused before the app sees it, and the offers that are not trusted."""

from __future__ import annotations

import httpx2

from tests.support.extensions import extensions_project
from tests.support.frontdoor import http
from tests.support.helpers import Project
from tests.support.running import fixture_manifest, supervisor_running

HOSTILE = (
    "settings-not-read-only",
    "settings-no-output-schema",
    "settings-unsupported-type",
)


async def current_values(client: httpx2.AsyncClient, app_id: str) -> dict[str, object]:
    """What the app itself says its settings are (its own read-only tool, not the page)."""
    response = await client.post(
        "/admin/call", json={"name": f"{app_id}.current_settings", "arguments": {}}
    )
    assert response.status_code == 200, response.text
    return response.json()["result"]["structuredContent"]


async def test_settings_are_read_and_changed_in_both_eras(project: Project) -> None:
    extensions_project(project)
    async with supervisor_running(project) as supervisor, http(supervisor) as client:
        for app_id in ("ext", "ext26"):  # experimental (handshake era), extensions (2026-07-28)
            response = await client.get(f"/apps/settings/{app_id}")
            assert response.status_code == 200, response.text
            settings = response.json()
            assert settings["readTool"] == "settings.read"
            assert settings["values"]["units"] == "in"
            titles = [g["title"] for g in settings["groups"]]
            assert titles == ["Display", "Library", "Other settings"]
            display = settings["groups"][0]["items"]
            assert [i.get("property") or i.get("tool") for i in display] == [
                "units",
                "showGrid",
                "reset_cache",
            ]
            assert display[2]["title"] == "Reset the cache"
            assert display[2]["view"] is False
            assert settings["groups"][1]["items"][0]["view"] is True
            other = [i["property"] for i in settings["groups"][2]["items"]]
            assert other == ["label", "zoom", "step"]
            assert settings["problems"] == []

            # Only what changed is sent: units is already "in".
            response = await client.post(
                f"/apps/settings/{app_id}", json={"set": {"units": "in", "zoom": 4}}
            )
            assert response.status_code == 200, response.text
            assert response.json()["changed"] == ["zoom"]
            assert response.json()["values"]["zoom"] == 4
            assert (await current_values(client, app_id))["zoom"] == 4

            nothing = await client.post(f"/apps/settings/{app_id}", json={"set": {"zoom": 4}})
            assert nothing.json()["changed"] == []

            action = await client.post(f"/apps/settings/{app_id}/actions/reset_cache")
            assert action.status_code == 200, action.text
            assert action.json()["text"] == "cache cleared (5 parts)"
            assert action.json()["isError"] is False
            library = await client.post(f"/apps/settings/{app_id}/actions/library")
            view = library.json()["view"]
            assert view["resourceUri"] == "ui://extensions/library"
            assert view["result"]["structuredContent"]["parts"][0] == "hex-bolt"
            stray = await client.post(f"/apps/settings/{app_id}/actions/current_settings")
            assert stray.status_code == 404
            assert "settings layout" in stray.json()["error"]["message"]
        assert "update ['zoom']" in supervisor.log


async def test_a_bad_value_is_refused_before_the_app_sees_it(project: Project) -> None:
    extensions_project(project)
    async with supervisor_running(project) as supervisor, http(supervisor) as client:
        bad = {
            "zoom": 11,  # above the maximum
            "step": 0.3,  # not a multiple of 0.5
            "units": "cm",  # not in the enum
            "label": "Bolts!",  # not the pattern
            "showGrid": "yes",  # not a boolean
            "colour": "red",  # no such setting
        }
        for field, value in bad.items():
            response = await client.post(
                "/apps/settings/ext", json={"set": {"units": "mm", field: value}}
            )
            assert response.status_code == 400, response.text
            error = response.json()["error"]
            assert error["code"] == "bad_setting"
            assert error["field"] == field
            assert f"'{field}'" in error["message"]
        assert "update [" not in supervisor.log  # not even the good value of each went
        assert (await current_values(client, "ext"))["units"] == "in"

        for body in ({}, {"set": {}}, {"set": []}, {"set": {"zoom": 3}, "more": 1}):
            response = await client.post("/apps/settings/ext", json=body)
            assert response.status_code == 400, (body, response.text)
        response = await client.post(
            "/apps/settings/ext", content=b"{", headers={"content-type": "application/json"}
        )
        assert response.status_code == 400
        response = await client.post("/apps/settings/ext", content=b'{"set": {"zoom": 3}}')
        assert response.status_code == 415


async def test_offers_that_are_not_trusted_are_reported(project: Project) -> None:
    extensions_project(project, *HOSTILE)
    project.manifest("apps/fx", fixture_manifest("fx"))
    async with supervisor_running(project) as supervisor, http(supervisor) as client:
        listed = (await client.get("/apps/settings")).json()["apps"]
        problems = {a["app"]: a["problem"] for a in listed}
        assert problems["ext"] is None
        assert "not marked read-only" in problems["bad-settings-not-read-only"]
        assert "fx" not in problems

        response = await client.get("/apps/settings/bad-settings-not-read-only")
        assert response.status_code == 409
        assert "not marked read-only" in response.json()["error"]["message"]

        response = await client.get("/apps/settings/bad-settings-no-output-schema")
        assert response.status_code == 409
        assert "declares no outputSchema" in response.json()["error"]["message"]

        response = await client.get("/apps/settings/bad-settings-unsupported-type")
        assert response.status_code == 502
        error = response.json()["error"]
        assert error["code"] == "unusable_settings"
        assert "'when'" in error["message"]
        assert '"array"' in error["message"]

        response = await client.get("/apps/settings/fx")
        assert response.status_code == 404
        assert response.json()["error"]["code"] == "no_settings"
        response = await client.get("/apps/settings/nobody")
        assert response.status_code == 404
        assert response.json()["error"]["code"] == "unknown_app"
