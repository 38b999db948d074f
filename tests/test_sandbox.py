"""The sandbox listener: one page on its own port, with its CSP, and nothing else there."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

import httpx2
import trio

from actors.tls import client_tls
from tests.support.helpers import Project, csp_directives, free_port
from tests.support.running import GUARD_S, environment, fixture_manifest, supervisor_running
from web.sandbox import sandbox_app

TOKEN = "s3cret-token"


def write(project: Project, sandbox: str = "", server: str = "") -> None:
    project.manifest("apps/fx", fixture_manifest("fx", "--report-client"))
    project.config(
        f'[server]\n{server}\n[sandbox]\n{sandbox}\n[apps]\ndiscovery_paths = ["./apps"]\n'
    )


async def test_the_sandbox_serves_its_page_with_its_csp_and_nothing_else(
    project: Project,
) -> None:
    port = free_port()
    write(project, f"port = {port}", f'always_require_auth = true\ntoken = "{TOKEN}"')
    async with (
        supervisor_running(project) as supervisor,
        httpx2.AsyncClient(verify=client_tls(), base_url=f"http://127.0.0.1:{port}") as client,
    ):
        assert f"app sandbox listening on http://127.0.0.1:{port}" in supervisor.log
        page = await client.get("/sandbox")
        assert page.status_code == 200
        assert page.headers["content-type"].startswith("text/html")
        assert page.headers["cache-control"] == "no-store"
        assert page.headers["x-content-type-options"] == "nosniff"
        assert "set-cookie" not in page.headers
        assert "server" not in page.headers  # nothing to tell a scanner what runs here
        assert "date" in page.headers
        assert "proxy-ready" in page.text
        directives = csp_directives(page.headers["content-security-policy"])
        assert directives["connect-src"] == "connect-src 'none'"
        assert directives["default-src"] == "default-src 'none'"
        assert "camera=()" in page.headers["permissions-policy"]

        declared = {
            "connectDomains": ["https://api.example.com", "https://evil.example.com/;x"],
            "resourceDomains": ["https://cdn.example.org"],
        }
        page = await client.get(f"/sandbox?csp={quote(json.dumps(declared))}")
        directives = csp_directives(page.headers["content-security-policy"])
        assert directives["connect-src"] == "connect-src https://api.example.com"
        assert "https://cdn.example.org" in directives["script-src"]
        assert "evil" not in page.headers["content-security-policy"]

        # Many refused entries in one page's query are one line of the log, not one each.
        many = {"connectDomains": [str(n) for n in range(300)]}
        page = await client.get(f"/sandbox?csp={quote(json.dumps(many))}")
        assert page.status_code == 200
        with trio.fail_after(GUARD_S):
            while "299 more entries refused" not in supervisor.log:
                await trio.sleep(0.05)
        assert supervisor.log.count("sandbox: ") == 2  # this page's line and the one above

        # Garbage in the query is the most restrictive policy, not an error page.
        page = await client.get("/sandbox?csp=%7Bnot-json")
        assert csp_directives(page.headers["content-security-policy"])["connect-src"] == (
            "connect-src 'none'"
        )

        # Authenticated routes, the control UI and the login are not served there, even
        # with the token.
        auth = {"authorization": f"Bearer {TOKEN}"}
        for path in ("/", "/apps/health", "/admin/apps", f"/login?token={TOKEN}", "/sandbox/"):
            response = await client.get(path, headers=auth)
            assert response.status_code == 404, path
            assert "set-cookie" not in response.headers
        assert (await client.post("/sandbox", content=b"{}")).status_code == 404
        # The main port still serves its own routes (and not the sandbox page).
        main = await client.get(supervisor.url("/sandbox"), headers=auth)
        assert main.status_code == 404


async def test_sandbox_off_means_no_listener_and_no_ui_extension(project: Project) -> None:
    port = free_port()
    write(project, f"enabled = false\nport = {port}")
    async with (
        supervisor_running(project) as supervisor,
        httpx2.AsyncClient(verify=client_tls()) as client,
    ):
        assert "app sandbox listening" not in supervisor.log
        try:
            await client.get(f"http://127.0.0.1:{port}/sandbox")
        except httpx2.ConnectError:
            pass
        else:
            raise AssertionError("the sandbox port answered with the sandbox off")
        health = (await client.get(supervisor.url("/apps/health"))).json()
        assert health["sandbox"] is None
        called = await client.post(
            supervisor.url("/admin/call"),
            json={"name": "fx.client_capabilities", "arguments": {}},
        )
        caps = json.loads(called.json()["text"])
        assert "io.modelcontextprotocol/ui" not in caps.get("extensions", {})


async def test_a_taken_sandbox_port_is_one_clear_line(project: Project) -> None:
    with trio.socket.socket() as taken:
        await taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        write(project, f"port = {port}")
        command = [str(Path(sys.executable).parent / "mcpapps"), "run"]
        env = {**environment(), "MCPAPPS_PORT": str(free_port())}
        with trio.fail_after(GUARD_S):
            done = await trio.run_process(
                command,
                cwd=project.root,
                env=env,
                capture_stderr=True,
                check=False,
                stdout=subprocess.DEVNULL,
            )
    assert done.returncode == 1
    last = done.stderr.decode().strip().splitlines()[-1]
    assert last.startswith(f"mcpapps: error: cannot serve the app sandbox on 127.0.0.1:{port}:")
    assert "Traceback" not in done.stderr.decode()


async def test_has_ui_is_what_the_catalog_shows(project: Project) -> None:
    project.manifest("apps/claims", fixture_manifest("claims", hasUi=True))  # serves no UI
    project.manifest("apps/serves", fixture_manifest("serves", "--app-only"))  # hasUi unset
    project.config('[apps]\ndiscovery_paths = ["./apps"]\n')
    async with (
        supervisor_running(project) as supervisor,
        httpx2.AsyncClient(verify=client_tls()) as client,
    ):
        health = (await client.get(supervisor.url("/apps/health"))).json()
        shown = {a["id"]: a["hasUi"] for a in health["apps"]}
        assert shown == {"claims": False, "serves": True}
        assert health["name"] == "serves"  # the first Running app with a UI


async def _page(query: bytes, allow_for: object) -> tuple[dict[str, str], str]:
    """One GET /sandbox through the sandbox's ASGI app: its headers and its page."""
    sent: list[dict[str, object]] = []

    async def receive() -> dict[str, object]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, object]) -> None:
        sent.append(message)

    scope = {"type": "http", "path": "/sandbox", "method": "GET", "query_string": query}
    await sandbox_app(scope, receive, send, allow_for)  # type: ignore[arg-type]
    headers = {k.decode(): v.decode() for k, v in sent[0]["headers"]}  # type: ignore[union-attr]
    return headers, sent[1]["body"].decode()  # type: ignore[union-attr]


async def test_the_app_s_allowances_come_from_config_and_the_page_is_told() -> None:
    def allow_for(app_id: str) -> frozenset[str]:
        return frozenset({"unsafe-eval"}) if app_id == "three" else frozenset()

    declared = quote(
        json.dumps({"connectDomains": ["https://api.example.com", "https://x/</script>"]})
    )
    headers, page = await _page(f"app=three&csp={declared}".encode(), allow_for)
    script = csp_directives(headers["content-security-policy"])["script-src"]
    assert "'unsafe-eval'" in script
    applied = page.split('id="applied">', 1)[1].split("</script>", 1)[0]
    assert json.loads(applied) == {
        "csp": {"connectDomains": ["https://api.example.com"]},
        "allowed": ["unsafe-eval"],
    }
    # Another app, or none, gets the default policy.
    for query in (b"app=other", b""):
        headers, page = await _page(query, allow_for)
        assert "unsafe-eval" not in headers["content-security-policy"]
        assert '"allowed": []' in page
