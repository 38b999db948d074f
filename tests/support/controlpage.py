"""The control page as the browser tests drive it: `mcpapps run` on a project folder
(`Served`), the `page` fixture (a context of its own per test, failing the test on a script
error or on anything the page's own Content-Security-Policy refused), and the few locators the
browser modules share (an app in the list, the view's document, a script run in it)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx2
import pytest

from actors.tls import client_tls
from tests.support import forkserver
from tests.support.running import GUARD_S, environment

SCREENSHOTS = Path(
    os.environ.get("MCPAPPS_SCREENSHOTS", Path(__file__).parents[2] / ".screenshots")
)
TOKEN = "browser-s3cret"
WAIT_MS = GUARD_S * 1000


class Served:
    """`mcpapps run` on a project folder, in a subprocess, until stopped."""

    def __init__(self, root: Path, port: int) -> None:
        self.root = root
        self.port = port
        self.log_path = root / "mcpapps.log"
        self.process: subprocess.Popen[bytes] | forkserver.ForkedProcess | None = None

    def start(self) -> None:
        with self.log_path.open("wb") as log:
            self.process = forkserver.start_mcpapps(
                ["run"],
                cwd=self.root,
                env={**environment(), "MCPAPPS_PORT": str(self.port)},
                stderr=log,
            )
        deadline = time.monotonic() + GUARD_S
        while "ready: " not in self.log_path.read_text():
            assert self.process.poll() is None, self.log_path.read_text()
            assert time.monotonic() < deadline, self.log_path.read_text()
            time.sleep(0.05)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(GUARD_S)

    def url(self, path: str = "/") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def api(self, path: str, **kwargs: Any) -> Any:
        headers = {"authorization": f"Bearer {TOKEN}"}
        response = httpx2.get(
            self.url(path), headers=headers, verify=client_tls(), timeout=GUARD_S, **kwargs
        )
        return response.json()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A page in a browser context of its own (the browser is conftest.py's, one per worker).
    A module uses it by importing it by name."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    context.set_default_timeout(WAIT_MS)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("console", lambda message: refused(page, message, errors))
    yield page
    context.close()
    assert errors == [], errors  # no script error, nothing the page's CSP refused


def refused(page: Any, message: Any, errors: list[str]) -> None:
    """A console line where the control page's own Content-Security-Policy refused something
    (the views' frames, from the sandbox origin, have theirs, whose refusals are expected)."""
    if message.type != "error" or "Content Security Policy" not in message.text:
        return
    where, page_at = urlsplit(message.location.get("url", "")), urlsplit(page.url)
    if (where.scheme, where.netloc) == (page_at.scheme, page_at.netloc):
        errors.append(message.text)


def screenshot(page: Any, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / name))


def app_item(page: Any, app_id: str) -> Any:
    return page.locator(f'#apps li[data-app-id="{app_id}"]')


def view(page: Any) -> Any:
    """The app's document: the inner frame of the sandbox page in the canvas."""
    return page.frame_locator("#canvas iframe").frame_locator("iframe")


def in_view(page: Any, script: str) -> Any:
    """Run `script` in the app's own document (its functions, e.g. `request`, are in scope)."""
    return view(page).locator("body").evaluate(f"async () => {{ {script} }}")
