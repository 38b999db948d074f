"""The Files pane and file views in a real browser (Debian's headless Chromium, driven by
Playwright) against a real `mcpapps run` with the bundled grocery app and a workspace of real
files: the pane lists the workspace (folders first, hidden names left out, live as files
change, a folder drawn again only when its listing changed), a CSV opens from it in the app's
inventory sheet through an opaque host resource, a cell edited and saved (after the person's
approval, as a write) changes the file on disk, an edit on disk reaches the open sheet, and
`/?file=` opens a file directly or says why not.

Synchronous (Playwright's sync API), as tests/test_browser.py: the supervisor is a subprocess.
"""

from __future__ import annotations

import json
import shutil
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from tests.support import chromium, forkserver
from tests.support.helpers import free_port_pair
from tests.support.running import GROCERY, GUARD_S, environment

WAIT_MS = GUARD_S * 1000
CSV = 'sku,product,on_hand\nPRD-APL-GALA,Gala Apples,42\nDRY-MLK-2PC,"2% Milk, 1 gal",31\n'
SHEET = "grocery.open_inventory_file"
EDITOR_APP = Path(__file__).parent / "apps" / "editor_app.py"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    chromium.require()
    root = tmp_path_factory.mktemp("files-browser")
    shutil.copytree(GROCERY, root / "apps" / "grocery-inventory")
    workspace = root / "workspace"
    (workspace / "inventory").mkdir(parents=True)
    (workspace / "inventory" / "count.csv").write_text(CSV)
    (workspace / "inventory" / "other.csv").write_text(CSV)
    (workspace / "a-notes.md").write_text("no viewer for this one\n")
    (workspace / ".hidden.csv").write_text("never listed\n")
    (workspace / "notes").mkdir()
    (workspace / "notes" / "a.txt").write_text("a\n")
    (workspace / "notes" / "other.txt").write_text("other\n")
    editor = root / "apps" / "editor"
    editor.mkdir()
    (editor / "openclaw.mcpapp.json").write_text(
        json.dumps(
            {
                "id": "editor",
                "command": forkserver.python(),
                "arguments": [str(EDITOR_APP)],
                "toolNamePrefix": "editor.",
            }
        )
    )
    port = free_port_pair()
    (root / "config.toml").write_text(
        f"[sandbox]\nport = {port + 1}\n"
        '[apps]\ndiscovery_paths = ["./apps"]\n[workspace]\nroot = "workspace"\n'
    )
    log_path = root / "mcpapps.log"
    with log_path.open("wb") as log:
        process = forkserver.start_mcpapps(
            ["run"], cwd=root, env={**environment(), "MCPAPPS_PORT": str(port)}, stderr=log
        )
    try:
        # Ready, and both apps running: a file's viewers are the running apps' (the pane lists
        # them as it opens).
        wanted = (
            "ready: ",
            "app grocery-inventory: Loaded → Running",
            "app editor: Loaded → Running",
        )
        deadline = time.monotonic() + GUARD_S
        while not all(line in log_path.read_text() for line in wanted):
            assert process.poll() is None, log_path.read_text()
            assert time.monotonic() < deadline, log_path.read_text()
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}", workspace
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(GUARD_S)


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    context.set_default_timeout(WAIT_MS)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    try:
        yield page
    finally:
        context.close()
    assert errors == [], errors


def view(page: Any) -> Any:
    """The app's document: the inner frame of the sandbox page in the canvas."""
    return page.frame_locator("#canvas iframe").frame_locator("iframe")


def cell(page: Any, column: str, row: int) -> Any:
    return view(page).locator(f'input[aria-label="{column} of row {row}"]')


def pane_names(page: Any, folder: str = "") -> list[str]:
    """The names the Files pane shows in `folder`, in order."""
    items = page.locator(f'#files li[data-path="{folder}"] > ul > li' if folder else "#files > li")
    return [n.strip() for n in items.evaluate_all("els => els.map(e => e.dataset.path)")]


def test_a_csv_opened_from_the_files_pane_is_edited_and_saved(
    served: tuple[str, Path], page: Any
) -> None:
    base, workspace = served
    page.goto(f"{base}/")
    page.locator("#files-pane:not([hidden])").wait_for()
    page.locator('#files li[data-path="a-notes.md"]').wait_for()
    assert pane_names(page) == [
        "inventory",
        "notes",
        "a-notes.md",
    ]  # folders first, no hidden names
    assert "no viewer" in page.locator('#files li[data-path="a-notes.md"]').inner_text()

    page.locator('#files button.folder[data-path="inventory"]').click()
    count = page.locator('#files li[data-path="inventory/count.csv"]')
    count.locator("button.viewer", has_text="Inventory sheet").click()
    cell(page, "on_hand", 1).wait_for()
    assert view(page).locator("#title").inner_text() == "count.csv"
    assert "count.csv" in page.locator("#canvas-title").inner_text()
    assert cell(page, "product", 2).input_value() == "2% Milk, 1 gal"

    # A save is a write: the person allows it, while the sheet is open.
    cell(page, "on_hand", 1).fill("40")
    view(page).locator("#save").click()
    page.locator("#approval:not([hidden])").wait_for()
    said = page.locator("#approval-text").inner_text()
    assert said == "The app 'grocery-inventory' wants to save inventory/count.csv"
    page.click("#approval-open")
    view(page).locator("#status", has_text="Saved.").wait_for()
    assert (workspace / "inventory" / "count.csv").read_text() == CSV.replace(",42", ",40")

    # An edit on disk, by another program, reaches the open sheet (it holds no edits).
    (workspace / "inventory" / "count.csv").write_text(CSV + "BKY-SOUR-LF,Sourdough Loaf,7\n")
    cell(page, "product", 3).wait_for()
    assert cell(page, "product", 3).input_value() == "Sourdough Loaf"

    # The pane is live: a new file shows up without a reload.
    (workspace / "inventory" / "new.csv").write_text(CSV)
    page.locator('#files li[data-path="inventory/new.csv"]').wait_for()


def test_a_redraw_leaves_the_folders_that_did_not_change_in_place(
    served: tuple[str, Path], page: Any
) -> None:
    """Each change on disk reads the folders shown again, but draws a folder again only when
    its listing changed: a button pressed while the pane is read again stays the one pressed
    (released on its replacement, a press is no click)."""
    base, workspace = served
    page.goto(f"{base}/")
    page.locator('#files button.folder[data-path="inventory"]').click()
    viewer = page.locator('#files li[data-path="inventory/count.csv"] button.viewer')
    viewer.wait_for()
    held = [
        page.locator('#files button.folder[data-path="inventory"]').element_handle(),
        viewer.element_handle(),
    ]
    # Written inside a closed folder: no folder shown changes (a file's new content does not
    # change its folder's time), but the pane reads the root and the open folder again.
    with page.expect_response(lambda r: r.url.endswith("/apps/files?path=inventory")) as read:
        (workspace / "notes" / "a.txt").write_text("a, again\n")
    read.value.finished()
    # The page's handling of that answer has run once two frames have been drawn after it.
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
    assert [each.evaluate("e => e.isConnected") for each in held] == [True, True]


def test_a_link_opens_a_file_directly_or_says_why_not(served: tuple[str, Path], page: Any) -> None:
    base, _ = served
    page.goto(f"{base}/?file={quote('inventory/other.csv')}&with={SHEET}")
    cell(page, "on_hand", 2).wait_for()
    assert view(page).locator("#title").inner_text() == "other.csv"

    page.goto(f"{base}/?file={quote('../outside.csv')}")
    refusal = page.locator("#canvas .refusal")
    refusal.wait_for()
    assert "outside" in refusal.inner_text() or "climbs out" in refusal.inner_text()

    page.goto(f"{base}/?file={quote('a-notes.md')}")
    page.locator("#canvas .refusal", has_text="no Running app has a viewer").wait_for()


def test_a_view_opens_another_file_of_the_workspace(served: tuple[str, Path], page: Any) -> None:
    """The host tells a view what it can do with files; a view asks to open another file by
    its path (`openai/files/open`), the server checks it, and the page opens it in its viewer."""
    base, _ = served
    page.goto(f"{base}/?file={quote('notes/a.txt')}&with=editor.edit")
    view(page).locator("#file", has_text="a.txt").wait_for()
    caps = view(page).locator("#caps")
    caps.filter(has_text="openai").wait_for()
    assert json.loads(caps.inner_text()) == {"openai/resource": {}, "openai/files": {}}

    view(page).locator("#open-other").click()
    page.locator("#canvas-title", has_text="notes/other.txt").wait_for()
    view(page).locator("#file", has_text="other.txt").wait_for()
