"""Behind a reverse proxy: `[server] public_url` and `[sandbox] public_origin` are the URLs
handed to browsers (path prefix kept); forwarded headers are never trusted for them."""

from __future__ import annotations

import httpx2
import pytest

from actors.tls import client_tls
from supervisor.model.config import ConfigError
from tests.support.helpers import Project
from tests.support.running import FAST, GUARD_S, fixture_manifest, supervisor_running

TOKEN = "pr0xy-token"
PUBLIC = "https://apps.example.com/mcpapps"
FORWARDED = {"x-forwarded-proto": "https", "x-forwarded-host": "evil.example", "forwarded": "for=1"}


def project_with(project: Project, server: str = "", sandbox: str = "") -> None:
    project.manifest("apps/one", fixture_manifest("one"))
    supervision = "\n".join(f"{k} = {v}" for k, v in FAST.items())
    project.config(
        f'[server]\n{server}\n[sandbox]\n{sandbox}\n[apps]\ndiscovery_paths = ["./apps"]\n'
        f"[supervision]\n{supervision}\n"
    )


def test_public_url_and_public_origin_are_checked(project: Project) -> None:
    project_with(project, f'public_url = "{PUBLIC}/"', 'public_origin = "https://sb.example"')
    config = project.load()
    assert config.server.public_url == PUBLIC  # no trailing slash
    assert config.sandbox.origin == "https://sb.example"

    for server, sandbox, wanted in [
        ('public_url = "apps.example.com"', "", "server.public_url 'apps.example.com' must be"),
        (f'public_url = "{PUBLIC}?x=1"', "", "(a path prefix, no query or fragment)"),
        (
            "",
            'public_origin = "https://a.example"\norigin = "https://b.example"',
            "sandbox.public_origin and sandbox.origin are both set: keep one",
        ),
        (
            f'public_url = "{PUBLIC}"',
            'public_origin = "https://apps.example.com"',
            "sandbox.public_origin 'https://apps.example.com' is the origin of server.public_url",
        ),
        ("", 'public_origin = "https://sb.example/x"', "sandbox.public_origin 'https://sb.ex"),
    ]:
        project_with(project, server, sandbox)
        with pytest.raises(ConfigError) as raised:
            project.load()
        assert wanted in str(raised.value), str(raised.value)


async def test_health_and_login_behind_a_prefix(project: Project) -> None:
    project_with(
        project,
        f'public_url = "{PUBLIC}"\ntoken = "{TOKEN}"',
        'public_origin = "https://sandbox.example.com"',
    )
    async with (
        supervisor_running(project) as supervisor,
        httpx2.AsyncClient(
            verify=client_tls(), base_url=supervisor.url(), timeout=GUARD_S
        ) as client,
    ):
        # The proxy passes the public Host on: it is the server's own (no public_hosts needed),
        # and since the world reaches it, a token is required even on a loopback bind.
        public_host = {"host": "apps.example.com"}
        assert (await client.get("/apps/health", headers=public_host)).status_code == 401
        auth = {"authorization": f"Bearer {TOKEN}", **public_host, **FORWARDED}
        body = (await client.get("/apps/health", headers=auth)).json()
        assert body["mcp"] == f"{PUBLIC}/apps/mcp/one"
        assert [a["mcp"] for a in body["apps"]] == [f"{PUBLIC}/apps/mcp/one"]
        assert body["sandbox"] == "https://sandbox.example.com/sandbox"
        # A browser on the public origin is the server's own, whatever Host the proxy sends.
        from_page = {
            **auth,
            "host": f"127.0.0.1:{supervisor.port}",
            "origin": "https://apps.example.com",
        }
        assert (await client.get("/apps/health", headers=from_page)).status_code == 200

        login = await client.get(f"/login?token={TOKEN}", headers=public_host)
        assert login.status_code == 303
        assert login.headers["location"] == f"{PUBLIC}/"


async def test_forwarded_headers_are_not_trusted(project: Project) -> None:
    project_with(project)
    async with (
        supervisor_running(project) as supervisor,
        httpx2.AsyncClient(
            verify=client_tls(), base_url=supervisor.url(), timeout=GUARD_S
        ) as client,
    ):
        body = (await client.get("/apps/health", headers=FORWARDED)).json()
        assert body["mcp"] == f"http://127.0.0.1:{supervisor.port}/apps/mcp/one"
        login = await client.get("/login", headers=FORWARDED)
        assert login.headers["location"] == "/"
