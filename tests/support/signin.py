"""The sign-in tests' parts: the protected fixture server (tests/apps/oauth_app.py, its own
authorization server inside) as a subprocess, an app that signs in to it, and the person's
part of a sign-in done over HTTP (what the consent page's button does)."""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx2
import trio

from actors.tls import client_tls
from tests.support import forkserver
from tests.support.frontdoor import stop
from tests.support.helpers import free_port, wait_for_port
from tests.support.running import GUARD_S

OAUTH_APP = Path(__file__).parents[1] / "apps" / "oauth_app.py"


class Protected:
    """The fixture: `url` is its MCP endpoint, `base` its authorization server."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.base = f"http://127.0.0.1:{port}"
        self.url = f"{self.base}/mcp"

    async def stats(self) -> dict[str, Any]:
        async with httpx2.AsyncClient(verify=client_tls(), timeout=GUARD_S) as http:
            return (await http.get(f"{self.base}/test/stats")).json()

    async def revoke(self, *, access: bool = False, refresh: bool = False) -> None:
        async with httpx2.AsyncClient(verify=client_tls(), timeout=GUARD_S) as http:
            body = {"access": access, "refresh": refresh}
            (await http.post(f"{self.base}/test/revoke", json=body)).raise_for_status()

    async def approve(self, sign_in_url: str) -> str:
        """The person opens `sign_in_url` and approves: where their browser is sent back."""
        async with httpx2.AsyncClient(verify=client_tls(), timeout=GUARD_S) as http:
            authorize = await http.get(sign_in_url)  # the SDK's /authorize: to our consent page
            assert authorize.status_code == 302, authorize.text
            code = parse_qs(urlsplit(authorize.headers["location"]).query)["code"][0]
            answer = await http.post(f"{self.base}/test/approve", json={"code": code})
            return str(answer.json()["callback"])


@contextlib.asynccontextmanager
async def protected_server(log: Path, *options: str) -> AsyncIterator[Protected]:
    server = Protected(free_port())
    command = [forkserver.python(), str(OAUTH_APP), "--port", str(server.port), *options]
    with log.open("wb") as errlog:
        process = await trio.lowlevel.open_process(
            command, stdout=subprocess.DEVNULL, stderr=errlog
        )
        try:
            await wait_for_port(server.port, process)
            yield server
        finally:
            with trio.CancelScope(shield=True):
                await stop(process)


def secure_manifest(url: str, **fields: Any) -> dict[str, Any]:
    return {
        "id": "secure",
        "transport": "http",
        "url": url,
        "auth": "oauth",
        "toolNamePrefix": "secure.",
        "startupTimeoutSeconds": 20,
        **fields,
    }
