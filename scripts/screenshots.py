"""Regenerate the README's pictures of the control page (docs/images/control-page.png,
grocery-dashboard.png and file-editor.png) from what `make run` shows: `mcpapps run` on a copy of
config.toml with the bundled grocery app and a copy of the sample workspace, on free ports,
driven by Playwright with Debian's chromium at 1400x900.

    .venv/bin/python scripts/screenshots.py

Look at the pictures before committing them. (The browser tests save their own screenshots of
the test-suite apps in .screenshots/; those are not the README's.)
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parent.parent
IMAGES = ROOT / "docs" / "images"
CHROMIUM = "/usr/bin/chromium"
WAIT_S = 60


def free_port_pair() -> int:
    """A port whose next one is free too (the sandbox listens on port + 1)."""
    for _ in range(100):
        with socket.socket() as first:
            first.bind(("127.0.0.1", 0))
            port = first.getsockname()[1]
            with socket.socket() as second:
                try:
                    second.bind(("127.0.0.1", port + 1))
                except OSError:
                    continue
                return port
    raise SystemExit("no two free ports in a row on 127.0.0.1")


def write_config(folder: Path, port: int) -> Path:
    """config.toml as shipped, but on `port`, with its app folder and state in absolute paths,
    and a copy of the sample workspace (a picture never changes the repo's files)."""
    shutil.copytree(ROOT / "workspace", folder / "workspace")
    text = (ROOT / "config.toml").read_text()
    text = re.sub(r"(?m)^port = \d+", f"port = {port}", text, count=1)
    text = text.replace('"./mcpapps"', f'"{ROOT / "mcpapps"}"')
    text = text.replace('"./.mcpapps"', f'"{folder / "state"}"')
    path = folder / "config.toml"
    path.write_text(text)
    return path


def main() -> None:
    bin_dir = Path(sys.executable).parent
    with tempfile.TemporaryDirectory(prefix="mcpapps-shots-") as temp:
        folder = Path(temp)
        port = free_port_pair()
        config = write_config(folder, port)
        log = folder / "mcpapps.log"
        env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
        for name in ("MCPAPPS_PORT", "MCPAPPS_HOST", "MCPAPPS_CONFIG", "MCPAPPS_TOKEN"):
            env.pop(name, None)
        with log.open("wb") as sink:
            process = subprocess.Popen(
                [str(bin_dir / "mcpapps"), "run", "--config", str(config)],
                cwd=folder,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=sink,
            )
        try:
            deadline = time.monotonic() + WAIT_S
            while "ready: " not in log.read_text():
                if process.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(f"mcpapps run did not get ready:\n{log.read_text()}")
                time.sleep(0.1)
            shoot(f"http://127.0.0.1:{port}")
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(WAIT_S)


def shoot(base: str) -> None:
    IMAGES.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        context = browser.new_context(viewport={"width": 1400, "height": 900})
        context.set_default_timeout(WAIT_S * 1000)
        page = context.new_page()
        view = page.frame_locator("#canvas iframe").frame_locator("iframe")

        # The page as it opens: the app selected, its tools, its stderr tail; a question to
        # the chat, and the dashboard of every store opened from the list.
        page.goto(f"{base}/")
        page.locator("#live.live").wait_for()
        page.locator("#tools-visible li").first.wait_for()
        page.fill("#chat-input", '/call grocery.get_low_stock {"storeId": 1}')
        page.click("#chat-send")
        page.locator("#chat-log details.tool .outcome").wait_for()
        page.locator(
            '#tools-visible button.open-view[data-tool="show_store_inventory_dashboard"]'
        ).click()
        view.locator("#rows tr").first.wait_for()
        view.locator("#status", has_text="Updated").wait_for()
        page.mouse.move(0, 0)
        page.screenshot(path=str(IMAGES / "control-page.png"))

        # The dashboard of one store, opened by a chat turn.
        page.click("#canvas-close")
        page.click("#chat-new")
        page.fill("#chat-input", '/call grocery.show_store_inventory_dashboard {"storeId": 1}')
        page.click("#chat-send")
        view.locator("#rows tr").first.wait_for()
        view.locator("#status", has_text="Updated").wait_for()
        page.locator("#chat-send:not([disabled])").wait_for()
        page.mouse.move(0, 0)
        page.screenshot(path=str(IMAGES / "grocery-dashboard.png"))

        # A workspace file open in its editor, from the Files pane: a cell edited, not saved.
        page.click("#canvas-close")
        page.locator('#files button.folder[data-path="inventory"]').click()
        count = page.locator('#files li[data-path="inventory/downtown-market-count.csv"]')
        count.locator("button.viewer").click()
        cell = view.locator('input[aria-label="on_hand of row 2"]')
        cell.wait_for()
        cell.fill("24")
        page.mouse.move(0, 0)
        page.screenshot(path=str(IMAGES / "file-editor.png"))
        context.close()
        browser.close()
    print(f"wrote control-page.png, grocery-dashboard.png and file-editor.png in {IMAGES}")


if __name__ == "__main__":
    main()
