"""The load balancer example (deploy/nginx/mcpapps-replicas.conf) with Debian's nginx in front of
two real supervisors that share one real PostgreSQL: an MCP session's requests reach the
supervisor that holds it by the tag in its id (a client that keeps no cookie works), a client
sticks to the supervisor that answered it first by a cookie, the other supervisor does not know
that session (the spec's 404), chat turns go anywhere, and a client whose supervisor died is
moved to the other one."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
from collections.abc import AsyncIterator
from http.cookiejar import CookieJar, DefaultCookiePolicy
from pathlib import Path
from typing import Any

import httpx2
import mcp
import pytest
import trio
from mcp.client.streamable_http import streamable_http_client

from actors.tls import client_tls
from tests.support.chatting import body, chat_data
from tests.support.frontdoor import sdk_client, write
from tests.support.helpers import Project, free_port, wait_for_port
from tests.support.running import GUARD_S, Supervisor, supervisor_running
from web.mcpdoor.affinity import session_tag

EXAMPLE = Path(__file__).parents[1] / "deploy" / "nginx" / "mcpapps-replicas.conf"
DATABASE = '[state]\ndatabase = "${env:CHAT_DATABASE_URL}"\n'
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}
MCP_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


def _nginx() -> str:
    found = shutil.which("nginx") or (
        "/usr/sbin/nginx" if os.path.exists("/usr/sbin/nginx") else None
    )
    if found is None:
        pytest.fail("nginx is not installed: apt-get install -y nginx (make test does it as root)")
    return found


@contextlib.asynccontextmanager
async def nginx_in_front(folder: Path, a: Supervisor, b: Supervisor) -> AsyncIterator[str]:
    """The example, its two addresses made the supervisors', served by nginx on a free port."""
    port = free_port()
    site = EXAMPLE.read_text()
    site = site.replace("127.0.0.1:18789", f"127.0.0.1:{a.port}")
    site = site.replace("127.0.0.1:18791", f"127.0.0.1:{b.port}")
    site = site.replace(session_tag("mcpapps-host:18789"), tag_of(a))
    site = site.replace(session_tag("mcpapps-host:18791"), tag_of(b))
    site = site.replace("listen 8080;", f"listen 127.0.0.1:{port};")
    folder.mkdir()
    (folder / "site.conf").write_text(site)
    temp = " ".join(
        f"{kind}_temp_path {folder / kind};"
        for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    (folder / "nginx.conf").write_text(
        ("user root;\n" if os.geteuid() == 0 else "")
        + f"daemon off;\npid {folder / 'nginx.pid'};\nerror_log {folder / 'error.log'} info;\n"
        + f"events {{}}\nhttp {{\naccess_log off;\n{temp}\ninclude {folder / 'site.conf'};\n}}\n"
    )
    command = [
        _nginx(),
        "-p",
        str(folder),
        "-c",
        str(folder / "nginx.conf"),
        "-e",
        str(folder / "error.log"),
    ]
    process = await trio.lowlevel.open_process(command, stderr=subprocess.PIPE)
    try:
        await wait_for_port(port, process)
        yield f"http://127.0.0.1:{port}"
    finally:
        process.send_signal(signal.SIGQUIT)
        with trio.move_on_after(GUARD_S):
            await process.wait()
        if process.returncode is None:
            process.kill()
            await process.wait()


def tag_of(supervisor: Supervisor) -> str:
    """The tag that starts the MCP session ids the supervisor gives out (its replica id is
    this host's name and its port)."""
    return session_tag(f"{socket.gethostname()}:{supervisor.port}")


@contextlib.asynccontextmanager
async def cookieless(proxy: str, seen: set[str]) -> AsyncIterator[Any]:
    """The official SDK client's transport over an HTTP client that keeps no cookie (as most
    MCP clients), noting the session ids it is answered with in `seen`."""

    async def note(response: httpx2.Response) -> None:
        if "mcp-session-id" in response.headers:
            seen.add(response.headers["mcp-session-id"])

    jar = CookieJar(policy=DefaultCookiePolicy(allowed_domains=[]))
    async with (
        httpx2.AsyncClient(
            verify=client_tls(), cookies=jar, timeout=GUARD_S, event_hooks={"response": [note]}
        ) as http,
        streamable_http_client(f"{proxy}/mcp", http_client=http) as streams,
    ):
        yield streams


def replica_project(root: Path) -> Project:
    root.mkdir()
    project = Project(root)
    write(project, "", ("fx", ()), extra=DATABASE, grocery=False)
    return project


async def test_the_nginx_example_with_two_supervisors(tmp_path: Path, database_url: str) -> None:
    env = {"CHAT_DATABASE_URL": database_url}
    async with (
        supervisor_running(replica_project(tmp_path / "a"), env) as a,
        supervisor_running(replica_project(tmp_path / "b"), env) as b,
        nginx_in_front(tmp_path / "nginx", a, b) as proxy,
    ):
        # The official SDK client keeps the cookie: its session stays on one supervisor.
        async with sdk_client(f"{proxy}/mcp", "legacy") as client:
            for n in range(4):
                result = await client.call_tool("fx.echo", {"text": str(n)})
                assert result.content[0].text == str(n)

        # A client that keeps no cookie: its session id alone takes each request to the
        # supervisor that holds it. Two such clients, so that the pool gives each supervisor
        # one session.
        seen: set[str] = set()
        for _ in range(2):
            async with mcp.Client(cookieless(proxy, seen), mode="legacy") as client:
                for n in range(4):
                    result = await client.call_tool("fx.echo", {"text": str(n)})
                    assert result.content[0].text == str(n)
        assert {session[:10] for session in seen} == {tag_of(a), tag_of(b)}

        async with httpx2.AsyncClient(verify=client_tls(), base_url=proxy, timeout=GUARD_S) as http:
            opened = await http.post("/mcp", json=INITIALIZE, headers=MCP_HEADERS)
            assert opened.status_code == 200, opened.text
            session = opened.headers["mcp-session-id"]
            home = http.cookies["mcpapps_replica"]
            assert home in (f"127.0.0.1:{a.port}", f"127.0.0.1:{b.port}")
            other, dead = (b, a) if home == f"127.0.0.1:{a.port}" else (a, b)
            listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
            headers = {
                **MCP_HEADERS,
                "mcp-session-id": session,
                "mcp-protocol-version": "2025-06-18",
            }
            for _ in range(3):
                assert (await http.post("/mcp", json=listing, headers=headers)).status_code == 200
            # The other supervisor does not know the session: the spec's 404, so a client
            # that reached it initializes again.
            elsewhere = await http.post(other.url("/mcp"), json=listing, headers=headers)
            assert elsewhere.status_code == 404
            assert elsewhere.json()["error"]["message"].startswith("Session not found")

            # A view's lease, too, lives in one supervisor; another says so.
            lease = await http.post(other.url("/apps/views/from-elsewhere/keepalive"))
            assert lease.status_code == 404
            assert "unknown to this supervisor" in lease.json()["error"]["message"]

            # Chat turns go to either: the sessions are shared.
            for n in range(4):
                reply = await chat_data(http, body(f'/call fx.echo {{"text": "{n}"}}', "through"))
                assert reply[2]["text"] == str(n)
            assert (await http.get("/apps/chat/through")).json()["turns"] == 4

            # The client's supervisor goes away: it is moved to the other one.
            await dead.stop(signal.SIGKILL)
            with trio.fail_after(GUARD_S):
                while (await http.get("/apps/health")).status_code != 200:
                    await trio.sleep(0.1)
            assert http.cookies["mcpapps_replica"] == f"127.0.0.1:{other.port}"
