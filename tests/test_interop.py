"""Apps we did not write: the official reference server on the handshake protocol, and our own
SDK's servers on 2026-07-28, through the registry and the tool bridge."""

from __future__ import annotations

import pytest
import trio

from supervisor.model.lifecycle import AppState
from tests.support.frontdoor import everything_manifest
from tests.support.helpers import Project
from tests.support.running import bridge, config_data, fixture_manifest, running, wait_for


async def test_server_everything_as_a_stdio_app(project: Project) -> None:
    project.manifest("apps/everything", everything_manifest())
    async with running(project) as registry:
        s = await wait_for(registry, "everything", AppState.RUNNING)
        # A TypeScript-SDK server: discover is refused, the handshake is used.
        assert s.protocol_version == "2025-11-25"
        assert s.counts["tools"] >= 10
        assert s.counts["resources"] > 0
        assert s.counts["prompts"] > 0
        b = bridge(registry)
        names = {t.public_name for t in (await b.tools()).tools}
        assert {"ev.echo", "ev.get-sum"} <= names
        assert await b.call("ev.echo", {"message": "hello"}) == "Echo: hello"
        assert "3" in await b.call("ev.get-sum", {"a": 1, "b": 2})
        # Its own argument validation comes back as an Error: text naming the app.
        refused = await b.call("ev.get-sum", {"a": "one"})
        assert refused.startswith("Error: tool 'ev.get-sum' of app 'everything' failed")


async def test_protocol_setting_chooses_the_era(project: Project) -> None:
    project.manifest("apps/auto", fixture_manifest("auto"))
    project.manifest("apps/legacy", fixture_manifest("legacy"))
    project.manifest("apps/modern", fixture_manifest("modern"))
    project.manifest("apps/newonly", fixture_manifest("newonly", "--modern-only"))
    data = config_data(
        entries={"legacy": {"protocol": "handshake"}, "modern": {"protocol": "stateless"}}
    )
    async with running(project, data) as registry:
        eras = {
            app: (await wait_for(registry, app, AppState.RUNNING)).protocol_version
            for app in ("auto", "legacy", "modern", "newonly")
        }
        # "auto": the handshake when the app offers it (its session then has a channel for
        # the app's own requests), 2026-07-28 when the app refuses the handshake.
        assert eras == {
            "auto": "2025-11-25",
            "legacy": "2025-11-25",
            "modern": "2026-07-28",
            "newonly": "2026-07-28",
        }
        for app in eras:
            assert await bridge(registry).call(f"{app}.echo", {"text": app}) == app


async def test_handshake_era_pings_and_list_changes(project: Project) -> None:
    project.manifest("apps/old", fixture_manifest("old", "--changing-tools"))
    data = config_data(entries={"old": {"protocol": "handshake"}})
    async with running(project, data) as registry:
        await wait_for(registry, "old", AppState.RUNNING)
        b = bridge(registry)
        await b.call("old.add_tool", {"name": "fresh"})
        await wait_for(registry, "old", lambda s: s.counts["tools"] == 11)
        assert "old.fresh" in {t.public_name for t in (await b.tools()).tools}
        # Idle, it is pinged every 0.5 s (the tests' policy) and answers: no restart.
        await trio.sleep(1.5)
        s = await wait_for(registry, "old", AppState.RUNNING)
        assert s.restarts == 0


@pytest.mark.parametrize("protocol", ["auto", "handshake"])
async def test_prompt_list_changes_refresh_the_catalog(project: Project, protocol: str) -> None:
    project.manifest("apps/fx", fixture_manifest("fx", "--changing-prompts"))
    async with running(project, config_data(protocol=protocol)) as registry:
        before = await wait_for(registry, "fx", AppState.RUNNING)
        await bridge(registry).call("fx.add_prompt", {"name": "fresh"})
        after = await wait_for(
            registry, "fx", lambda s: s.counts["prompts"] == before.counts["prompts"] + 1
        )
        assert after.restarts == 0
