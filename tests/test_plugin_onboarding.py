"""Onboarding: a manifest's `onboardingSkill` (a setup skill packaged with the app) checked like
every manifest field, shown on the app's status, and run only when the person asks for it
(`POST /apps/onboarding/<appId>`): a chat turn whose message carries the skill's text."""

from __future__ import annotations

import os
from typing import Any

import httpx2

from supervisor.model.lifecycle import AppState
from tests.support.extensions import extensions_manifest, extensions_project
from tests.support.frontdoor import http
from tests.support.helpers import Project
from tests.support.running import supervisor_running

SKILL = "# Set up\nAsk the person which units they use, then call settings.update.\n"


def test_the_skill_path_is_checked_like_every_field(project: Project) -> None:
    for app_id, path in (
        ("absolute", "/etc/passwd"),
        ("climbs", "skills/../../secret.md"),
        ("blank", " "),
        ("typed", 7),
    ):
        project.manifest(f"apps/{app_id}", extensions_manifest(app_id, onboardingSkill=path))
    project.manifest("apps/good", extensions_manifest("good", onboardingSkill="./skills/SKILL.md"))
    project.config('[apps]\ndiscovery_paths = ["./apps"]\n')
    apps = {app.id: app for app in project.discover().apps}
    for app_id, said in (
        ("absolute", "must be relative to the manifest's folder"),
        ("climbs", "climbs out of the manifest's folder"),
        ("blank", "is not a path"),
        ("typed", "onboardingSkill"),
    ):
        assert apps[app_id].state is AppState.DISCOVERED, app_id
        assert any(said in str(e) and "onboardingSkill" in str(e) for e in apps[app_id].errors)
    good = apps["good"]
    assert good.state is AppState.VALIDATED
    assert good.definition is not None
    assert good.definition.manifest.onboarding_skill == str(
        project.root / "apps" / "good" / "skills" / "SKILL.md"
    )


async def test_set_up_starts_a_chat_with_the_skill_and_nothing_runs_it_unasked(
    project: Project,
) -> None:
    extensions_project(project)
    for app_id, path in (
        ("ext", "skills/setup/SKILL.md"),
        ("gone", "skills/none.md"),
        ("linked", "skills/link.md"),
        ("huge", "skills/huge.md"),
        ("binary", "skills/binary.md"),
    ):
        project.manifest(f"apps/{app_id}", extensions_manifest(app_id, onboardingSkill=path))
    folder = project.root / "apps"
    (folder / "ext" / "skills" / "setup").mkdir(parents=True)
    (folder / "ext" / "skills" / "setup" / "SKILL.md").write_text(SKILL)
    (folder / "linked" / "skills").mkdir()
    os.symlink(folder / "ext" / "skills" / "setup" / "SKILL.md", folder / "linked/skills/link.md")
    (folder / "huge" / "skills").mkdir()
    (folder / "huge" / "skills" / "huge.md").write_text("x" * 70_000)
    (folder / "binary" / "skills").mkdir()
    (folder / "binary" / "skills" / "binary.md").write_bytes(b"\xff\xfe\x00")
    async with supervisor_running(project) as supervisor, http(supervisor) as client:
        apps = {a["id"]: a for a in (await client.get("/admin/apps")).json()["apps"]}
        assert apps["ext"]["onboardingSkill"].endswith("skills/setup/SKILL.md")
        assert apps["ext26"]["onboardingSkill"] is None
        # Discovered and started, and no chat was begun for the skill.
        assert (await client.get("/admin/sessions")).json()["sessions"] == []

        frames = await chat_data_of(client, "/apps/onboarding/ext")
        assert frames[0]["type"] == "session"
        assert frames[-1] == {"type": "done"}
        session_id = frames[0]["sessionId"]
        saved = (await client.get(f"/apps/chat/{session_id}")).json()
        first = saved["messages"][0]
        assert first["role"] == "user"
        assert first["content"].startswith("Set up the app 'ext'")
        assert SKILL in first["content"]

        refusals = {
            "ext26": (404, "no_onboarding"),
            "nobody": (404, "unknown_app"),
            "gone": (409, "skill_unusable"),
            "linked": (409, "skill_unusable"),
            "huge": (409, "skill_unusable"),
            "binary": (409, "skill_unusable"),
        }
        for app_id, (status, code) in refusals.items():
            response = await client.post(f"/apps/onboarding/{app_id}")
            assert response.status_code == status, (app_id, response.text)
            assert response.json()["error"]["code"] == code
        said = (await client.post("/apps/onboarding/linked")).json()["error"]["message"]
        assert "symbolic link" in said
        bad = await client.post("/apps/onboarding/ext", json={"sessionId": "no spaces"})
        assert bad.status_code == 400
        listed = (await client.get("/admin/sessions")).json()["sessions"]
        assert [s["id"] for s in listed] == [session_id]  # only the one the person asked for


async def chat_data_of(client: httpx2.AsyncClient, path: str) -> list[dict[str, Any]]:
    """A whole turn's events from `path` (the onboarding route answers as the chat does)."""
    async with client.stream("POST", path) as response:
        assert response.status_code == 200, await response.aread()
        return [frame.json() async for frame in httpx2.EventSource(response)]
