"""The front door over real HTTP to a real `mcpapps run` with real apps:
routes, status codes and bodies, the auth matrix, Host and Origin checks, CORS, and bad input."""

from __future__ import annotations

import json
import os
import signal
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mcp
import pytest
import trio

from actors.apps.httpclients import http_transport
from tests.support.frontdoor import (
    INITIALIZE,
    MCP_HEADERS,
    MODERN_GROCERY,
    TOKEN,
    GroceryOverHttp,
    events,
    http,
    open_session,
    sdk_client,
    write,
)
from tests.support.helpers import (
    CLIENT_IDLE_EXPIRY_S,
    Project,
    free_port,
    statuses_across_an_idle_pause,
)
from tests.support.running import (
    GUARD_S,
    fixture_manifest,
    supervisor_running,
)
from tests.support.shared import SharedSupervisor, SharedView, shared_supervisor, view_of

# The tests that only ask the bundled app things share a supervisor (tests/support/shared.py);
# the others need a config, an app or a stop of their own.


@pytest.fixture(scope="module")
def _grocery(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SharedSupervisor]:
    project = Project(tmp_path_factory.mktemp("front-door-grocery"))
    write(project)
    yield from shared_supervisor(project)


@pytest.fixture
def grocery(_grocery: SharedSupervisor) -> Iterator[SharedView]:
    yield from view_of(_grocery)


async def raw_get(port: int, target: str) -> bytes:
    """A GET with the request target exactly as given (HTTP clients normalise paths)."""
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    async with stream:
        request = f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
        await stream.send_all(request.encode())
        received = b""
        while chunk := await stream.receive_some():
            received += chunk
        return received


async def call_text(client: Any, name: str, arguments: dict[str, Any] | None = None) -> str:
    result = await client.call_tool(name, arguments or {})
    assert not result.is_error, result
    return result.content[0].text


# ---- routes -----------------------------------------------------------------------------------


async def test_health_lists_every_app_with_urls_from_the_request(project: Project) -> None:
    write(project, "", ("plain", ()), ("broken", ("--crash-at-start",)))
    async with supervisor_running(project) as supervisor, http(supervisor) as client:
        response = await client.get(
            "/apps/health", headers={"host": f"localhost:{supervisor.port}"}
        )
        assert response.status_code == 200
        body = response.json()
        base = f"http://localhost:{supervisor.port}"
        assert body["ok"] is True
        assert body["name"] == "grocery-inventory"  # the first Running app with a UI
        assert body["mcp"] == f"{base}/apps/mcp/grocery-inventory"
        assert body["sandbox"] == f"http://127.0.0.1:{supervisor.port + 1}/sandbox"
        apps = {a["id"]: a for a in body["apps"]}
        assert apps["grocery-inventory"] == {
            "id": "grocery-inventory",
            "state": "Running",
            "hasUi": True,
            "mcp": f"{base}/apps/mcp/grocery-inventory",
        }
        assert apps["plain"]["hasUi"] is False
        assert apps["broken"]["state"] in ("Failed", "Loaded")

        chosen = (await client.get("/apps/health?app=plain")).json()
        assert chosen["name"] == "plain"
        assert chosen["mcp"] == f"http://127.0.0.1:{supervisor.port}/apps/mcp/plain"
        assert "warning" not in chosen
        # An unknown id still loads the page, on the default app, and says the id is unknown.
        response = await client.get("/apps/health?app=nope")
        assert response.status_code == 200
        unknown = response.json()
        assert unknown["name"] == "grocery-inventory"
        assert unknown["warning"] == "there is no app 'nope'; selected 'grocery-inventory' instead"


async def test_health_is_503_when_no_app_runs(project: Project) -> None:
    project.manifest("apps/broken", fixture_manifest("broken", "--crash-at-start"))
    project.config(
        '[apps]\ndiscovery_paths = ["./apps"]\n[supervision]\nintensity = 0\n'
        "backoff_initial_s = 0.05\n"
    )
    async with supervisor_running(project) as supervisor, http(supervisor) as client:
        response = await client.get("/apps/health")
        assert response.status_code == 503
        body = response.json()
        assert body["ok"] is False
        assert body["name"] is None
        assert body["apps"][0]["state"] == "Failed"


async def test_unknown_routes_and_apps_are_json_errors(project: Project) -> None:
    write(project, "", ("hung", ("--hang-at-start",)))
    ready = "grocery-inventory: Loaded → Running"
    async with supervisor_running(project, ready=ready) as sv, http(sv) as client:
        response = await client.get("/nowhere")
        assert response.status_code == 404
        assert response.json()["error"]["code"] == "not_found"

        response = await client.post("/apps/mcp/nope", json=INITIALIZE, headers=MCP_HEADERS)
        assert response.status_code == 404
        assert response.json()["error"] == {
            "code": "unknown_app",
            "message": "there is no app 'nope'",
        }

        response = await client.post("/apps/mcp/hung", json=INITIALIZE, headers=MCP_HEADERS)
        assert response.status_code == 503
        answer = response.json()  # a JSON-RPC error: the endpoint speaks MCP
        assert answer["id"] == INITIALIZE["id"]
        assert answer["error"]["code"] == -32000
        assert answer["error"]["data"]["reason"] == "app_unavailable"
        assert answer["error"]["data"]["state"] == "Loaded"
        assert "app 'hung' is not running (state Loaded)" in answer["error"]["message"]


async def test_a_failed_app_is_503_with_its_last_error_and_next_restart(project: Project) -> None:
    write(project, "", ("crashy", ("--crash-at-start",)), grocery=False)
    project.config(
        project.config_path.read_text().replace("backoff_max_s = 0.2", "backoff_max_s = 30")
    )
    project.config(
        project.config_path.read_text().replace(
            "backoff_initial_s = 0.05", "backoff_initial_s = 20"
        )
    )
    async with supervisor_running(project) as supervisor, http(supervisor) as client:
        with trio.fail_after(GUARD_S):
            while True:
                response = await client.post(
                    "/apps/mcp/crashy", json=INITIALIZE, headers=MCP_HEADERS
                )
                if response.json()["error"].get("data", {}).get("state") == "Failed":
                    break
                await trio.sleep(0.05)
        assert response.status_code == 503
        error = response.json()["error"]
        assert "exited with code 2" in error["data"]["lastError"]
        assert "next restart in" in error["message"]
        assert int(response.headers["retry-after"]) >= 1


async def test_an_sdk_client_is_told_why_its_app_is_not_running(project: Project) -> None:
    """The official client reads a JSON-RPC error from a 503's body; anything else there it
    replaces with "Server returned an error response", and its user never learns why."""
    write(project)
    app = "grocery-inventory"
    async with supervisor_running(project) as supervisor, http(supervisor) as admin:
        for mode in ("legacy", "2026-07-28"):
            async with sdk_client(supervisor.url(f"/apps/mcp/{app}"), mode) as client:
                assert (await admin.post(f"/admin/apps/{app}/stop")).status_code == 200
                with pytest.raises(mcp.MCPError) as raised:
                    await client.call_tool("get_categories", {})
                assert raised.value.error.code == -32000
                assert f"app '{app}' is not running (state Stopped)" in raised.value.error.message
                assert raised.value.error.data["state"] == "Stopped"
                assert (await admin.post(f"/admin/apps/{app}/start")).status_code == 200
                with trio.fail_after(GUARD_S):
                    while (await admin.get(f"/admin/apps/{app}")).json()["state"] != "Running":
                        await trio.sleep(0.05)
                await client.call_tool("get_categories", {})  # the same session goes on


async def test_the_page_s_files_have_etags_and_only_they_are_served(grocery: SharedView) -> None:
    source = (Path(__file__).parent.parent / "web" / "static" / "js" / "main.js").read_bytes()
    async with http(grocery) as client:
        first = await client.get("/static/js/main.js")
        assert first.status_code == 200
        assert first.content == source
        assert first.headers["content-type"] == "text/javascript; charset=utf-8"
        assert first.headers["x-content-type-options"] == "nosniff"
        assert first.headers["cache-control"] == "no-cache"
        etag = first.headers["etag"]
        again = await client.get("/static/js/main.js", headers={"If-None-Match": etag})
        assert (again.status_code, again.content) == (304, b"")
        assert again.headers["etag"] == etag
        # Another file's tag is not this one's.
        css = await client.get("/static/style.css", headers={"If-None-Match": etag})
        assert css.status_code == 200
        assert css.headers["etag"] != etag
        head = await client.head("/static/js/host/host.js")
        assert head.status_code == 200
        assert head.content == b""
        assert int(head.headers["content-length"]) > 0
        # What is not a GET of one of the page's files goes on to the routes and their errors.
        posted = await client.post("/static/js/main.js", content=b"x")
        assert posted.status_code == 405
        missing = await client.get("/static/js/nope.js")
        assert missing.status_code == 404
        assert missing.json()["error"]["message"] == "there is no file 'js/nope.js'"
    # Nor any file of the working directory's own `static/` (Quart's default static route
    # served those once).
    (grocery.project.root / "static" / "sub").mkdir(parents=True, exist_ok=True)
    (grocery.project.root / "static" / "sub" / "secret.txt").write_text("secret")
    targets = (
        "/static/js/../app-bridge.js",
        "/static/js/..%2Fapp-bridge.js",
        "/static/sub/secret.txt",
    )
    for target in targets:
        assert b" 404 " in (await raw_get(grocery.port, target)).split(b"\r\n")[0], target


# ---- auth, Host, Origin, CORS ----------------------------------------------------------------


async def test_loopback_needs_no_token(grocery: SharedView) -> None:
    async with http(grocery) as client:
        assert (await client.get("/apps/health")).status_code == 200


async def test_the_auth_matrix_with_always_require_auth(project: Project) -> None:
    write(project, f'always_require_auth = true\ntoken = "{TOKEN}"')
    async with supervisor_running(project) as supervisor, http(supervisor) as client:
        missing = await client.get("/apps/health")
        assert missing.status_code == 401
        assert missing.json()["error"]["code"] == "unauthorized"
        assert missing.headers["www-authenticate"] == "Bearer"
        wrong = await client.get("/apps/health", headers={"authorization": "Bearer nope"})
        assert wrong.status_code == 401
        # Behind a reverse proxy every caller is loopback: the address proves nothing.
        forwarded = await client.get("/apps/health", headers={"x-forwarded-for": "127.0.0.1"})
        assert forwarded.status_code == 401
        good = await client.get("/apps/health", headers={"authorization": f"Bearer {TOKEN}"})
        assert good.status_code == 200
        # MCP endpoints and unknown app ids need it too (no probing which apps exist).
        for path in ("/mcp", "/apps/mcp/grocery-inventory", "/apps/mcp/nope"):
            response = await client.post(path, json=INITIALIZE, headers=MCP_HEADERS)
            assert response.status_code == 401, path

        assert (await client.get("/login?token=nope")).status_code == 401
        login = await client.get(f"/login?token={TOKEN}")
        assert login.status_code == 303
        cookie = login.headers["set-cookie"]
        assert "HttpOnly" in cookie
        assert "SameSite=Strict" in cookie
        # The client kept the cookie, as a browser does.
        assert (await client.get("/apps/health")).status_code == 200
        async with http(supervisor) as fresh:
            forged = {"cookie": "mcpapps_session=forged"}
            assert (await fresh.get("/apps/health", headers=forged)).status_code == 401
            # The cookie is not the token: a token in the cookie's place does not count.
            raw = {"cookie": f"mcpapps_session={TOKEN}"}
            assert (await fresh.get("/apps/health", headers=raw)).status_code == 401
        # Paths the routes would still match but a prefix check would not.
        for target in ("//apps/health", "http://localhost/apps/health"):
            raw_response = await raw_get(supervisor.port, target)
            assert raw_response.startswith(b"HTTP/1.1 400"), (target, raw_response)


async def test_a_non_loopback_bind_generates_a_private_token(project: Project) -> None:
    write(project, 'host = "0.0.0.0"')
    async with supervisor_running(project) as supervisor, http(supervisor) as client:
        token_file = project.root / ".mcpapps" / "token"
        assert str(token_file) in supervisor.log
        assert stat.S_IMODE(os.stat(token_file).st_mode) == 0o600
        assert stat.S_IMODE(os.stat(os.path.dirname(token_file)).st_mode) == 0o700
        token = token_file.read_text().strip()
        assert (await client.get("/apps/health")).status_code == 401
        headers = {"authorization": f"Bearer {token}"}
        assert (await client.get("/apps/health", headers=headers)).status_code == 200


async def test_host_and_origin_checks(project: Project) -> None:
    write(project, 'public_hosts = ["mcp.example"]\nallowed_origins = ["https://ui.example"]')
    async with supervisor_running(project) as supervisor, http(supervisor) as client:
        port = supervisor.port
        for host in ("evil.example", f"evil.example:{port}", "127.0.0.2"):
            response = await client.get("/apps/health", headers={"host": host})
            assert response.status_code == 421, host
            assert response.json()["error"]["code"] == "host_not_allowed"
        for host in (f"localhost:{port}", f"[::1]:{port}", "mcp.example", "mcp.example:443"):
            assert (await client.get("/apps/health", headers={"host": host})).status_code == 200

        for origin in ("http://evil.example", f"http://127.0.0.1:{port + 1}"):  # + the sandbox
            response = await client.get("/apps/health", headers={"origin": origin})
            assert response.status_code == 403, origin
            assert response.json()["error"]["code"] == "origin_not_allowed"
            message = response.json()["error"]["message"]
            # The sandbox origin cannot be listed (the config refuses it): no advice to list it.
            if origin == "http://evil.example":
                assert message.endswith("add it to server.allowed_origins"), message
            else:
                assert "server.allowed_origins" not in message, message
                assert "never accepted: it is the sandbox origin" in message, message
        for origin in (f"http://127.0.0.1:{port}", "https://ui.example"):
            response = await client.get("/apps/health", headers={"origin": origin})
            assert response.status_code == 200
            assert response.headers["access-control-allow-origin"] == origin
            assert response.headers["access-control-expose-headers"] == "Mcp-Session-Id"


async def test_cors_preflight(project: Project) -> None:
    write(project, f'always_require_auth = true\ntoken = "{TOKEN}"')
    async with supervisor_running(project) as supervisor, http(supervisor) as client:
        own = f"http://127.0.0.1:{supervisor.port}"
        request = {
            "origin": own,
            "access-control-request-method": "POST",
            "access-control-request-headers": "authorization, content-type, mcp-session-id",
        }
        # A browser sends no credentials with a preflight: it must pass without the token.
        response = await client.options("/apps/mcp/grocery-inventory", headers=request)
        assert response.status_code == 204
        allowed = {
            h.strip().lower() for h in response.headers["access-control-allow-headers"].split(",")
        }
        assert {
            "authorization",
            "content-type",
            "mcp-protocol-version",
            "mcp-session-id",
            "mcp-method",
            "mcp-name",
            "last-event-id",
        } <= allowed
        assert "POST" in response.headers["access-control-allow-methods"]
        refused = await client.options("/mcp", headers={**request, "origin": "http://evil.example"})
        assert refused.status_code == 403


# ---- the MCP endpoints -----------------------------------------------------------------------


async def test_both_protocol_eras_reach_the_app_on_its_one_session(grocery: SharedView) -> None:
    """A handshake-era and a 2026-07-28 client on /apps/mcp, and a call through the registry
    (/mcp), all reach the same app process on its one upstream session."""
    supervisor = grocery
    app_url = supervisor.url("/apps/mcp/grocery-inventory")
    async with (
        sdk_client(app_url, "legacy") as legacy,
        sdk_client(app_url, "2026-07-28") as stateless,
        sdk_client(supervisor.url("/mcp"), "legacy") as aggregate,
    ):
        assert legacy.protocol_version == "2025-11-25"
        assert stateless.protocol_version == "2026-07-28"
        names = {t.name for t in (await legacy.list_tools()).tools}
        assert "get_store_dashboard_data" in names  # raw: app-only tools too
        stats = [
            json.loads(await call_text(legacy, "get_server_stats")),
            json.loads(await call_text(stateless, "get_server_stats")),
            json.loads(await call_text(aggregate, "grocery.get_server_stats")),
        ]
    assert len({s["pid"] for s in stats}) == 1
    assert {s["sessions"] for s in stats} == {1}


async def test_aggregate_lists_model_visible_tools_by_public_name(grocery: SharedView) -> None:
    async with sdk_client(grocery.url("/mcp"), "legacy") as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert "grocery.get_inventory" in tools
        assert "grocery.get_store_dashboard_data" not in tools  # app-only
        with pytest.raises(mcp.MCPError) as raised:
            await client.call_tool("nope.tool", {})
        assert "unknown tool 'nope.tool'" in str(raised.value)


async def test_errors_from_the_app_pass_through(project: Project) -> None:
    """The app's own JSON-RPC errors and tool errors reach the client exactly as the app's own
    HTTP endpoint gives them (the app on the same era both ways: it words some errors
    differently on 2026-07-28)."""
    write(project)
    project.config(
        project.config_path.read_text()
        + '\n[apps.entries.grocery-inventory]\nprotocol = "handshake"\n'
    )
    direct = GroceryOverHttp(free_port())
    await direct.start()
    try:
        async with supervisor_running(project) as supervisor:
            seen = []
            for url in (direct.url, supervisor.url("/apps/mcp/grocery-inventory")):
                async with sdk_client(url, "legacy") as client:
                    with pytest.raises(mcp.MCPError) as raised:
                        await client.read_resource("inventory://nowhere/at/all")
                    with pytest.raises(mcp.MCPError) as prompt_error:
                        await client.get_prompt("no_such_prompt", {})
                    tool = await client.call_tool("get_inventory", {"storeId": 999})
                    seen.append(
                        (
                            raised.value.error,
                            prompt_error.value.error,
                            tool.is_error,
                            tool.content[0].text,
                        )
                    )
            assert seen[1] == seen[0]
            assert seen[0][2] is True
    finally:
        await direct.kill()


# ---- bad input -------------------------------------------------------------------------------


async def test_bad_input_gets_clear_errors_and_breaks_nothing(grocery: SharedView) -> None:
    supervisor = grocery
    async with http(supervisor) as client:
        path = "/apps/mcp/grocery-inventory"
        session = await open_session(client, path)

        malformed = await client.post(path, content=b'{"jsonrpc": "2.0", "id": 2,', headers=session)
        assert malformed.status_code == 400
        assert events(malformed)[0]["error"]["code"] == -32700  # parse error

        shapeless = await client.post(path, json={"hello": "world"}, headers=session)
        assert shapeless.status_code == 400
        assert events(shapeless)[0]["error"]["code"] in (-32600, -32602)

        unknown = await client.post(
            path, json={"jsonrpc": "2.0", "id": 3, "method": "no/such"}, headers=session
        )
        assert unknown.status_code == 200
        assert events(unknown)[0]["error"]["code"] == -32601

        huge = await client.post(
            path,
            content=b'{"jsonrpc": "2.0", "id": 4, "method": "ping", "params": {"x": "'
            + b"x" * (5 * 1024 * 1024)
            + b'"}}',
            headers=session,
        )
        assert huge.status_code == 413

        text = await client.post(
            path, content=b"ping", headers={**session, "content-type": "text/plain"}
        )
        assert text.status_code == 415
        assert "Content-Type: application/json" in text.json()["error"]["message"]

        no_accept = await client.post(
            path,
            json={"jsonrpc": "2.0", "id": 5, "method": "ping"},
            headers={**session, "accept": "text/html"},
        )
        assert no_accept.status_code == 406

        # JSON whose text has no UTF-8 form (a lone surrogate): the SDK's parser refuses it.
        lone = (
            b'{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name":'
            b' "get_categories", "arguments": {"x": "\\ud800"}}}'
        )
        refused = await client.post(path, content=lone, headers=session)
        assert events(refused)[-1]["error"]["code"] == -32700

        # Nothing above harmed the session, the app or anyone else.
        call = {
            "jsonrpc": "2.0",
            "id": 6,
            "method": "tools/call",
            "params": {"name": "get_categories", "arguments": {}},
        }
        answer = events(await client.post(path, json=call, headers=session))[-1]
        assert answer["id"] == 6
        assert not answer["result"].get("isError")
        async with sdk_client(supervisor.url(path), "2026-07-28") as other:
            assert await call_text(other, "get_categories")


async def test_an_idle_connection_outlives_the_clients_idle_expiry(grocery: SharedView) -> None:
    """HTTP clients keep an idle connection for about 5 s (httpx's `keepalive_expiry`) and send
    their next request on it until then. A server that also closed idle connections at 5 s
    would race them, and a request sent as the server closes is lost ("Server disconnected
    without sending a response": the proxy benchmark hit it on the app's own endpoint, which
    had Hypercorn's default of 5 s). A connection idle past those 5 s still serves, after a
    route's answer and after the front door's own refusal alike."""
    supervisor = grocery
    idle = CLIENT_IDLE_EXPIRY_S + 1
    health = await statuses_across_an_idle_pause(supervisor.port, "/apps/health", idle)
    assert health == [200, 200]
    refused = await statuses_across_an_idle_pause(supervisor.port, "//apps/health", idle)
    assert refused == [400, 400]


async def test_shutdown_lets_a_call_through_the_front_door_finish(project: Project) -> None:
    """SIGTERM while a call is in flight through /apps/mcp: the front door stops taking new
    requests, the call gets its answer while the app drains, and the supervisor exits 0."""
    write(project, "", ("slow", ()), grocery=False)
    async with supervisor_running(project) as supervisor, http(supervisor) as client:
        path = "/apps/mcp/slow"
        opened = await client.post(path, json=INITIALIZE, headers=MCP_HEADERS)
        session = {**MCP_HEADERS, "mcp-session-id": opened.headers["mcp-session-id"]}
        call = {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "sleep", "arguments": {"seconds": 0.6}},
        }
        answers: list[dict[str, Any]] = []
        async with trio.open_nursery() as nursery:

            async def slow_call() -> None:
                answers.extend(events(await client.post(path, json=call, headers=session)))

            nursery.start_soon(slow_call)
            await supervisor.wait_for_log("fixture: sleep started")
            assert supervisor.process is not None
            supervisor.process.send_signal(signal.SIGTERM)
        assert answers[-1]["result"]["content"][0]["text"] == "slept"
        assert await supervisor.wait() == 0
    assert "received SIGTERM: stopping" in supervisor.log


@pytest.mark.filterwarnings("ignore:resources/subscribe is removed")
async def test_resource_subscriptions_survive_an_app_restart(project: Project) -> None:
    """A handshake-era browser client subscribes through /apps/mcp to the bundled app, which
    speaks 2026-07-28 (no resources/subscribe there: the app actor asks for the resource on its
    `subscriptions/listen` stream). The app's updates reach the client, and still do after the
    app was killed and restarted, without the client doing anything."""
    write(project, extra=MODERN_GROCERY)
    uri = "inventory://stores/1/summary"
    updates: list[str] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, mcp.types.ResourceUpdatedNotification):
            updates.append(str(message.params.uri))

    async with supervisor_running(project) as supervisor:
        url = supervisor.url("/apps/mcp/grocery-inventory")
        transport = http_transport(url, {}, GUARD_S)
        async with mcp.Client(transport, mode="legacy", message_handler=on_message) as client:
            await client.subscribe_resource(uri)
            for round_ in range(2):
                before = len(updates)
                arguments = {"storeId": 1, "productId": 1, "delta": 1}
                await call_text(client, "adjust_stock", arguments)
                with trio.fail_after(GUARD_S):
                    while len(updates) == before:
                        await trio.sleep(0.02)
                assert updates[-1] == uri
                if round_ == 0:
                    pid = json.loads(await call_text(client, "get_server_stats"))["pid"]
                    os.kill(pid, signal.SIGKILL)
                    await supervisor.wait_for_log("grocery-inventory: Failed → Loaded")
                    with trio.fail_after(GUARD_S):
                        while supervisor.log.count("grocery-inventory: Loaded → Running") < 2:
                            await trio.sleep(0.02)


@pytest.mark.filterwarnings("ignore:resources/subscribe is removed")
async def test_an_update_the_app_sends_as_it_agrees_to_a_subscribe_reaches_the_subscriber(
    project: Project,
) -> None:
    """The app's answer to the first subscribe of a resource and its first update come in one
    read: the update is for the client whose subscribe the app was answering, though that
    answer has not reached the app actor yet."""
    project.manifest("apps/fx", fixture_manifest("fx", "--subscribable"))
    project.config('[apps]\ndiscovery_paths = ["./apps"]\n')
    updates: list[str] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, mcp.types.ResourceUpdatedNotification):
            updates.append(str(message.params.uri))

    async with supervisor_running(project) as supervisor:
        transport = http_transport(supervisor.url("/apps/mcp/fx"), {}, GUARD_S)
        async with mcp.Client(transport, mode="legacy", message_handler=on_message) as client:
            uris = [f"fixture://{n}" for n in range(4)]  # each a race the fix must win
            for uri in uris:
                await client.subscribe_resource(uri)
                with trio.fail_after(GUARD_S):
                    while uri not in updates:
                        await trio.sleep(0.02)
        assert updates == uris


async def test_an_update_the_app_sends_as_it_agrees_reaches_a_2026_listen_stream(
    project: Project,
) -> None:
    """The same for a 2026-07-28 client, whose `subscriptions/listen` stream names the
    resource: the handshake-era app is asked to subscribe for it and sends its update in the
    same write as its answer; the update arrives on that stream."""
    project.manifest("apps/fx", fixture_manifest("fx", "--subscribable"))
    project.config('[apps]\ndiscovery_paths = ["./apps"]\n')
    heard: list[list[str]] = []
    async with supervisor_running(project) as supervisor:
        url = supervisor.url("/apps/mcp/fx")
        for n in range(4):  # each a race the subscription must win
            uri = f"fixture://{n}"
            events: list[Any] = []
            async with (
                mcp.Client(http_transport(url, {}, GUARD_S), mode="2026-07-28") as client,
                client.listen(resource_subscriptions=[uri]) as subscription,
            ):
                with trio.fail_after(GUARD_S):
                    async for event in subscription:
                        events.append(event)
                        break
            heard.append([str(getattr(e, "uri", None)) for e in events])
    assert heard == [[f"fixture://{n}"] for n in range(4)]


@pytest.mark.parametrize("app_protocol", ["auto", "handshake"])
async def test_every_client_era_against_every_app_era(project: Project, app_protocol: str) -> None:
    """Clients of both eras list and call (with arguments) on both endpoints, whichever era
    the app behind them speaks: the endpoint shapes each result for its client's era."""
    write(project)
    project.config(
        project.config_path.read_text()
        + f'\n[apps.entries.grocery-inventory]\nprotocol = "{app_protocol}"\n'
    )
    async with supervisor_running(project) as supervisor:
        for mode in ("legacy", "2026-07-28"):
            for path, prefix in (("/apps/mcp/grocery-inventory", ""), ("/mcp", "grocery.")):
                async with sdk_client(supervisor.url(path), mode) as client:
                    names = {t.name for t in (await client.list_tools()).tools}
                    assert f"{prefix}get_inventory" in names, (mode, path)
                    found = json.loads(
                        await call_text(client, f"{prefix}get_inventory", {"storeId": 2})
                    )
                    assert found, (mode, path)
                    assert {row["storeId"] for row in found["items"]} == {2}, (mode, path)
