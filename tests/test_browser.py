"""The control page in a real browser (Debian's headless Chromium, driven by Playwright) against a
real `mcpapps run`: the app list and its live updates, views opened from the chat, the app list
and a URL, the official example app built with the official App SDK, the refusals, and what the
sandbox keeps an app's script from doing. Screenshots of the test apps are saved in .screenshots/
(not compared; the README's pictures come from scripts/screenshots.py, on the bundled app).

These tests are synchronous (Playwright's sync API): the supervisor runs as a subprocess.
"""

from __future__ import annotations

import json
import re
import shutil
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import httpx2
import pytest
import trio

from actors.chat.chatstore import ChatStore
from actors.chat.hub import CHAT_DATABASE
from actors.tls import client_tls
from actors.views.modelcontext import MODEL_CONTEXT_MARK
from tests.support import chromium, forkserver
from tests.support.controlpage import (
    TOKEN,
    WAIT_MS,
    Served,
    app_item,
    in_view,
    page,
    screenshot,
    view,
)
from tests.support.helpers import free_port, free_port_pair
from tests.support.nodetools import basic_vanillajs_command
from tests.support.running import GROCERY, GUARD_S, fixture_manifest

VIEWS_APP = Path(__file__).parent / "apps" / "views_app.py"
_ = (page,)  # the fixture, used by name (the browser is conftest.py's, one per worker)


def write_project(root: Path, sandbox_port: int, *, auth: bool = False) -> None:
    shutil.copytree(GROCERY, root / "apps" / "grocery-inventory")
    node = basic_vanillajs_command()
    undeclared = f"http://localhost:{free_port()}"
    declared = f"http://127.0.0.1:{free_port()}"
    manifests = {
        # A UI claim its catalog does not bear out; a few stderr lines for the page to show.
        "fx": fixture_manifest("fx", "--stderr-lines", "2", hasUi=True),
        "basic": {"command": node[0], "arguments": node[1:], "hasUi": True},
        "views": {
            "command": forkserver.python(),
            "arguments": [
                str(VIEWS_APP),
                "--declared-origin",
                declared,
                "--undeclared-origin",
                undeclared,
            ],
            "hasUi": True,
        },
    }
    for app_id, fields in manifests.items():
        folder = root / "apps" / app_id
        folder.mkdir(parents=True)
        manifest = {"id": app_id, "toolNamePrefix": f"{app_id}.", **fields}
        (folder / "openclaw.mcpapp.json").write_text(json.dumps(manifest))
    server = f'always_require_auth = true\ntoken = "{TOKEN}"\n' if auth else ""
    (root / "config.toml").write_text(
        f"[server]\n{server}[sandbox]\nport = {sandbox_port}\n"
        '[apps]\ndiscovery_paths = ["./apps"]\n'
        # Their tools are not marked read-only: what is tested of them is not approvals.
        '[apps.entries.basic]\napproval = "never"\n[apps.entries.views]\napproval = "never"\n'
    )
    (root / "declared").write_text(declared)
    (root / "undeclared").write_text(undeclared)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    chromium.require()
    root = tmp_path_factory.mktemp("browser")
    port = free_port_pair()
    write_project(root, port + 1)
    supervisor = Served(root, port)
    supervisor.start()
    yield supervisor
    supervisor.stop()


def store_column(page: Any) -> list[str]:
    """The dashboard's Store column, read in one go (the view redraws it as a whole): empty
    when the view leaves it out."""
    rows = view(page).locator("#rows")
    return rows.evaluate(
        "body => [...body.querySelectorAll('td[data-col=store]')].map((td) => td.textContent)"
    )


def row_stores(page: Any) -> list[str]:
    """The store id of each row the dashboard shows."""
    rows = view(page).locator("#rows")
    return rows.evaluate("body => [...body.rows].map((row) => row.dataset.storeId)")


def probe_report(page: Any, until: str) -> dict[str, Any]:
    report = view(page).locator("#report")
    deadline = time.monotonic() + GUARD_S
    while True:
        text = report.inner_text()
        if text.startswith("{"):
            data = json.loads(text)
            if until in data:
                return data
        assert time.monotonic() < deadline, text
        time.sleep(0.05)


def test_without_a_workspace_the_page_asks_nothing_of_one(served: Served, page: Any) -> None:
    # This project sets no workspace: /apps/files would answer 404, which a browser logs as a
    # failed load on every page. The page's markup says there is none, so it does not ask.
    asked: list[str] = []
    page.on("request", lambda request: asked.append(urlsplit(request.url).path))
    page.goto(served.url("/"))
    app_item(page, "grocery-inventory").wait_for()
    page.wait_for_load_state("networkidle")
    assert "/apps/health" in asked  # what the page asks on loading was seen
    assert not [path for path in asked if path.startswith("/apps/files")]
    assert page.locator("#files-pane").is_hidden()


def test_loading_the_page_asks_each_thing_once(served: Served, page: Any) -> None:
    # The events socket first says how things stand; the page reads its tools, settings, entry
    # points and the selected app's detail once after that picture, not once for the picture
    # (a burst of messages, one per app) and again for its own start (events.js).
    asked: list[str] = []
    page.on("request", lambda request: asked.append(urlsplit(request.url).path))
    page.goto(served.url("/"))
    page.locator("#stderr").filter(has_not_text="…").wait_for()
    page.wait_for_load_state("networkidle")
    page.wait_for_timeout(500)  # past the 150 ms in which a burst of changes is read as one
    api = Counter(path for path in asked if path.startswith(("/admin/", "/apps/")))
    assert {"/apps/health", "/admin/tools", "/apps/settings", "/apps/entrypoints"} <= set(api)
    assert [path for path, times in api.items() if times > 1] == []


# ---- the app list -----------------------------------------------------------------------------


def test_the_page_lists_the_apps_and_a_restart_arrives_live(served: Served, page: Any) -> None:
    page.goto(served.url("/?app=grocery-inventory"))
    for app_id in ("grocery-inventory", "basic", "views"):
        app_item(page, app_id).locator(".state-Running").wait_for()
    grocery = app_item(page, "grocery-inventory")
    assert "has a UI" in grocery.inner_text()
    protocol = served.api("/admin/apps/grocery-inventory")["protocolVersion"]
    assert f"protocol {protocol}" in grocery.inner_text()
    page.locator("#live.live").wait_for()
    # The selected app's tools, split, and its stderr tail.
    visible = page.locator("#tools-visible").inner_text()
    assert "grocery.show_store_inventory_dashboard" in visible
    assert "get_store_dashboard_data" in page.locator("#tools-app-only").inner_text()
    assert "get_store_dashboard_data" not in visible
    screenshot(page, "control-page.png")

    pid = served.api("/admin/apps/grocery-inventory")["pid"]
    seq = int(page.locator("#live").get_attribute("data-seq"))
    grocery.locator('button[data-command="restart"]').click()
    # The page does not poll: the new state and pid come over /admin/events.
    page.wait_for_function(
        """([pid]) => {
            const li = document.querySelector('#apps li[data-app-id="grocery-inventory"]');
            return li && li.dataset.state === "Running" && !li.textContent.includes(`pid ${pid}`);
        }""",
        arg=[pid],
    )
    assert int(page.locator("#live").get_attribute("data-seq")) > seq
    assert served.api("/admin/apps/grocery-inventory")["pid"] != pid


def test_the_page_lists_the_supervisors(served: Served, page: Any) -> None:
    page.goto(served.url("/"))
    item = page.locator("#replicas li.replica").first
    item.wait_for()
    # On SQLite the cluster is this supervisor alone, seen by its own heartbeat.
    [replica] = served.api("/admin/cluster")["replicas"]
    assert item.get_attribute("data-id") == replica["id"]
    assert replica["url"] in item.inner_text()
    assert "seen" in item.inner_text()
    assert "silent" not in item.inner_text()


def test_a_claimed_ui_that_is_not_served_is_a_warning(served: Served, page: Any) -> None:
    page.goto(served.url("/?app=fx"))
    warning = page.locator("#ui-warning")
    warning.wait_for()
    assert "says hasUi in its manifest but serves no UI" in warning.inner_text()
    log = served.log_path.read_text()
    assert "app fx says hasUi in its manifest but serves no UI" in log  # the operator's too
    assert "app views says hasUi" not in log
    assert "app basic says hasUi" not in log
    assert "has a UI" not in app_item(page, "fx").inner_text()
    page.goto(served.url("/?app=views"))
    page.locator("#tools-visible li").first.wait_for()
    assert page.locator("#ui-warning").count() == 0


def test_stop_and_start_from_the_page(served: Served, page: Any) -> None:
    page.goto(served.url("/"))
    basic = app_item(page, "basic")
    basic.locator(".state-Running").wait_for()
    basic.locator('button[data-command="stop"]').click()
    basic.locator(".state-Stopped").wait_for()
    basic.locator('button[data-command="start"]').click()
    basic.locator(".state-Running").wait_for()


# ---- views ------------------------------------------------------------------------------------


def test_the_grocery_dashboard_opens_from_the_chat_and_a_click_updates_it(
    served: Served, page: Any
) -> None:
    page.goto(served.url("/"))
    page.locator("#live.live").wait_for()
    # The host library (static/app-bridge.js) is loaded by the first view, not by the page.
    assert page.evaluate("() => window.McpAppBridge === undefined")
    page.fill("#chat-input", "/call grocery.show_store_inventory_dashboard {}")
    page.click("#chat-send")
    view(page).locator("#rows tr").first.wait_for()
    assert page.evaluate("() => typeof window.McpAppBridge.AppBridge") == "function"
    everything = row_stores(page)
    assert len(set(everything)) > 1
    # Every store: a Store column names each row's store.
    assert len(store_column(page)) == len(everything)
    assert len(set(store_column(page))) == len(set(everything))
    assert "tool grocery.show_store_inventory_dashboard" in page.inner_text("#chat-log")
    # Choosing a store makes the view call its app-only tool through the host and redraw.
    select = view(page).locator("#store")
    select.locator("option").nth(1).wait_for(state="attached")
    store_id = select.locator("option").nth(1).get_attribute("value")
    select.select_option(index=1)
    deadline = time.monotonic() + GUARD_S
    while set(row_stores(page)) != {store_id}:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert len(row_stores(page)) < len(everything)
    # One store: the selector names it, and no Store column repeats it on every row.
    assert store_column(page) == []
    assert view(page).locator("#store-heading").is_hidden()
    screenshot(page, "grocery-dashboard.png")


def test_the_grocery_dashboard_opens_from_the_app_list(served: Served, page: Any) -> None:
    page.goto(served.url("/?app=grocery-inventory"))
    button = page.locator(
        '#tools-visible li[data-tool="show_store_inventory_dashboard"] button.open-view'
    )
    button.click()
    view(page).locator("#rows tr").first.wait_for()
    assert page.inner_text("#canvas-title") == "grocery.show_store_inventory_dashboard"


def test_another_app_s_restart_leaves_the_detail_s_buttons_in_place(
    served: Served, page: Any
) -> None:
    # Rebuilt on every change of the page's state, the panel replaced its buttons under the
    # pointer: a click pressed on one and released on its replacement opened nothing.
    page.goto(served.url("/?app=grocery-inventory"))
    page.locator("#live.live").wait_for()
    button = page.locator(
        '#tools-visible li[data-tool="show_store_inventory_dashboard"] button.open-view'
    )
    handle = button.element_handle()
    page.locator("#stderr:not(:text-is('…'))").wait_for()  # the tail, read after the tools
    basic = app_item(page, "basic")
    basic.locator('button[data-command="stop"]').click()
    basic.locator(".state-Stopped").wait_for()
    basic.locator('button[data-command="start"]').click()
    basic.locator(".state-Running").wait_for()
    page.wait_for_timeout(500)  # the tool table is read again 150 ms after it settles
    assert handle.evaluate("(b) => b.isConnected")
    handle.click()
    view(page).locator("#rows tr").first.wait_for()


def test_a_host_library_that_cannot_load_is_said_and_tried_again(served: Served, page: Any) -> None:
    page.route("**/static/app-bridge.js", lambda route: route.abort())
    page.goto(served.url("/?app=grocery-inventory"))
    button = page.locator(
        '#tools-visible li[data-tool="show_store_inventory_dashboard"] button.open-view'
    )
    button.click()
    refusal = page.locator("#canvas .refusal")
    refusal.wait_for()
    assert "static/app-bridge.js" in refusal.inner_text()
    assert "could not be loaded" in refusal.inner_text()
    page.unroute("**/static/app-bridge.js")
    button.click()  # the next view loads it
    view(page).locator("#rows tr").first.wait_for()


def test_a_page_that_goes_away_ends_its_view_leases(served: Served, page: Any) -> None:
    """The lease of a view the page showed ends with the page, not minutes later on expiry."""
    page.goto(served.url("/?app=grocery-inventory"))
    button = page.locator(
        '#tools-visible li[data-tool="show_store_inventory_dashboard"] button.open-view'
    )
    button.click()
    view(page).locator("#rows tr").first.wait_for()
    view_id = page.evaluate("window.McpHost.current().client.viewId")
    keepalive = served.url(f"/apps/views/{view_id}/keepalive")
    assert httpx2.post(keepalive, verify=client_tls(), timeout=GUARD_S).status_code == 200
    page.goto("about:blank")
    deadline = time.monotonic() + GUARD_S
    while (
        status := httpx2.post(keepalive, verify=client_tls(), timeout=GUARD_S).status_code
    ) == 200:
        assert time.monotonic() < deadline, "the lease outlived its page"
        time.sleep(0.05)
    assert status == 404


# ---- approvals and the chat session of a view ------------------------------------------------


def first_on_hand(page: Any) -> int:
    cell = view(page).locator("#rows tr").first.locator("td[data-col=onHand]")
    return int(cell.inner_text())


def wait_on_hand(page: Any, expected: int) -> None:
    deadline = time.monotonic() + GUARD_S
    while first_on_hand(page) != expected:
        assert time.monotonic() < deadline, first_on_hand(page)
        time.sleep(0.05)


def receive_one(page: Any) -> None:
    view(page).locator("#rows tr").first.locator("button.receive").click()


def open_dashboard_from_chat(page: Any) -> None:
    page.fill("#chat-input", '/call grocery.show_store_inventory_dashboard {"storeId": 1}')
    page.click("#chat-send")
    view(page).locator("#rows tr").first.wait_for()
    page.wait_for_function("() => window.McpHost.current() && window.McpHost.current().initialized")


def test_a_write_from_the_dashboard_asks_the_person(served: Served, page: Any) -> None:
    page.goto(served.url("/"))
    page.locator("#live.live").wait_for()
    page.click("#chat-new")
    open_dashboard_from_chat(page)
    view(page).locator("#refresh").click()  # a read-only tool: no question
    view(page).locator("#status:text-matches('Updated')").wait_for()
    assert page.locator("#approval").is_hidden()
    start = first_on_hand(page)

    receive_one(page)  # "Allow once" runs it once, and asks again next time
    page.locator("#approval:not([hidden])").wait_for()
    assert "adjust_stock" in page.inner_text("#approval-text")
    screenshot(page, "approval.png")
    page.click("#approval-once")
    wait_on_hand(page, start + 1)
    receive_one(page)  # "while this app is open": not asked again until it is closed
    page.locator("#approval:not([hidden])").wait_for()
    page.click("#approval-open")
    wait_on_hand(page, start + 2)
    receive_one(page)
    wait_on_hand(page, start + 3)
    assert page.locator("#approval").is_hidden()

    page.click("#canvas-close")  # the grant ends with the view
    open_dashboard_from_chat(page)
    receive_one(page)
    page.locator("#approval:not([hidden])").wait_for()
    page.click("#approval-deny")
    view(page).locator("#status.error").wait_for()
    assert "denied" in view(page).locator("#status").inner_text()
    view(page).locator("#refresh").click()
    view(page).locator("#status:text-matches('Updated')").wait_for()
    assert first_on_hand(page) == start + 3  # the app saw nothing

    # The view's calls carry the id of the chat session that opened it, as the agent's do.
    session = page.evaluate("localStorage.getItem('mcpapps.chat.session')")
    from_view = in_view(
        page, 'return await request("tools/call", {name: "get_caller_session", arguments: {}});'
    )
    assert from_view["structuredContent"] == {"sessionId": session}
    page.fill("#chat-input", "/call grocery.get_caller_session {}")
    page.click("#chat-send")
    page.locator("#chat-log pre", has_text=session).first.wait_for(state="attached")
    # A tool its app does not have: the server refuses it, whatever the page does.
    refused = in_view(
        page,
        'try { await request("tools/call", {name: "show_store_inventory_dashboard_nope",'
        " arguments: {}}); return 'ran'; } catch (e) { return e.message; }",
    )
    assert "a view may call only the tools of its own app" in refused


def test_a_restart_drops_the_grants_and_the_restored_view_waits_for_run(
    browser: Any, tmp_path: Path
) -> None:
    port = free_port_pair()
    write_project(tmp_path, port + 1)
    supervisor = Served(tmp_path, port)
    supervisor.start()
    try:
        context = browser.new_context(viewport={"width": 1400, "height": 900})
        context.set_default_timeout(WAIT_MS)
        page = context.new_page()
        page.goto(supervisor.url("/"))
        page.locator("#live.live").wait_for()
        open_dashboard_from_chat(page)
        start = first_on_hand(page)
        receive_one(page)
        page.locator("#approval:not([hidden])").wait_for()
        page.click("#approval-open")
        wait_on_hand(page, start + 1)
        old_view = page.evaluate("window.McpHost.current().client.viewId")

        supervisor.stop()
        supervisor.start()
        page.reload()
        page.locator("#live.live").wait_for()
        # The transcript rebuilds the dashboard from the saved result, marked restored: it asks
        # its app nothing (a reload does not run its tool again)...
        page.locator("#canvas .restored").wait_for()
        page.wait_for_function("() => (window.McpHost.current() || {}).initialized")
        assert page.evaluate("window.McpHost.current().restored")
        refused = in_view(
            page,
            'try { await request("tools/call", {name: "get_caller_session", arguments: {}});'
            " return 'ran'; } catch (e) { return e.message; }",
        )
        assert "press Run" in refused
        # The server holds the lease as restored: the refusal is its own, whatever the page.
        restored = page.evaluate("window.McpHost.current().client.viewId")
        message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call"}
        message["params"] = {"name": "get_caller_session", "arguments": {}}
        direct = httpx2.post(
            supervisor.url(f"/apps/views/{restored}/mcp"),
            json=message,
            verify=client_tls(),
            timeout=GUARD_S,
        ).json()
        assert direct["error"]["code"] == -32005
        # ... until the person runs it again: a fresh call, a new lease, the old grant gone.
        page.click("#canvas-run")
        view(page).locator("#rows tr").first.wait_for()
        page.wait_for_function("() => (window.McpHost.current() || {}).restored === false")
        assert page.locator("#canvas .restored").count() == 0
        assert page.evaluate("window.McpHost.current().client.viewId") != old_view
        assert page.inner_text("#canvas-title") == "grocery.show_store_inventory_dashboard"
        fresh = first_on_hand(page)
        receive_one(page)
        page.locator("#approval:not([hidden])").wait_for()
        page.click("#approval-deny")
        view(page).locator("#status.error").wait_for()
        assert first_on_hand(page) == fresh
        context.close()
    finally:
        supervisor.stop()


def test_the_official_basic_app_renders_and_its_button_round_trips(
    served: Served, page: Any
) -> None:
    page.goto(served.url("/?open=basic.get-time"))
    time_text = view(page).locator("#server-time")
    page.wait_for_function("() => window.McpHost.current() && window.McpHost.current().initialized")
    deadline = time.monotonic() + GUARD_S
    while not time_text.inner_text().startswith("20"):  # the tool result's ISO time
        assert time.monotonic() < deadline, time_text.inner_text()
        time.sleep(0.05)
    first = time_text.inner_text()
    time.sleep(0.01)
    view(page).locator("#get-time-btn").click()
    while time_text.inner_text() == first:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert time_text.inner_text() > first
    # The view said how tall it is (size-changed), and its frame follows.
    frame_height = page.locator("#canvas iframe").evaluate("frame => frame.style.height")
    assert frame_height.endswith("px")
    screenshot(page, "basic-app.png")


@pytest.mark.parametrize(
    ("tool", "message"),
    [
        ("views.not_ui_scheme", "is not a ui:// resource"),
        ("views.wrong_mime", "has the MIME type 'text/html', not text/html;profile=mcp-app"),
        ("views.too_big", "a view of app 'views' may be at most 2 MiB"),
    ],
)
def test_refusals_are_clear_messages(served: Served, page: Any, tool: str, message: str) -> None:
    page.goto(served.url(f"/?open={tool}"))
    refusal = page.locator("#canvas .refusal")
    refusal.wait_for()
    assert message in refusal.inner_text()
    assert page.locator("#canvas iframe").count() == 0


def test_the_sandbox_keeps_the_view_in(served: Served, page: Any) -> None:
    args = quote(json.dumps({"label": "probe"}))
    page.goto(served.url(f"/?open=views.show_probe&args={args}"))
    report = probe_report(page, until="undeclared")
    # The view protocol: tool-input exactly once, then the result; nothing before initialized.
    assert report["host"] == "mcpapps"
    assert report["displayMode"] == "inline"
    assert report["locale"]
    assert report["width"] > 0
    assert {"openLinks", "serverTools", "serverResources", "message", "updateModelContext"} <= set(
        report["capabilities"]
    )
    assert report["ping"] == {}
    assert report["inputs"] == 1
    assert report["args"] == {"label": "probe"}
    report = probe_report(page, until="result")
    assert report["results"] == 1
    assert report["result"] == {"label": "probe", "shown": True}
    sent = page.evaluate("window.McpHost.current().sent")
    tools = [method for method in sent if method.startswith("ui/notifications/tool-")]
    assert tools == ["ui/notifications/tool-input", "ui/notifications/tool-result"]
    # The inner document: an opaque origin that cannot reach the control page or its cookie,
    # and a CSP that allows the declared origin only.
    assert report["origin"] == "null"
    assert report["top"] == "blocked: SecurityError"
    assert report["cookie"] == "blocked: SecurityError"
    undeclared = (served.root / "undeclared").read_text()
    declared = (served.root / "declared").read_text()
    assert report["undeclared"] == "failed"
    assert any(v.startswith(f"connect-src {undeclared}") for v in report["violations"])
    assert not any(declared in v for v in report["violations"])
    outer = page.locator("#canvas iframe")
    assert outer.get_attribute("sandbox") == "allow-scripts allow-same-origin"
    assert outer.get_attribute("src").startswith(f"http://127.0.0.1:{_sandbox_port(served)}/")
    inner = page.frame_locator("#canvas iframe").locator("iframe")
    assert inner.get_attribute("sandbox") == "allow-scripts allow-forms"
    assert inner.get_attribute("allow") is None  # no camera, microphone, geolocation

    # An app-only tool called from the view goes through /apps/views/<viewId>/mcp to the app.
    view(page).locator("#note").click()
    probe_report(page, until="notes")
    deadline = time.monotonic() + GUARD_S
    while "noted clicked" not in probe_report(page, until="notes")["notes"]:
        assert time.monotonic() < deadline
        time.sleep(0.05)

    # ui/message waits for the person; what they allow becomes their own chat turn.
    view(page).locator("#say").click()
    page.locator("#confirm:not([hidden])").wait_for()
    assert "views.note" in page.inner_text("#confirm-text")
    page.click("#confirm-yes")
    page.locator("#chat-log .msg.user").wait_for()
    assert "from the view" in page.inner_text("#chat-log .msg.user")
    assert probe_report(page, until="said")["said"] == {}

    # Closing the view asks it to tear down first (it notes that with its app).
    page.click("#canvas-close")
    deadline = time.monotonic() + GUARD_S
    while "views: note teardown" not in served.api("/admin/apps/views")["stderr"]:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    # The view notes its teardown before it answers it; the page takes its frame out after.
    page.locator("#canvas iframe").wait_for(state="detached")


def test_a_declined_message_is_not_sent(served: Served, page: Any) -> None:
    page.goto(served.url("/?open=views.show_probe"))
    probe_report(page, until="undeclared")
    view(page).locator("#say").click()
    page.locator("#confirm:not([hidden])").wait_for()
    page.click("#confirm-no")
    report = probe_report(page, until="said")
    assert report["said"] == {"isError": True}
    assert page.locator("#chat-log .msg.user").count() == 0
    # A link waits for the person as well.
    view(page).locator("#link").click()
    page.locator("#confirm:not([hidden])").wait_for()
    assert "https://example.com/docs" in page.inner_text("#confirm-text")
    page.click("#confirm-no")
    assert probe_report(page, until="linked")["linked"] == {"isError": True}


def test_model_context_reaches_the_next_turn_as_marked_data(served: Served, page: Any) -> None:
    page.goto(served.url("/?open=views.show_probe"))
    probe_report(page, until="undeclared")
    view(page).locator("#context").click()
    answered = probe_report(page, until="context")["context"]
    assert answered["_meta"]["openai/modelContext"]["updateId"].startswith("update-")
    # A view opened from the app list (no chat): its context is a chip the turn names.
    page.locator("#chat-context .chip-context").wait_for()
    page.fill("#chat-input", "/tools")
    page.click("#chat-send")
    page.locator("#chat-log .msg.assistant").wait_for()
    session = page.evaluate("localStorage.getItem('mcpapps.chat.session')")
    saved = httpx2.get(
        served.url(f"/apps/chat/{session}"), verify=client_tls(), timeout=GUARD_S
    ).json()
    said = next(m["content"] for m in saved["messages"] if m["role"] == "user")
    assert said.startswith(MODEL_CONTEXT_MARK)
    assert "the person looks at the probe" in said
    assert said.endswith("/tools")
    # The session is kept across a reload of the page.
    page.reload()
    page.locator("#chat-log .msg.user").first.wait_for()
    assert "/tools" in page.inner_text("#chat-log")


def test_an_app_s_questions_are_forms_in_the_chat(served: Served, page: Any) -> None:
    """The grocery app's guided restock asks which store, then how many of each low-stock
    product: each question is a form built from the app's schema; a wrong answer is shown and
    the form stays open; once answered, the turn completes with the drafted order."""
    page.goto(served.url("/"))
    page.locator("#live.live").wait_for()
    page.fill("#chat-input", "/call grocery.guided_restock {}")
    page.click("#chat-send")
    first = page.locator("#chat-log .ask").nth(0)
    first.locator("select[name=storeId]").select_option("1")
    first.locator("button[data-action=accept]").click()
    first.locator(".ask-status", has_text="answered: accept").wait_for()
    second = page.locator("#chat-log .ask").nth(1)
    spinach = second.locator("input[name=p3]")
    assert spinach.input_value() == "22"  # the app's default
    spinach.fill("-1")
    second.locator("button[data-action=accept]").click()
    second.locator(".ask-status.error").wait_for()
    assert "-1 is less than the minimum of 0" in second.locator(".ask-status").inner_text()
    spinach.fill("12")
    second.locator("input[name=p7]").fill("0")
    screenshot(page, "chat-question.png")
    second.locator("button[data-action=accept]").click()
    page.locator("#chat-send:not([disabled])").wait_for()
    result = page.locator("#chat-log details.tool pre").last.text_content()
    assert result.startswith("Draft purchase order for Downtown Market")
    assert "12 x Baby Spinach 5 oz" in result


def test_the_dashboard_s_guided_restock_asks_in_the_page(served: Served, page: Any) -> None:
    """The dashboard view calls the guided restock through the view door: the app's question
    comes back on that call's stream (an `elicitation` event), is a form in the chat pane, the
    answer goes back to the app, and the view shows the draft it ends with."""
    page.goto(served.url("/?app=grocery-inventory"))
    page.locator(
        '#tools-visible li[data-tool="show_store_inventory_dashboard"] button.open-view'
    ).click()
    view(page).locator("#rows tr").first.wait_for()
    view(page).locator("#store option").nth(1).wait_for(state="attached")
    view(page).locator("#store").select_option("1")
    view(page).locator("#status:text-matches('Updated')").wait_for()
    view(page).locator("#restock").click()
    page.locator("#approval:not([hidden])").wait_for()  # not read-only: the person allows it
    page.click("#approval-once")
    asked = page.locator("#chat-log .ask").last
    asked.locator("input[name=p7]").fill("9")
    asked.locator("input[name=p3]").fill("0")
    asked.locator("button[data-action=accept]").click()
    status = view(page).locator("#status", has_text="Draft purchase order")
    status.wait_for()
    assert "9 x Sourdough Loaf" in status.inner_text()
    assert "grocery-inventory asks (guided_restock)" in asked.inner_text()


def test_a_running_turn_is_cancelled_from_the_page(served: Served, page: Any) -> None:
    page.goto(served.url("/"))
    page.locator("#live.live").wait_for()
    page.fill("#chat-input", '/call fx.sleep {"seconds": 60}')
    page.click("#chat-send")
    page.locator("details.tool").wait_for()
    page.click("#chat-cancel")
    page.locator("#chat-log .msg.error").wait_for()
    assert "cancelled" in page.inner_text("#chat-log .msg.error")
    page.locator("#chat-send:not([disabled])").wait_for()


def test_dark_theme_and_a_narrow_screen(served: Served, browser: Any) -> None:
    context = browser.new_context(viewport={"width": 360, "height": 740}, color_scheme="dark")
    context.set_default_timeout(WAIT_MS)
    page = context.new_page()
    try:
        page.goto(served.url("/?open=views.show_probe"))
        report = probe_report(page, until="undeclared")
        assert report["theme"] == "dark"  # the host context says which
        assert page.evaluate("document.documentElement.dataset.theme") == "dark"
        app_item(page, "views").wait_for()
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 360  # nothing sticks out sideways
        screenshot(page, "narrow-dark.png")
    finally:
        context.close()


DASHBOARD_OF_STORE_1 = "/?open=grocery.show_store_inventory_dashboard&args=" + quote(
    json.dumps({"storeId": 1})
)


def test_a_long_view_title_fits_a_narrow_screen(served: Served, browser: Any) -> None:
    context = browser.new_context(viewport={"width": 360, "height": 800})
    context.set_default_timeout(WAIT_MS)
    page = context.new_page()
    try:
        page.goto(served.url(DASHBOARD_OF_STORE_1))
        view(page).locator("#rows tr").first.wait_for()
        assert page.inner_text("#canvas-title") == "grocery.show_store_inventory_dashboard"
        assert page.evaluate("document.documentElement.scrollWidth") <= 360
        close = page.locator("#canvas-close").bounding_box()
        assert close["x"] >= 0
        assert close["x"] + close["width"] <= 360
    finally:
        context.close()


def view_fits_its_frame(page: Any) -> None:
    """Nothing of the dashboard is behind a sideways scroll: every column, every +1 button."""
    body = view(page).locator("body")
    sizes = body.evaluate(
        """() => ({
            scroll: document.documentElement.scrollWidth,
            width: document.documentElement.clientWidth,
            table: document.querySelector("table").getBoundingClientRect().right,
            buttons: [...document.querySelectorAll("button.receive")]
                .map((b) => b.getBoundingClientRect().right),
        })"""
    )
    assert sizes["buttons"]
    assert sizes["scroll"] <= sizes["width"], sizes
    assert sizes["table"] <= sizes["width"], sizes
    assert max(sizes["buttons"]) <= sizes["width"], sizes


def test_the_dashboard_fits_its_frame_on_a_desktop(served: Served, page: Any) -> None:
    page.goto(served.url(DASHBOARD_OF_STORE_1))
    view(page).locator("#rows tr").first.wait_for()
    assert view(page).locator("#store-heading").is_hidden()
    view_fits_its_frame(page)
    view(page).locator("#store").select_option("")  # every store: the Store column as well
    view(page).locator("#store-heading").wait_for()
    view(page).locator("td[data-col=store]").first.wait_for()
    view_fits_its_frame(page)


def test_the_state_stays_beside_the_app_name(served: Served, browser: Any) -> None:
    """A long app name wraps beside its state, as a short one sits beside it."""
    assert len(served.api("/admin/apps/grocery-inventory")["name"]) > 25  # a long one
    for width in (1400, 360):
        context = browser.new_context(viewport={"width": width, "height": 800})
        context.set_default_timeout(WAIT_MS)
        page = context.new_page()
        try:
            page.goto(served.url("/"))
            app_item(page, "grocery-inventory").locator(".state-Running").wait_for()
            tops = page.evaluate(
                """() => [...document.querySelectorAll("#apps li")].map((li) => [
                    li.dataset.appId,
                    li.querySelector(".app-head strong").getBoundingClientRect().top,
                    li.querySelector(".app-head .state").getBoundingClientRect().top,
                ])"""
            )
            assert len(tops) == 4
            for app_id, name_top, state_top in tops:
                assert abs(name_top - state_top) < 3, (width, app_id, name_top, state_top)
        finally:
            context.close()


def test_with_no_app_in_the_link_the_health_s_app_is_selected(served: Served, page: Any) -> None:
    chosen = httpx2.get(served.url("/apps/health"), verify=client_tls(), timeout=GUARD_S).json()[
        "name"
    ]
    assert chosen in {"basic", "views", "grocery-inventory"}  # a Running app with a UI
    page.goto(served.url("/"))
    page.locator("#detail h3", has_text=f"Tools of {chosen}").wait_for()
    assert app_item(page, chosen).get_attribute("class") == "selected"
    offered = [t["publicName"] for t in served.api("/admin/tools")["tools"] if t["app"] == chosen]
    assert offered
    assert all(name in page.inner_text("#tools-visible") for name in offered)
    assert "app=" not in page.url  # the link still means "whatever runs"
    # ?app= still says which.
    other = "views" if chosen != "views" else "basic"
    page.goto(served.url(f"/?app={other}"))
    page.locator("#detail h3", has_text=f"Tools of {other}").wait_for()
    assert app_item(page, other).get_attribute("class") == "selected"
    assert app_item(page, chosen).get_attribute("class") == ""
    assert page.locator("#link-warning").count() == 0
    # An ?app= that names no app: the same app, and the health's warning on the page.
    page.goto(served.url("/?app=nope"))
    page.locator("#detail h3", has_text=f"Tools of {chosen}").wait_for()
    warning = page.inner_text("#link-warning")
    assert warning == f"there is no app 'nope'; selected '{chosen}' instead"


def test_an_empty_stderr_tail_says_so(served: Served, page: Any) -> None:
    assert served.api("/admin/apps/basic")["stderr"] == []  # it writes nothing there
    page.goto(served.url("/?app=basic"))
    page.locator("#stderr.none").wait_for()
    assert page.inner_text("#stderr") == "(no stderr lines yet)"
    page.goto(served.url("/?app=fx"))
    page.locator("#detail h3", has_text="Tools of fx").wait_for()
    lines = served.api("/admin/apps/fx")["stderr"]
    assert lines  # it wrote some at start
    page.wait_for_function("() => document.getElementById('stderr').textContent !== '…'")
    assert page.inner_text("#stderr").strip().endswith(lines[-1].strip())
    assert page.locator("#stderr.none").count() == 0


def test_the_chat_fills_its_pane_and_marks_tool_results(served: Served, page: Any) -> None:
    page.goto(served.url("/"))
    page.locator("#live.live").wait_for()
    page.click("#chat-new")

    def gap_below_form() -> float:
        return page.evaluate(
            """() => document.getElementById("chat-pane").getBoundingClientRect().bottom
                - document.getElementById("chat-form").getBoundingClientRect().bottom"""
        )

    assert gap_below_form() < 16  # the pane's padding: the box sits at the bottom
    pane = page.locator("#chat-pane").bounding_box()
    assert pane["y"] + pane["height"] <= 900  # and in the window
    # The whole placeholder is readable in the box.
    fits = page.evaluate(
        """() => {
            const input = document.getElementById("chat-input");
            const style = getComputedStyle(input);
            const context = document.createElement("canvas").getContext("2d");
            context.font = `${style.fontSize} ${style.fontFamily}`;
            const room = input.clientWidth - parseFloat(style.paddingLeft)
                - parseFloat(style.paddingRight);
            return context.measureText(input.placeholder).width <= room;
        }"""
    )
    assert fits
    # A folded tool result says whether the call worked.
    page.fill("#chat-input", "/call grocery.get_stores {}")
    page.click("#chat-send")
    page.locator("#chat-log details.tool summary .outcome").wait_for()
    page.locator("#chat-send:not([disabled])").wait_for()
    page.fill("#chat-input", '/call grocery.get_inventory {"storeId": 99}')
    page.click("#chat-send")
    page.locator("#chat-log details.tool summary .outcome").nth(1).wait_for()
    outcomes = page.locator("#chat-log details.tool summary .outcome")
    assert outcomes.nth(0).inner_text() == "ok"
    assert outcomes.nth(0).get_attribute("class") == "outcome ok"
    assert outcomes.nth(1).inner_text() == "error"
    assert outcomes.nth(1).get_attribute("class") == "outcome error"
    assert page.locator("#chat-log details[open]").count() == 0  # folded
    # A long conversation scrolls inside the log; the box stays at the bottom of the window.
    for _ in range(4):
        page.locator("#chat-send:not([disabled])").wait_for()
        page.fill("#chat-input", "/call grocery.get_stores {}")
        page.click("#chat-send")
    page.locator("#chat-send:not([disabled])").wait_for()
    page.evaluate("document.querySelectorAll('#chat-log details').forEach((d) => d.open = true)")
    assert page.evaluate(
        "(() => { const log = document.getElementById('chat-log');"
        " return log.scrollHeight > log.clientHeight; })()"
    )
    assert gap_below_form() < 16
    form = page.locator("#chat-form").bounding_box()
    assert form["y"] + form["height"] <= 900
    # After a reload, the results restored from the saved session are marked as they were live.
    live = outcomes.all_inner_texts()
    assert live == ["ok", "error", "ok", "ok", "ok", "ok"]
    page.reload()
    restored = page.locator("#chat-log details.tool summary .outcome")
    restored.nth(len(live) - 1).wait_for()
    assert restored.all_inner_texts() == live
    assert restored.nth(1).get_attribute("class") == "outcome error"
    assert page.locator("#chat-log details.tool pre.error").count() == 1


def test_a_result_saved_without_is_error_is_restored_with_no_mark(
    served: Served, page: Any
) -> None:
    # As an mcpapps before results kept isError saved it: its text reads like a failure, and
    # the page still makes nothing up.
    old = [
        {"role": "user", "content": "/call fx.fail {}"},
        {"role": "tool", "tool_call_id": "call-old", "content": "Error: tool 'fx.fail' failed"},
    ]
    session = f"old-{time.monotonic_ns()}"

    async def save() -> None:
        store = ChatStore(served.root / ".mcpapps" / CHAT_DATABASE)
        await store.open()
        try:
            await store.save_turn(session, old)
        finally:
            await store.close()

    trio.run(save)
    page.goto(served.url(f"/?session={session}"))
    page.locator("#chat-log details.tool pre", has_text="Error: tool 'fx.fail'").wait_for(
        state="attached"
    )
    assert page.locator("#chat-log details.tool summary .outcome").count() == 0
    assert page.locator("#chat-log details.tool pre.error").count() == 0


def test_a_long_session_shows_its_last_turns_and_earlier_ones_on_demand(
    served: Served, page: Any
) -> None:
    # 30 saved turns: each a call of fx.echo and its result; the page shows the last 20.
    def turn(n: int) -> list[dict[str, Any]]:
        asked = {
            "id": f"call-{n}",
            "type": "function",
            "function": {"name": "fx.echo", "arguments": json.dumps({"text": f"echo {n}"})},
        }
        return [
            {"role": "user", "content": f"turn {n}"},
            {"role": "assistant", "content": None, "tool_calls": [asked]},
            {
                "role": "tool",
                "tool_call_id": f"call-{n}",
                "content": f"echo {n}",
                "isError": n == 30,
            },
        ]

    session = f"long-{time.monotonic_ns()}"

    async def save() -> None:
        store = ChatStore(served.root / ".mcpapps" / CHAT_DATABASE)
        await store.open()
        try:
            await store.save_turns(session, [turn(n) for n in range(1, 31)])
        finally:
            await store.close()

    trio.run(save)
    page.goto(served.url(f"/?session={session}"))
    users = page.locator("#chat-log .msg.user")
    page.locator("#chat-log .msg.user", has_text="turn 30").wait_for()
    assert users.all_inner_texts() == [f"turn {n}" for n in range(11, 31)]
    # A restored result is in the block of the call it answers, named by its tool.
    blocks = page.locator("#chat-log details.tool")
    assert blocks.count() == 20
    summaries = blocks.locator("summary").all_inner_texts()
    assert summaries[0].startswith("tool fx.echo")
    outcomes = blocks.locator("summary .outcome").all_inner_texts()
    assert outcomes == ["ok"] * 19 + ["error"]
    assert blocks.nth(0).locator("pre").nth(0).text_content() == json.dumps(
        {"text": "echo 11"}, indent=2
    )
    assert blocks.nth(0).locator("pre").nth(1).text_content() == "echo 11"
    # The log shows its end; the earlier turns come when asked for, above, and then no more.
    log = page.locator("#chat-log")
    assert log.evaluate("l => l.scrollTop + l.clientHeight >= l.scrollHeight - 2")
    # Clicked where it is: a real click scrolls it into view first, and the log scrolled to its
    # top loads the earlier turns itself (tested below), which takes the button away under the
    # click (a race that a slower page load made frequent).
    page.locator("#chat-earlier").dispatch_event("click")
    # Exactly "turn 1": has_text matches a substring, and "turn 11" is on the page already.
    page.locator("#chat-log .msg.user", has_text=re.compile(r"^turn 1$")).wait_for()
    assert users.all_inner_texts() == [f"turn {n}" for n in range(1, 31)]
    assert page.locator("#chat-earlier").count() == 0
    assert blocks.count() == 30
    assert blocks.locator("summary").nth(0).inner_text().startswith("tool fx.echo")
    # Scrolling to the top asks for them too.
    page.reload()
    page.locator("#chat-log .msg.user", has_text="turn 30").wait_for()
    log.evaluate("l => { l.scrollTop = 0; }")
    page.locator("#chat-log .msg.user", has_text="turn 10").wait_for()
    assert users.count() == 30


def _sandbox_port(served: Served) -> int:
    text = (served.root / "config.toml").read_text()
    return int(text.split("[sandbox]\nport = ")[1].split("\n")[0])


# ---- login ------------------------------------------------------------------------------------


def test_with_auth_the_page_says_how_to_log_in_and_login_keeps_the_link(
    browser: Any, tmp_path: Path
) -> None:
    port = free_port_pair()
    write_project(tmp_path, port + 1, auth=True)
    supervisor = Served(tmp_path, port)
    supervisor.start()
    try:
        context = browser.new_context()
        context.set_default_timeout(WAIT_MS)
        page = context.new_page()
        page.goto(supervisor.url("/?open=basic.get-time"))
        page.locator("#login:not([hidden])").wait_for()
        assert "/login?token=" in page.inner_text("#login")
        page.fill('#login-form input[name="token"]', TOKEN)
        page.click("#login-form button")
        page.wait_for_url("**/?open=basic.get-time")
        view(page).locator("#get-time-btn").wait_for()
        app_item(page, "basic").wait_for()
        context.close()
    finally:
        supervisor.stop()
