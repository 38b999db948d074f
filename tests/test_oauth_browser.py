"""Signing in through the control page, in a real browser (Debian's headless Chromium, driven by
Playwright) against a real `mcpapps run` and the protected fixture server with its own
authorization server (tests/apps/oauth_app.py): the app waits in NeedsSignIn with a "Sign in"
button; the button opens the authorization server's consent page in a new tab; its "Approve"
sends the browser back to the front door's callback, and the app becomes Running on the page;
"Sign out" forgets the sign-in and the app waits for the person again.

Synchronous (Playwright's sync API): the supervisor and the fixture run as subprocesses.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from actors.tls import client_tls
from tests.support import chromium, forkserver
from tests.support.helpers import free_port, free_port_pair
from tests.support.running import GUARD_S, environment
from tests.support.signin import OAUTH_APP, secure_manifest

WAIT_MS = GUARD_S * 1000


def wait_until(ready: Any, what: str, log: Path) -> None:
    deadline = time.monotonic() + GUARD_S
    while not ready():
        assert time.monotonic() < deadline, f"{what}:\n{log.read_text()}"
        time.sleep(0.05)


def listening(port: int) -> bool:
    try:
        httpx2.get(f"http://127.0.0.1:{port}/test/stats", verify=client_tls(), timeout=1)
    except httpx2.TransportError:
        return False
    return True


@pytest.fixture
def processes(tmp_path: Path) -> Iterator[tuple[str, list[subprocess.Popen[bytes]]]]:
    """The fixture server and `mcpapps run` with one app that signs in to it: the front
    door's URL."""
    chromium.require()
    started: list[subprocess.Popen[bytes]] = []
    fixture_port, port = free_port(), free_port_pair()
    fixture_log, log = tmp_path / "fixture.log", tmp_path / "mcpapps.log"
    try:
        with fixture_log.open("wb") as errlog:
            command = [forkserver.python(), str(OAUTH_APP), "--port", str(fixture_port)]
            started.append(subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=errlog))
        wait_until(lambda: listening(fixture_port), "the fixture did not listen", fixture_log)
        app = tmp_path / "apps" / "secure"
        app.mkdir(parents=True)
        manifest = secure_manifest(f"http://127.0.0.1:{fixture_port}/mcp")
        (app / "openclaw.mcpapp.json").write_text(json.dumps(manifest))
        (tmp_path / "config.toml").write_text('[apps]\ndiscovery_paths = ["./apps"]\n')
        with log.open("wb") as errlog:
            started.append(
                forkserver.start_mcpapps(
                    ["run"],
                    cwd=tmp_path,
                    env={**environment(), "MCPAPPS_PORT": str(port)},
                    stderr=errlog,
                )
            )
        wait_until(lambda: "ready: " in log.read_text(), "mcpapps did not get ready", log)
        yield f"http://127.0.0.1:{port}", started
    finally:
        for process in reversed(started):
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                process.wait(GUARD_S)


def test_sign_in_and_out_through_the_control_page(
    processes: tuple[str, list[subprocess.Popen[bytes]]], browser: Any
) -> None:
    url, _ = processes
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    try:
        context.set_default_timeout(WAIT_MS)
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto(f"{url}/")
        item = page.locator('#apps li[data-app-id="secure"]')
        item.and_(page.locator('[data-state="NeedsSignIn"]')).wait_for()
        sign_in = item.locator('button[data-command="sign-in"]')
        with context.expect_page() as opened:
            sign_in.click()
        consent = opened.value
        consent.locator("#approve").click()  # the authorization server's own page
        consent.locator("#title").filter(has_text="Signed in").wait_for()
        assert "You are signed in to 'secure'" in consent.locator("#message").inner_text()
        consent.close()

        item.and_(page.locator('[data-state="Running"]')).wait_for()
        assert sign_in.count() == 0
        call = httpx2.post(
            f"{url}/admin/call",
            json={"name": "secure.add", "arguments": {"a": 1, "b": 2}},
            verify=client_tls(),
            timeout=GUARD_S,
        )
        assert call.json()["result"]["content"] == [{"type": "text", "text": "3"}], call.text

        item.locator('button[data-command="logout"]').click()
        item.and_(page.locator('[data-state="NeedsSignIn"]')).wait_for()
        sign_in.wait_for()
        assert "signed out by request" in item.inner_text()
        assert errors == []
    finally:
        context.close()
