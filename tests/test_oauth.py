"""Apps that sign in (`auth = "oauth"`): a real `mcpapps run` and a real protected MCP server
with its own authorization server (tests/apps/oauth_app.py, the SDK's server-side auth), on
loopback. The person's part is done over HTTP here (the consent page's button); the browser's
way through the control page is in tests/test_oauth_browser.py.

Shown here: first start waits in NeedsSignIn (health, admin API, `mcpapps apps`); a wrong
`state` is refused; the sign-in starts the app and its tools work through `/apps/mcp/<id>` and
`/mcp`; the token file is 0600 and its tokens are in no log and no admin answer; a restart of
the supervisor keeps the sign-in; an expiring token is refreshed without the person; a revoked
refresh token puts the app back to NeedsSignIn with the reason; `mcpapps logout` forgets it;
a client registered by hand; and the manifest's rules.
"""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx2
import trio

from actors.tls import client_tls
from supervisor.model.manifest import manifest_problems, structure_manifest
from tests.support.frontdoor import sdk_client, write_config
from tests.support.helpers import Project, free_port_pair, run_mcpapps
from tests.support.running import GUARD_S, Supervisor, supervisor_running
from tests.support.signin import Protected, protected_server, secure_manifest

TOKEN_FILE = Path(".mcpapps") / "signin" / "secure.json"


async def app_status(supervisor: Supervisor, app_id: str = "secure") -> dict[str, Any]:
    async with httpx2.AsyncClient(verify=client_tls(), timeout=GUARD_S) as http:
        return (await http.get(supervisor.url(f"/admin/apps/{app_id}"))).json()


async def wait_state(
    supervisor: Supervisor, state: str, *, sign_in: bool = False, app_id: str = "secure"
) -> dict[str, Any]:
    """Until the app is in `state` (with its sign-in URL, if `sign_in`)."""
    with trio.fail_after(GUARD_S):
        while True:
            status = await app_status(supervisor, app_id)
            if status["state"] == state and (status.get("signInUrl") or not sign_in):
                return status
            await trio.sleep(0.05)


async def sign_in(supervisor: Supervisor, server: Protected) -> None:
    status = await wait_state(supervisor, "NeedsSignIn", sign_in=True)
    callback = await server.approve(status["signInUrl"])
    assert callback.startswith(supervisor.url("/apps/oauth/callback/secure?"))
    async with httpx2.AsyncClient(verify=client_tls(), timeout=GUARD_S) as http:
        answer = await http.get(callback)
    assert answer.status_code == 200, answer.text
    assert "signed in to &#x27;secure&#x27;" in answer.text
    await wait_state(supervisor, "Running")


async def add_through_app_endpoint(supervisor: Supervisor) -> Any:
    async with sdk_client(supervisor.url("/apps/mcp/secure"), "legacy") as client:
        return await client.call_tool("add", {"a": 2, "b": 3})


async def add_through_mcp(supervisor: Supervisor) -> Any:
    async with sdk_client(supervisor.url("/mcp"), "legacy") as client:
        return await client.call_tool("secure.add", {"a": 20, "b": 22})


def no_backoff_for_the_sign_in(log: str) -> None:
    """A sign-in lost is no failure: the app never went Failed for it, so no restart was
    counted and no backoff spent. (Checked in the log rather than as `restarts == 0`: the
    fixture server rarely drops the first connection of the next incarnation, a failure of
    its own, which is then rightly counted.)"""
    assert "→ Failed: needs a new sign-in" not in log


def text_of(result: Any) -> str:
    assert not result.is_error, result
    return result.content[0].text


async def test_sign_in_runs_the_app_and_survives_a_restart_of_the_supervisor(
    project: Project, tmp_path: Path
) -> None:
    async with protected_server(tmp_path / "fixture.log") as server:
        project.manifest("apps/secure", secure_manifest(server.url))
        write_config(project)
        async with supervisor_running(project) as supervisor:
            status = await wait_state(supervisor, "NeedsSignIn", sign_in=True)
            assert status["auth"] == "oauth"
            assert status["signInUrl"].startswith(f"{server.base}/authorize?")
            assert "code_challenge_method=S256" in status["signInUrl"]
            assert "resource=http" in status["signInUrl"]
            assert status["restarts"] == 0
            assert not status["gaveUp"]
            async with httpx2.AsyncClient(verify=client_tls(), timeout=GUARD_S) as http:
                health = (await http.get(supervisor.url("/apps/health"))).json()
            assert [a["state"] for a in health["apps"]] == ["NeedsSignIn"]
            async with httpx2.AsyncClient(verify=client_tls(), timeout=GUARD_S) as http:
                refused = await http.post(
                    supervisor.url("/apps/mcp/secure"),
                    json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                    headers={"accept": "application/json, text/event-stream"},
                )
            assert refused.status_code == 503
            assert "a person must sign in for it" in refused.json()["error"]["message"]
            port = {"MCPAPPS_PORT": str(supervisor.port)}
            listed = await trio.to_thread.run_sync(
                lambda: run_mcpapps("apps", cwd=project.root, env=port)
            )
            assert "NeedsSignIn" in listed.stdout
            assert "press Sign in for it on the control page" in listed.stdout

            # An answer whose state is not the sign-in's is refused, and changes nothing.
            async with httpx2.AsyncClient(verify=client_tls(), timeout=GUARD_S) as http:
                wrong = await http.get(
                    supervisor.url("/apps/oauth/callback/secure"),
                    params={"code": "stolen", "state": "not-the-state"},
                )
            assert wrong.status_code == 400
            assert "its state does not match" in wrong.text
            assert "Sign-in refused" in wrong.text
            await wait_state(supervisor, "NeedsSignIn", sign_in=True)

            await sign_in(supervisor, server)
            assert text_of(await add_through_app_endpoint(supervisor)) == "5"
            assert text_of(await add_through_mcp(supervisor)) == "42"
            stats = await server.stats()
            assert stats["registrations"] == 1
            assert stats["authorizations"] == 1
            assert stats["resources"] == [server.url]  # RFC 8707: the token is for this server
            assert stats["scopes"] == [["notes"]]  # what the server names (PRM)

            token_file = project.root / TOKEN_FILE
            assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
            assert stat.S_IMODE(token_file.parent.stat().st_mode) == 0o700
            saved = json.loads(token_file.read_text())
            secrets = [saved["token"]["access_token"], saved["token"]["refresh_token"]]
            async with httpx2.AsyncClient(verify=client_tls(), timeout=GUARD_S) as http:
                answers = [
                    (await http.get(supervisor.url(path))).text
                    for path in ("/admin/apps", "/admin/apps/secure", "/admin/tools", "/metrics")
                ]
            for secret in secrets:
                assert all(secret not in answer for answer in answers)
                assert secret not in supervisor.log
            assert "a person must sign in" in supervisor.log
            assert "signed in; connecting" in supervisor.log

        # A new supervisor reads the sign-in back: no person needed.
        async with supervisor_running(project) as supervisor:
            await wait_state(supervisor, "Running")
            assert text_of(await add_through_app_endpoint(supervisor)) == "5"
            assert "NeedsSignIn" not in supervisor.log
        assert (await server.stats())["authorizations"] == 1


async def test_an_expiring_token_is_refreshed_and_a_revoked_one_asks_the_person_again(
    project: Project, tmp_path: Path
) -> None:
    async with protected_server(tmp_path / "fixture.log", "--token-seconds", "2") as server:
        project.manifest("apps/secure", secure_manifest(server.url))
        write_config(project)
        async with supervisor_running(project) as supervisor:
            await sign_in(supervisor, server)
            await trio.sleep(2.5)  # the first token has expired by now
            assert text_of(await add_through_app_endpoint(supervisor)) == "5"
            stats = await server.stats()
            assert stats["refreshes"] >= 1
            assert stats["authorizations"] == 1  # refreshed without the person
            assert (await app_status(supervisor))["state"] == "Running"

            # The server forgets its access tokens: the refresh token still renews the sign-in
            # (a 401 with a token the clock calls good is refreshed, not sent to the person).
            before = (await server.stats())["refreshes"]
            await server.revoke(access=True)
            assert text_of(await add_through_app_endpoint(supervisor)) == "5"
            assert (await server.stats())["refreshes"] > before
            assert (await app_status(supervisor))["restarts"] == 0

            # Both revoked: the refresh is refused, and the app needs the person again.
            await server.revoke(access=True, refresh=True)
            status = await wait_state(supervisor, "NeedsSignIn", sign_in=True)
            assert "refused to renew the sign-in" in status["lastError"]
            assert "invalid_grant" in status["lastError"]
            no_backoff_for_the_sign_in(supervisor.log)
            assert not status["gaveUp"]
            saved = json.loads((project.root / TOKEN_FILE).read_text())
            assert "token" not in saved  # the dead token is forgotten; the client kept
            await sign_in(supervisor, server)
            assert (await server.stats())["registrations"] == 1


async def test_logout_forgets_the_sign_in(project: Project, tmp_path: Path) -> None:
    async with protected_server(tmp_path / "fixture.log") as server:
        project.manifest("apps/secure", secure_manifest(server.url))
        write_config(project)
        async with supervisor_running(project) as supervisor:
            await sign_in(supervisor, server)
            port = {"MCPAPPS_PORT": str(supervisor.port)}
            out = await trio.to_thread.run_sync(
                lambda: run_mcpapps("logout", "secure", cwd=project.root, env=port)
            )
            assert out.returncode == 0, out.stderr
            assert "secure: NeedsSignIn: waits for a person to sign in" in out.stdout
            status = await wait_state(supervisor, "NeedsSignIn", sign_in=True)
            # Forgotten whole; the new connection's registration is all the file holds now.
            assert set(json.loads((project.root / TOKEN_FILE).read_text())) == {"client"}
            assert status["lastError"] == "needs a new sign-in: signed out by request"
            no_backoff_for_the_sign_in(supervisor.log)
            await sign_in(supervisor, server)
            async with httpx2.AsyncClient(verify=client_tls(), timeout=GUARD_S) as http:
                refused = await http.post(supervisor.url("/admin/apps/nope/logout"))
            assert refused.status_code == 404


async def test_a_sign_in_the_person_refuses_is_asked_again(
    project: Project, tmp_path: Path
) -> None:
    async with protected_server(tmp_path / "fixture.log") as server:
        project.manifest("apps/secure", secure_manifest(server.url))
        write_config(project)
        async with supervisor_running(project) as supervisor:
            first = (await wait_state(supervisor, "NeedsSignIn", sign_in=True))["signInUrl"]
            state = parse_qs(urlsplit(first).query)["state"][0]
            async with httpx2.AsyncClient(verify=client_tls(), timeout=GUARD_S) as http:
                refused = await http.get(
                    supervisor.url("/apps/oauth/callback/secure"),
                    params={"error": "access_denied", "state": state},
                )
            assert refused.status_code == 400
            assert "did not sign you in to app &#x27;secure&#x27; (access_denied)" in refused.text
            with trio.fail_after(GUARD_S):
                while True:
                    status = await wait_state(supervisor, "NeedsSignIn", sign_in=True)
                    if status["signInUrl"] != first:
                        break
                    await trio.sleep(0.05)
            # Asked again at once; the reason stays its lastError while it waits.
            assert status["lastError"] == (
                "needs a new sign-in: the sign-in was refused (access_denied)"
            )
            no_backoff_for_the_sign_in(supervisor.log)
            await sign_in(supervisor, server)


async def test_a_client_registered_by_hand(project: Project, tmp_path: Path) -> None:
    port = free_port_pair()
    callback = f"http://127.0.0.1:{port}/apps/oauth/callback/secure"
    options = ("--client", "mcpapps-test:sesame", "--redirect", callback)
    async with protected_server(tmp_path / "fixture.log", *options) as server:
        project.manifest("apps/secure", secure_manifest(server.url))
        entry = {
            "client_id": "mcpapps-test",
            "client_secret": "${env:SECURE_SECRET}",
            "scopes": ["notes", "extra"],  # more than the server names: asked as configured
        }
        write_config(project, {"secure": entry})
        env = {"MCPAPPS_PORT": str(port), "SECURE_SECRET": "sesame"}
        async with supervisor_running(project, extra_env=env) as supervisor:
            await sign_in(supervisor, server)
            assert text_of(await add_through_app_endpoint(supervisor)) == "5"
            assert "sesame" not in supervisor.log
        stats = await server.stats()
        assert stats["registrations"] == 0
        assert stats["scopes"] == [["notes", "extra"]]
        saved = json.loads((project.root / TOKEN_FILE).read_text())
        assert "client" not in saved  # the config's client is not copied into the file


def problems(**fields: Any) -> list[str]:
    manifest, typed = structure_manifest({"id": "a", **fields})
    errors, _ = manifest_problems(manifest, {})
    return [why for _, why in typed] + [why for _, why in errors]


def test_the_manifest_rules_of_signing_in() -> None:
    http = {"transport": "http", "url": "http://127.0.0.1:1/mcp"}
    assert problems(auth="oauth", scopes=["notes", "extra"], clientId="c", **http) == []
    assert problems(auth="basic", **http) == [
        "'auth' \"basic\" is not supported: use 'oauth' (a person signs in to the app's"
        " authorization server) or 'none'"
    ]
    assert problems(auth="oauth", command="x") == [
        "'auth' is 'oauth' but the transport is \"stdio\": signing in is for http apps (a stdio"
        " app gets its secrets through 'environment')"
    ]
    assert problems(auth="oauth", transport="sse", url="http://127.0.0.1:1/sse") == [
        "'auth' is 'oauth' but the transport is \"sse\": signing in is for http apps (a stdio"
        " app gets its secrets through 'environment')"
    ]
    assert problems(clientId="c", **http) == [
        "'clientId' is given but 'auth' is not 'oauth': set 'auth' to 'oauth' or remove 'clientId'"
    ]
    assert problems(auth="oauth", scopes=["a b"], **http) == [
        "'scopes' item \"a b\" is not one OAuth scope: write each scope as its own item,"
        " without spaces or quotes"
    ]
    assert problems(auth="oauth", clientSecret="s", **http) == [
        "'clientSecret' is given without 'clientId': give both (a client registered with the"
        " authorization server), or neither"
    ]
    assert problems(auth="oauth", headers={"authorization": "Bearer x"}, **http) == [
        "'headers' \"authorization\" would replace the token of the sign-in ('auth' is"
        " 'oauth'): remove the header"
    ]
    assert problems(auth="oauth", scopes="notes", **http) == ['must be a list, got "notes"']


def test_an_entry_sets_the_sign_in_and_its_problems_name_the_entry(project: Project) -> None:
    project.manifest("apps/remote", {"id": "remote", "command": "python3"})
    project.config(
        '[apps]\ndiscovery_paths = ["./apps"]\n'
        '[apps.entries.remote]\nauth = "oauth"\nscopes = ["notes"]\n'
    )
    [app] = project.discover().apps
    assert [p.message for p in app.errors] == [
        "'auth' is 'oauth' but the transport is \"stdio\": signing in is for http apps (a stdio"
        " app gets its secrets through 'environment') (set by apps.entries.remote.auth in"
        " config.toml)"
    ]
