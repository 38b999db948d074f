"""What a client asked of an app's session (its resource subscriptions, the log level) outlives a
reload that restarts the app: `mcpapps run` in a subprocess, the fixture app, its manifest edited
on disk, POST /admin/reload, and the official Python client on `/apps/mcp/<id>`."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import httpx2
import mcp
import pytest
import trio

from actors.apps.httpclients import http_transport
from actors.tls import client_tls
from tests.support import forkserver
from tests.support.frontdoor import GroceryOverHttp, wait_running
from tests.support.helpers import Project, free_port
from tests.support.running import (
    FAST,
    GROCERY,
    GUARD_S,
    Supervisor,
    fixture_manifest,
    logged_supervisor,
)

URI = "fixture://item/1"
ADJUST = {"storeId": 1, "productId": 1, "delta": 1}

# A handshake-era client's requests: the SDK warns that 2026-07-28 removed both methods.
pytestmark = [
    pytest.mark.filterwarnings("ignore:resources/subscribe is removed"),
    pytest.mark.filterwarnings("ignore:The logging capability is deprecated"),
]


def write_project(project: Project, *options: str) -> None:
    supervision = "\n".join(f"{k} = {v}" for k, v in FAST.items())
    project.config(f'[apps]\ndiscovery_paths = ["./apps"]\n[supervision]\n{supervision}\n')
    write_app(project, *options)


def write_app(project: Project, *options: str) -> None:
    project.manifest("apps/sub", fixture_manifest("sub", *options))


async def admin(supervisor: Supervisor, path: str) -> dict[str, Any]:
    async with httpx2.AsyncClient(verify=client_tls(), timeout=GUARD_S) as http:
        response = await http.post(supervisor.url(path))
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


class Updates:
    """The `resources/updated` notifications a client received, in order."""

    def __init__(self) -> None:
        self.uris: list[str] = []

    async def on_message(self, message: Any) -> None:
        if isinstance(message, mcp.types.ResourceUpdatedNotification):
            self.uris.append(str(message.params.uri))

    async def wait_for(self, count: int) -> None:
        """Until `count` updates have come (the fixture sends one as it agrees to a subscribe,
        so each one here is a subscribe the app's current process was sent)."""
        with trio.fail_after(GUARD_S):
            while len(self.uris) < count:
                await trio.sleep(0.02)


async def call_text(client: Any, name: str) -> str:
    result = await client.call_tool(name, {})
    assert not result.is_error, result
    text: str = result.content[0].text
    return text


@contextlib.asynccontextmanager
async def subscribed_client(supervisor: Supervisor, updates: Updates) -> AsyncIterator[Any]:
    """A handshake-era client of `/apps/mcp/sub`, at log level `debug`, subscribed to URI."""
    transport = http_transport(supervisor.url("/apps/mcp/sub"), {}, GUARD_S)
    async with mcp.Client(transport, mode="legacy", message_handler=updates.on_message) as client:
        await client.set_logging_level("debug")
        await client.subscribe_resource(URI)
        await updates.wait_for(1)
        assert await call_text(client, "log_level") == "debug"
        yield client


async def reload_restarts_sub(supervisor: Supervisor, client: Any, *options: str) -> None:
    """Edit the app's manifest, reload, and wait for its new process to be Running."""
    before = await call_text(client, "pid")
    write_app(supervisor.project, *options)
    body = await admin(supervisor, "/admin/reload")
    assert body["restarted"] == ["sub"], body
    await wait_running(supervisor, "sub")
    assert await call_text(client, "pid") != before


async def test_a_reload_that_restarts_an_app_gives_its_new_process_the_clients_session_state(
    project: Project,
) -> None:
    """The new process of a changed app is subscribed again for the client and given its log
    level, as after an operator's restart; and so is the process after that one (the state
    lives on with the app, not with the definition it had when the client asked)."""
    write_project(project, "--subscribable", "--logging")
    updates = Updates()
    async with (
        logged_supervisor(project) as supervisor,
        subscribed_client(supervisor, updates) as client,
    ):
        await reload_restarts_sub(supervisor, client, "--subscribable", "--logging", "--tools", "3")
        await updates.wait_for(2)
        assert await call_text(client, "log_level") == "debug"

        await admin(supervisor, "/admin/apps/sub/restart")
        await wait_running(supervisor, "sub")
        await updates.wait_for(3)
        assert await call_text(client, "log_level") == "debug"
        assert updates.uris == [URI] * 3
        assert "could not restore" not in supervisor.log


async def test_a_log_level_the_new_definition_refuses_is_forgotten(project: Project) -> None:
    """A reload to a version of the app without logging: its new process refuses the level,
    which is forgotten (and logged), so the version after it is not given it either; the
    subscription, which that version accepts, lives on."""
    write_project(project, "--subscribable", "--logging")
    updates = Updates()
    async with (
        logged_supervisor(project) as supervisor,
        subscribed_client(supervisor, updates) as client,
    ):
        await reload_restarts_sub(supervisor, client, "--subscribable")
        await updates.wait_for(2)  # the level is restored before the subscriptions
        await supervisor.wait_for_log("its new session refused the log level debug")

        await reload_restarts_sub(supervisor, client, "--subscribable", "--logging")
        await updates.wait_for(3)
        assert await call_text(client, "log_level") == "none"


async def test_a_subscription_the_new_definition_refuses_is_forgotten(project: Project) -> None:
    """A reload to a version of the app that no longer offers subscriptions: its new process
    refuses the subscription, which is forgotten (and logged); the client's next subscribe is
    the app's to answer (here: it has no such method), not ours to claim it holds."""
    write_project(project, "--subscribable", "--logging")
    updates = Updates()
    async with (
        logged_supervisor(project) as supervisor,
        subscribed_client(supervisor, updates) as client,
    ):
        await reload_restarts_sub(supervisor, client, "--logging")
        await supervisor.wait_for_log(f"its new session refused the subscription to {URI}")
        assert await call_text(client, "log_level") == "debug"
        with pytest.raises(mcp.MCPError, match="Method not found"):
            await client.subscribe_resource(URI)
        assert updates.uris == [URI]


async def test_a_stopped_app_given_a_new_definition_keeps_the_clients_session_state(
    project: Project,
) -> None:
    """An app the operator stopped stays Stopped across a reload that changes it; when it is
    started, its new process is given the subscription and the level all the same."""
    write_project(project, "--subscribable", "--logging")
    updates = Updates()
    async with (
        logged_supervisor(project) as supervisor,
        subscribed_client(supervisor, updates) as client,
    ):
        await admin(supervisor, "/admin/apps/sub/stop")
        write_app(project, "--subscribable", "--logging", "--tools", "3")
        body = await admin(supervisor, "/admin/reload")
        assert body["stillStopped"] == ["sub"], body
        await admin(supervisor, "/admin/apps/sub/start")
        await wait_running(supervisor, "sub")
        await updates.wait_for(2)
        assert await call_text(client, "log_level") == "debug"


GROCERY_URI = "inventory://stores/1/summary"


def grocery_app(project: Project, entry: str) -> None:
    """The app `sub` as the bundled grocery app, in the era and over the transport `entry`
    (its config entry) says."""
    supervision = "\n".join(f"{k} = {v}" for k, v in FAST.items())
    project.config(
        f'[apps]\ndiscovery_paths = ["./apps"]\n[supervision]\n{supervision}\n'
        f"[apps.entries.sub]\n{entry}\n"
    )
    server = ["server.py"]
    project.manifest(
        "apps/sub",
        {
            "id": "sub",
            "command": forkserver.python(),
            "arguments": server,
            "workingDirectory": str(GROCERY),
        },
    )


@pytest.mark.parametrize("switch", ["era", "transport"])
async def test_a_reload_that_switches_the_apps_era_or_transport_keeps_its_subscriptions(
    project: Project, switch: str
) -> None:
    """A client subscribes to a resource of `sub`; a reload switches the app's protocol era
    (the fixture app in the handshake era, where the app is sent `resources/subscribe`, to
    the bundled grocery app on 2026-07-28, where the app actor names the resource on its
    listen stream) or its transport (the grocery app over stdio, then over Streamable HTTP).
    The client is still subscribed, and the new process's update reaches it."""
    over_http = GroceryOverHttp(free_port())
    if switch == "era":
        write_project(project, "--subscribable")  # it sends an update as it agrees
    else:
        grocery_app(project, 'protocol = "stateless"')
    updates = Updates()
    try:
        if switch == "transport":
            await over_http.start()
        async with logged_supervisor(project) as supervisor:
            url = supervisor.url("/apps/mcp/sub")
            transport = http_transport(url, {}, GUARD_S)
            async with mcp.Client(
                transport, mode="legacy", message_handler=updates.on_message
            ) as client:
                await client.subscribe_resource(GROCERY_URI)
                if switch == "transport":
                    await client.call_tool("adjust_stock", ADJUST)
                await updates.wait_for(1)

                if switch == "era":
                    grocery_app(project, 'protocol = "stateless"')
                else:
                    entry = f'protocol = "stateless"\ntransport = "http"\nurl = "{over_http.url}"'
                    grocery_app(project, entry)
                body = await admin(supervisor, "/admin/reload")
                assert body["restarted"] == ["sub"], body
                await wait_running(supervisor, "sub")
                await client.call_tool("adjust_stock", ADJUST)
                await updates.wait_for(2)
                assert updates.uris == [GROCERY_URI] * 2
    finally:
        if over_http.process is not None:
            await over_http.kill()
