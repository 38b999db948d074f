"""The bundled app's inventory sheet (mcpapps/grocery-inventory/inventory-sheet.html) in headless
Chromium, on real files: a small host page renders it in a sandboxed frame and answers its
requests with the workspace's own code (`Workspace`, `read_result`, `write_result`: what the
workspace actor answers a view with), so the sheet's own behaviour is tested alone (the whole way,
through the control page and the view door, is tests/test_files_browser.py). A cell edited and
saved changes the file on disk; a save over a version changed meanwhile is a conflict that keeps
the other save; a change on disk is shown once the person reloads, or at once when nothing was
edited.

Synchronous (Playwright's sync API), as tests/test_browser.py.
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from actors.files.workspace import Workspace, encode, read_result, write_result
from supervisor.model.workspace import WorkspaceConfig
from tests.support.running import GROCERY, GUARD_S

SHEET = (GROCERY / "inventory-sheet.html").read_text()
URI = "host-resource://00112233445566778899aabbccddeeff"
CSV = 'sku,product,on_hand\nPRD-APL-GALA,Gala Apples,42\nDRY-MLK-2PC,"2% Milk, 1 gal",31\n'
WAIT_MS = GUARD_S * 1000

# The host: the view in a sandboxed frame of its own (an opaque origin, as the sandbox page
# gives it), each request of the view answered by `window.host` (the test's Python), and the
# file's tool input sent once the view says it is initialized.
HOST = """<!doctype html><body>
<iframe id="view" sandbox="allow-scripts" style="width:900px;height:500px" srcdoc="SRCDOC"></iframe>
<script>
const frame = document.getElementById("view");
window.toView = (message) => frame.contentWindow.postMessage({jsonrpc: "2.0", ...message}, "*");
window.addEventListener("message", async (event) => {
  const msg = event.data;
  if (event.source !== frame.contentWindow || !msg || msg.method === undefined) return;
  const answer = await window.host(msg.method, msg.params || {});
  if (msg.id !== undefined) window.toView({id: msg.id, ...answer});
  if (msg.method === "ui/notifications/initialized") {
    window.toView({method: "ui/notifications/tool-input", params: {arguments: TOOL_INPUT}});
  }
});
</script></body>"""


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context()
    try:
        yield context.new_page()
    finally:
        context.close()


class Host:
    """What the host answers the view for its one file, from the real workspace code."""

    def __init__(self, root: Path, name: str) -> None:
        self.workspace = Workspace(WorkspaceConfig(root=root))
        self.path = self.workspace.locate(name).path
        self.name = name
        self.requests: list[str] = []

    def answer(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.requests.append(method)
        if method == "ui/initialize":
            capabilities = {"experimental": {"openai/resource": {}}}
            return {"result": {"protocolVersion": "2026-01-26", "hostCapabilities": capabilities}}
        if params.get("uri") not in (None, URI):
            return {"error": {"code": -32602, "message": "not this view's file"}}
        if method == "resources/read":
            wanted = ((params.get("_meta") or {}).get("openai/resource") or {}).get(
                "representation"
            )
            content = self.workspace.read(self.path)
            return {"result": read_result(URI, self.name, content, wanted)}
        if method == "openai/resources/write":
            data = encode(params.get("text"), params.get("blob"), 1_000_000)
            assert isinstance(data, bytes)
            outcome = self.workspace.write(self.path, data, params.get("ifMatch"))
            return {"result": write_result(outcome)}
        return {"result": {}}  # subscribe, size-changed, ...


def open_sheet(page: Any, host: Host) -> Any:
    page.expose_function("host", host.answer)
    tool_input = json.dumps({"file": {"name": host.name, "resourceUri": URI}})
    content = HOST.replace("SRCDOC", html.escape(SHEET, quote=True)).replace(
        "TOOL_INPUT", tool_input
    )
    page.set_content(content)
    view = page.frame_locator("#view")
    view.locator("input").first.wait_for(timeout=WAIT_MS)
    return view


def cell(view: Any, column: str, row: int) -> Any:
    return view.locator(f'input[aria-label="{column} of row {row}"]')


def test_a_cell_edited_and_saved_changes_the_file(tmp_path: Path, page: Any) -> None:
    (tmp_path / "count.csv").write_text(CSV)
    host = Host(tmp_path, "count.csv")
    view = open_sheet(page, host)
    assert view.locator("#title").inner_text() == "count.csv"
    assert cell(view, "product", 2).input_value() == "2% Milk, 1 gal"  # a quoted comma
    assert "resources/subscribe" in host.requests

    cell(view, "on_hand", 1).fill("40")
    view.locator("#save").click()
    view.locator("#status", has_text="Saved.").wait_for(timeout=WAIT_MS)
    assert (tmp_path / "count.csv").read_text() == CSV.replace(",42", ",40")
    assert host.requests.count("openai/resources/write") == 1


def test_a_stale_save_is_a_conflict_and_the_other_save_is_kept(tmp_path: Path, page: Any) -> None:
    (tmp_path / "count.csv").write_text(CSV)
    host = Host(tmp_path, "count.csv")
    view = open_sheet(page, host)
    # Someone else saves first (another view, an editor): the sheet still holds the old ETag.
    theirs = CSV.replace(",31", ",30")
    (tmp_path / "count.csv").write_text(theirs)

    cell(view, "on_hand", 1).fill("1")
    view.locator("#save").click()
    view.locator("#banner", has_text="someone else saved this file").wait_for(timeout=WAIT_MS)
    assert (tmp_path / "count.csv").read_text() == theirs

    # Told of a change while it holds edits, the sheet keeps them and asks; Reload shows theirs.
    page.evaluate(
        f"toView({{method: 'notifications/resources/updated', params: {{uri: '{URI}'}}}})"
    )
    view.locator("#banner", has_text="changed elsewhere").wait_for(timeout=WAIT_MS)
    assert cell(view, "on_hand", 1).input_value() == "1"
    view.locator("#reload").click()
    view.locator("#status", has_text="2 rows").wait_for(timeout=WAIT_MS)
    assert cell(view, "on_hand", 2).input_value() == "30"


def test_a_change_on_disk_shows_at_once_when_nothing_was_edited(tmp_path: Path, page: Any) -> None:
    (tmp_path / "count.csv").write_text(CSV)
    host = Host(tmp_path, "count.csv")
    view = open_sheet(page, host)
    (tmp_path / "count.csv").write_text(CSV + "BKY-SOUR-LF,Sourdough Loaf,7\n")
    page.evaluate(
        f"toView({{method: 'notifications/resources/updated', params: {{uri: '{URI}'}}}})"
    )
    cell(view, "product", 3).wait_for(timeout=WAIT_MS)
    assert cell(view, "product", 3).input_value() == "Sourdough Loaf"
