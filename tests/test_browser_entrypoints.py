"""Entry points in the control page, in headless Chromium against a real `mcpapps run` hosting an
app built with the OpenAI extensions SDK (tests/apps/extensions_app.py), whose entry points' view
reports what the host told it: a global entry point opened full screen from the launcher and from
a link with a deep link (read back inside the view; another link to the same open view told as
`host-context-changed`, not reloaded), a thread entry point as a tab with one instance per chat
session, and the refusals (a deep link with a fragment, a tool that does not accept `{}`)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from actors.tls import client_tls
from tests.support import chromium
from tests.support.controlpage import (  # the page fixture, as the page's own tests use
    TOKEN,
    WAIT_MS,
    Served,
    app_item,
    page,
    screenshot,
)
from tests.support.extensions import extensions_manifest
from tests.support.helpers import free_port_pair
from tests.support.running import GUARD_S

__all__ = ["page"]  # the fixture, used by name (the browser is conftest.py's)

CATALOG = '#launcher a[data-entry="ext.parts_catalog"]'
TRAY = '.chat-tab[data-tab="ext.parts_tray"]'


def write_project(root: Path, sandbox_port: int, *, token: str | None = None) -> None:
    manifests = {
        "ext": extensions_manifest("ext"),
        "bad-entry": extensions_manifest("bad-entry", "--hostile", "entry-refuses-empty"),
    }
    for app_id, manifest in manifests.items():
        folder = root / "apps" / app_id
        folder.mkdir(parents=True)
        (folder / "openclaw.mcpapp.json").write_text(json.dumps(manifest))
    server = f'[server]\nalways_require_auth = true\ntoken = "{token}"\n' if token else ""
    (root / "config.toml").write_text(
        f'{server}[sandbox]\nport = {sandbox_port}\n[apps]\ndiscovery_paths = ["./apps"]\n'
    )


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    chromium.require()
    root = tmp_path_factory.mktemp("entrypoints")
    port = free_port_pair()
    write_project(root, port + 1)
    supervisor = Served(root, port)
    supervisor.start()
    yield supervisor
    supervisor.stop()


def ready(page: Any, served: Served, path: str = "/") -> None:
    page.goto(served.url(path))
    for app_id in ("ext", "bad-entry"):
        app_item(page, app_id).locator(".state-Running").wait_for()


def report(page: Any, frame: str, showing: str) -> dict[str, Any]:
    """What the entry point's view says it was told, once it says `showing`."""
    said = page.frame_locator(frame).frame_locator("iframe").locator("#report", has_text=showing)
    said.wait_for()
    found: dict[str, Any] = json.loads(said.inner_text())
    return found


def canvas_report(page: Any, showing: str) -> dict[str, Any]:
    return report(page, "#canvas iframe", showing)


def session_of(page: Any) -> str:
    return str(page.evaluate("localStorage.getItem('mcpapps.chat.session')"))


def test_a_global_entry_point_opens_full_screen_from_the_launcher(
    served: Served, page: Any
) -> None:
    ready(page, served)
    item = page.locator(CATALOG)
    item.wait_for()
    assert item.inner_text() == "Parts catalog"
    assert item.locator("img.entry-icon").get_attribute("src").startswith("data:image/svg+xml")
    assert page.locator("#launcher a.entry").all_inner_texts() == [
        "pick_part",  # no title: its name (bad-entry is found first: the apps' order)
        "broken_entry",
        "Parts catalog",
    ]
    screenshot(page, "launcher.png")
    page.set_viewport_size({"width": 360, "height": 800})  # a phone: the launcher scrolls in place
    assert page.evaluate("document.documentElement.scrollWidth") <= 360
    page.set_viewport_size({"width": 1400, "height": 900})
    item.click()
    said = canvas_report(page, '"inits":1')
    assert said["deepLink"] == "/"  # no path: the app's root
    assert said["result"] == {"opened": "catalog", "parts": 5}  # the tool called with {}
    assert said["displayMode"] == "fullscreen"
    assert page.locator("#canvas-pane.display-fullscreen").is_visible()
    assert page.inner_text("#canvas-title") == "Parts catalog"
    assert "entry=ext.parts_catalog" in page.url
    screenshot(page, "entry-fullscreen.png")


def test_a_deep_link_reaches_the_view_and_another_link_does_not_reload_it(
    served: Served, page: Any
) -> None:
    ready(page, served, "/?entry=ext.parts_catalog&path=%2Fparts%3Ftag%3Dbolt%26sort%3Dasc")
    first = canvas_report(page, '"inits":1')
    assert first["deepLink"] == "/parts?tag=bolt&sort=asc"
    assert first["links"] == []

    # Another link to the same open app (the launcher's, once out of full screen).
    page.click("#canvas-inline")
    page.click(CATALOG)
    second = canvas_report(page, '"links":["/"]')
    assert second["instance"] == first["instance"]  # the same document: told, not reloaded
    assert second["deepLink"] == "/"
    assert page.locator("#canvas-pane.display-fullscreen").is_visible()

    # Back: the first link again, told the same way.
    page.go_back()
    third = canvas_report(page, '"links":["/","/parts?tag=bolt&sort=asc"]')
    assert third["instance"] == first["instance"]
    assert third["inits"] == 1


def test_a_deep_link_with_a_fragment_is_refused(served: Served, page: Any) -> None:
    ready(page, served, "/?entry=ext.parts_catalog&path=%2Fparts%23top")
    refusal = page.locator("#entry-refusal")
    refusal.wait_for()
    assert "has a fragment ('#top')" in refusal.inner_text()
    assert page.locator("#canvas iframe").count() == 0  # nothing opened
    # Typed unencoded, the '#' ends the page's own URL: taken as the path's, and refused too.
    page.goto(served.url("/?entry=ext.parts_catalog&path=/parts#part-7"))
    page.locator("#entry-refusal", has_text="has a fragment ('#part-7')").wait_for()
    assert page.locator("#canvas iframe").count() == 0


def test_an_entry_point_whose_tool_rejects_empty_arguments_is_refused(
    served: Served, page: Any
) -> None:
    ready(page, served)
    page.click('#launcher a[data-entry="bad-entry.pick_part"]')
    refusal = page.locator("#entry-refusal")
    refusal.wait_for()
    assert "requires part" in refusal.inner_text()
    assert "must accept {}" in refusal.inner_text()
    page.click('#launcher a[data-entry="bad-entry.broken_entry"]')
    page.locator("#entry-refusal", has_text="no part is chosen yet").wait_for()
    assert page.locator("#canvas iframe").count() == 0


def tab_frame(session: str) -> str:
    return f'[data-tab-view="ext.parts_tray"][data-session="{session}"] iframe'


def send(page: Any, text: str) -> None:
    page.fill("#chat-input", text)
    page.click("#chat-send")
    page.locator("#chat-send:not([disabled])").wait_for()


def test_a_thread_entry_point_is_a_tab_with_an_instance_per_chat(served: Served, page: Any) -> None:
    ready(page, served)
    page.locator(TRAY).wait_for()
    assert page.locator("#chat-tabs .chat-tab").all_inner_texts() == ["Conversation", "Parts tray"]
    send(page, "/tools")
    first = session_of(page)
    page.click(TRAY)
    in_first = report(page, tab_frame(first), '"inits":1')
    assert in_first["result"] == {"opened": "tray", "session": first}  # its call carried the chat
    assert page.locator("#chat-log").is_hidden()
    assert "tab=ext.parts_tray" in page.url

    # A new chat shows its conversation; its tab opens an instance of its own.
    page.click("#chat-new")
    assert page.locator("#chat-log").is_visible()
    send(page, "/tools")
    second = session_of(page)
    assert second != first
    page.click(TRAY)
    in_second = report(page, tab_frame(second), '"inits":1')
    assert in_second["result"]["session"] == second
    assert in_second["instance"] != in_first["instance"]
    assert page.locator(tab_frame(first)).is_hidden()  # the first chat's stays, not shown
    assert page.locator(tab_frame(second)).is_visible()
    page.click('.chat-tab[data-tab=""]')
    assert page.locator("#chat-log").is_visible()
    page.click(TRAY)  # the same chat's tab again: the same instance, not a new one
    assert report(page, tab_frame(second), '"inits":1')["instance"] == in_second["instance"]
    assert page.locator(".tab-view").count() == 2

    # The link: the tab in that chat.
    page.goto(served.url(f"/?session={first}&tab=ext.parts_tray"))
    again = report(page, tab_frame(first), '"inits":1')
    assert again["result"]["session"] == first


def test_the_launcher_as_the_readme_shows_it(served: Served, page: Any) -> None:
    """docs/images/launcher.png: the launcher of a well-behaved app, and a chat's tab open."""
    admin = httpx2.Client(verify=client_tls(), base_url=served.url(""), timeout=GUARD_S)
    assert admin.post("/admin/apps/bad-entry/stop").status_code == 200
    try:
        ready_ext(page, served)
        page.locator("#launcher a.entry", has_text="pick_part").wait_for(state="detached")
        send(page, "/tools")
        page.click(TRAY)
        report(page, tab_frame(session_of(page)), '"inits":1')
        screenshot(page, "launcher-docs.png")
    finally:
        assert admin.post("/admin/apps/bad-entry/start").status_code == 200
        admin.close()


def ready_ext(page: Any, served: Served) -> None:
    page.goto(served.url("/"))
    app_item(page, "ext").locator(".state-Running").wait_for()
    page.locator(CATALOG).wait_for()


def test_a_bookmarked_deep_link_survives_logging_in(browser: Any, tmp_path: Path) -> None:
    port = free_port_pair()
    write_project(tmp_path, port + 1, token=TOKEN)
    supervisor = Served(tmp_path, port)
    supervisor.start()
    try:
        context = browser.new_context()
        context.set_default_timeout(WAIT_MS)
        page = context.new_page()
        page.goto(supervisor.url("/?entry=ext.parts_catalog&path=%2Fparts%2Fhex-bolt"))
        page.locator("#login:not([hidden])").wait_for()
        page.fill('#login-form input[name="token"]', TOKEN)
        page.click("#login-form button")
        page.wait_for_url("**/?entry=ext.parts_catalog&path=%2Fparts%2Fhex-bolt")
        assert canvas_report(page, '"inits":1')["deepLink"] == "/parts/hex-bolt"
        context.close()
    finally:
        supervisor.stop()
