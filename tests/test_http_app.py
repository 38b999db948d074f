"""The http transport: the bundled grocery app served over Streamable HTTP on loopback, run as an
http app; start failures, and the upstream restarting under the app actor."""

from __future__ import annotations

import pytest
import trio

from supervisor.model.lifecycle import AppState
from tests.support.frontdoor import GroceryOverHttp
from tests.support.helpers import (
    CLIENT_IDLE_EXPIRY_S,
    Project,
    free_port,
    statuses_across_an_idle_pause,
)
from tests.support.running import (
    bridge,
    config_data,
    environment,
    running,
    wait_for,
)


def http_manifest(url: str) -> dict[str, object]:
    return {
        "id": "remote",
        "transport": "Streamable-HTTP",
        "url": url,
        "toolNamePrefix": "remote.",
        "headers": {"X-Test": "yes"},
        "startupTimeoutSeconds": 10,
    }


@pytest.mark.parametrize(
    ("protocol", "era"),
    [("auto", "2025-11-25"), ("handshake", "2025-11-25"), ("stateless", "2026-07-28")],
)
async def test_http_app_runs_and_survives_an_upstream_restart(
    project: Project, protocol: str, era: str
) -> None:
    server = GroceryOverHttp(free_port())
    await server.start()
    try:
        project.manifest("apps/remote", http_manifest(server.url))
        data = config_data({"intensity": 1000, "backoff_max_s": 0.5}, protocol=protocol)
        async with running(project, data) as registry:
            s = await wait_for(registry, "remote", AppState.RUNNING)
            assert s.transport == "http"
            assert s.protocol_version == era
            assert s.url == server.url
            assert s.pid is None
            assert s.counts["tools"] >= 9
            assert s.counts["resource_templates"] == 2
            assert s.counts["prompts"] == 3
            b = bridge(registry)
            stores = await b.call("remote.get_stores", {})
            assert not stores.startswith("Error:")

            await server.kill()
            # The next call finds the connection gone: an error naming the app, then a restart.
            failed = await b.call("remote.get_stores", {})
            # Either the call found the connection gone, or the app was already known dead:
            # waiting out its backoff (Failed), or already trying to start again (Loaded); told
            # by the registry's tool table, or, when the call was routed a moment before the
            # table heard of it, by the app itself.
            assert failed.startswith(
                (
                    "Error: app 'remote' died during the call: the connection failed:",
                    "Error: app 'remote' is not running (state Failed: the connection failed:",
                    "Error: app 'remote' is not running (state Loaded: the connection failed:",
                    "Error: tool 'remote.get_stores' is not available: app 'remote' that would"
                    " offer it is Failed (the connection failed:",
                    "Error: tool 'remote.get_stores' is not available: app 'remote' that would"
                    " offer it is Loaded (the connection failed:",
                )
            ), failed
            await wait_for(registry, "remote", lambda s: s.state is not AppState.RUNNING)
            await server.start()
            back = await wait_for(
                registry, "remote", lambda s: s.state is AppState.RUNNING and s.restarts >= 1
            )
            assert back.last_error is None  # running again: the failure is a previous one
            assert back.previous_error is not None
            # The last failure: the lost connection, or a start attempt while it was down.
            assert back.previous_error.startswith(
                ("the connection failed:", "start-up failed: cannot connect")
            )
            assert await b.call("remote.get_stores", {}) == stores
    finally:
        if server.process is not None and server.process.returncode is None:
            await server.kill()


async def test_http_start_failure_is_failed_with_the_reason(project: Project) -> None:
    url = f"http://127.0.0.1:{free_port()}/mcp"  # nothing listens there
    project.manifest("apps/remote", http_manifest(url))
    async with running(project, config_data({"restart": "temporary"})) as registry:
        s = await wait_for(registry, "remote", AppState.FAILED)
        assert s.last_error is not None
        assert s.last_error.startswith("start-up failed: cannot connect")


async def test_http_error_status_at_start_is_failed(project: Project) -> None:
    server = GroceryOverHttp(free_port())
    await server.start()
    try:
        # The right server, the wrong path: 404 for every request.
        project.manifest("apps/remote", http_manifest(server.url + "/nope"))
        async with running(project, config_data({"restart": "temporary"})) as registry:
            s = await wait_for(registry, "remote", AppState.FAILED)
            assert s.last_error == (
                "start-up failed: the server answered HTTP 404 Not Found: check the app's url"
            )
    finally:
        await server.kill()


async def test_http_upstream_that_never_answers_times_out_at_start(project: Project) -> None:
    """A server that accepts connections and then says nothing: the start-up deadline ends it."""
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    port = listeners[0].socket.getsockname()[1]
    held: list[trio.SocketStream] = []

    async def accept_and_ignore(stream: trio.SocketStream) -> None:
        held.append(stream)
        await trio.sleep_forever()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(trio.serve_listeners, accept_and_ignore, listeners)
        manifest = {**http_manifest(f"http://127.0.0.1:{port}/mcp"), "startupTimeoutSeconds": 1}
        project.manifest("apps/remote", manifest)
        async with running(project, config_data({"restart": "temporary"})) as registry:
            s = await wait_for(registry, "remote", AppState.FAILED)
            assert s.last_error == "did not start within 1 s (startupTimeoutSeconds)"
        assert held
        nursery.cancel_scope.cancel()


class RawHttp:
    """A loopback listener that records each request's head and answers with a fixed status."""

    def __init__(self, status: str) -> None:
        self.status = status
        self.heads: list[str] = []
        self.port = 0

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        self.port = listeners[0].socket.getsockname()[1]
        task_status.started()
        await trio.serve_listeners(self._answer, listeners)

    async def _answer(self, stream: trio.SocketStream) -> None:
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = await stream.receive_some(65536)
            if not chunk:
                return
            data += chunk
        self.heads.append(data.split(b"\r\n\r\n")[0].decode("latin-1").lower())
        body = b'{"error": "no"}'
        await stream.send_all(
            f"HTTP/1.1 {self.status}\r\ncontent-type: text/plain\r\n"
            f"content-length: {len(body)}\r\nconnection: close\r\n\r\n".encode()
            + body
        )
        await stream.aclose()


async def test_http_headers_are_sent_with_env_references_expanded(project: Project) -> None:
    server = RawHttp("500 Internal Server Error")
    async with trio.open_nursery() as nursery:
        await nursery.start(server.serve)
        manifest = {
            **http_manifest(f"http://127.0.0.1:{server.port}/mcp"),
            "headers": {"X-Test": "yes", "Authorization": "Bearer ${env:MCPAPPS_TEST_TOKEN}"},
        }
        project.manifest("apps/remote", manifest)
        env = {**environment(), "MCPAPPS_TEST_TOKEN": "s3cret"}
        async with running(project, config_data({"restart": "temporary"}), env) as registry:
            s = await wait_for(registry, "remote", AppState.FAILED)
        nursery.cancel_scope.cancel()
    # A 5xx at start is a start failure, said as such.
    assert s.last_error == ("start-up failed: the server answered with an HTTP error status")
    assert server.heads
    for head in server.heads:
        assert "\r\nx-test: yes" in head
        assert "\r\nauthorization: bearer s3cret" in head


async def test_the_apps_endpoint_keeps_idle_connections_past_the_clients_expiry() -> None:
    """The bundled app's own server (a stand-in for any app served over HTTP) does not close an
    idle connection while a client may still reuse it: closing at the same 5 s as the client
    lost a request now and then (see the front door's test of the same)."""
    server = GroceryOverHttp(free_port())
    await server.start()
    try:
        idle = CLIENT_IDLE_EXPIRY_S + 1
        assert await statuses_across_an_idle_pause(server.port, "/", idle) == [404, 404]
    finally:
        await server.kill()
