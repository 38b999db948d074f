"""Official MCP App examples (npm `@modelcontextprotocol/server-*`, pinned in tools/package.json)
and the probe app as hosted apps, in headless Chromium, through the page's AppBridge: what a
view's CSP allows per app and what the canvas says when it blocks, the per-app UI size limit,
display modes, the host context and the page's styles seen from inside a view.

Synchronous (Playwright's sync API); the supervisor runs as a subprocess (tests/test_browser.py).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx2
import pytest

from actors.tls import client_tls
from tests.support import chromium, forkserver
from tests.support.controlpage import (
    Served,
    page,
    screenshot,
    view,
)
from tests.support.helpers import free_port, free_port_pair
from tests.support.nodetools import TOOLS, node_binary
from tests.support.png import colours
from tests.support.running import GUARD_S

VIEWS_APP = Path(__file__).parent / "apps" / "views_app.py"
_ = (page,)  # the fixture, used by name (the browser is conftest.py's, one per worker)
THREE_MIB = 3 * 1024 * 1024
FIVE_MIB = 5 * 1024 * 1024


def tiny_pdf(text: str) -> bytes:
    """A one-page PDF that shows `text` (Helvetica), with a correct cross-reference table."""
    stream = f"BT /F1 24 Tf 72 720 Td ({text}) Tj ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R"
        b" /Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


def official(package: str) -> list[str]:
    script = TOOLS / "node_modules" / "@modelcontextprotocol" / package / "dist" / "index.js"
    assert script.exists(), f"{script} is missing: run scripts/node-tools.sh"
    return [str(node_binary()), str(script), "--stdio"]


def write_project(root: Path, sandbox_port: int) -> None:
    three = official("server-threejs")
    vue = official("server-basic-vue")
    (root / "paper.pdf").write_bytes(tiny_pdf("Hello from mcpapps"))
    pdf = [*official("server-pdf"), str(root / "paper.pdf")]
    monitor = official("server-system-monitor")
    probe = [
        forkserver.python(),
        str(VIEWS_APP),
        "--declared-origin",
        f"http://127.0.0.1:{free_port()}",
        "--undeclared-origin",
        f"http://localhost:{free_port()}",
    ]
    manifests = {
        "three": {"command": three[0], "arguments": three[1:]},
        "strict": {"command": three[0], "arguments": three[1:]},
        "views": {"command": probe[0], "arguments": probe[1:]},
        "big": {"command": probe[0], "arguments": [*probe[1:], "--display-modes", "fullscreen"]},
        "vue": {"command": vue[0], "arguments": vue[1:]},
        "pdf": {"command": pdf[0], "arguments": pdf[1:]},
        "monitor": {"command": monitor[0], "arguments": monitor[1:]},  # approval: the default
        "pref": {"command": probe[0], "arguments": [*probe[1:], "--preferred-mode", "fullscreen"]},
    }
    for app_id, fields in manifests.items():
        folder = root / "apps" / app_id
        folder.mkdir(parents=True)
        manifest = {"id": app_id, "toolNamePrefix": f"{app_id}.", "hasUi": True, **fields}
        (folder / "openclaw.mcpapp.json").write_text(json.dumps(manifest))
    plain = ("strict", "views", "vue", "pref")
    entries = "".join(f'[apps.entries.{a}]\napproval = "never"\n' for a in plain)
    (root / "config.toml").write_text(
        f"[sandbox]\nport = {sandbox_port}\n"
        '[apps]\ndiscovery_paths = ["./apps"]\n'
        '[apps.entries.three]\napproval = "never"\ncsp_allow = ["unsafe-eval"]\n'
        f'[apps.entries.big]\napproval = "never"\nmax_ui_bytes = {THREE_MIB}\n'
        f'[apps.entries.pdf]\napproval = "never"\nmax_ui_bytes = {FIVE_MIB}\n'
        # pdf.js: its worker's code as a data: module (or, failing that, run in the page)
        'csp_allow = ["unsafe-eval", "data-scripts", "data-workers", "blob-workers"]\n' + entries
    )


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    chromium.require()
    root = tmp_path_factory.mktemp("official")
    port = free_port_pair()
    write_project(root, port + 1)
    supervisor = Served(root, port)
    supervisor.start()
    yield supervisor
    supervisor.stop()


def report(page: Any, until: Any) -> dict[str, Any]:
    """The probe's report once `until(report)` holds."""
    shown = view(page).locator("#report")
    deadline = time.monotonic() + GUARD_S
    while True:
        text = shown.inner_text()
        if text.startswith("{"):
            data = json.loads(text)
            if until(data):
                return data
        assert time.monotonic() < deadline, text
        time.sleep(0.05)


def canvas_colours(page: Any) -> int:
    canvas = view(page).locator("canvas")
    canvas.wait_for()
    return colours(canvas.screenshot())


# The app's default scene turns a cube on every frame, in software WebGL here: a core for as long
# as the view is open. The same evaluated code drawn once (again when the view resizes, as the
# app runs a scene's code anew at each size) shows the same things at a fraction of the CPU.
STILL_SCENE = """
const scene = new THREE.Scene();
const camera = new THREE.PerspectiveCamera(75, width / height, 0.1, 1000);
const renderer = new THREE.WebGLRenderer({ canvas, antialias: true, alpha: true });
renderer.setSize(width, height);
const ball = new THREE.Mesh(
  new THREE.SphereGeometry(1, 48, 32),
  new THREE.MeshStandardMaterial({ color: 0x00ff88 })
);
scene.add(ball);
const light = new THREE.DirectionalLight(0xffffff, 1);
light.position.set(1, 1, 2);
scene.add(light);
scene.add(new THREE.AmbientLight(0x404040));
camera.position.z = 3;
renderer.render(scene, camera);
"""


def test_threejs_draws_with_eval_allowed_for_it(served: Served, page: Any) -> None:
    args = quote(json.dumps({"code": STILL_SCENE}))
    page.goto(served.url(f"/?open=three.show_threejs_scene&args={args}"))
    page.wait_for_function("() => window.McpHost.current() && window.McpHost.current().initialized")
    deadline = time.monotonic() + GUARD_S
    while canvas_colours(page) < 50:  # the scene's shading: many colours, not a blank canvas
        assert time.monotonic() < deadline, "the three.js scene was not drawn"
        time.sleep(0.2)
    assert page.evaluate("window.McpHost.current().violations") == []
    assert page.locator("#canvas .csp-notice").count() == 0
    screenshot(page, "threejs.png")

    # Its own full-screen button (shown because the host offers full screen) and back.
    pane = page.locator("#canvas-pane")
    view(page).locator(".threejs-container").hover()
    view(page).locator(".fullscreen-btn.available").click()
    page.locator("#canvas-pane.display-fullscreen").wait_for()
    view(page).locator(".threejs-container.fullscreen").wait_for()
    assert canvas_colours(page) >= 50
    screenshot(page, "threejs-fullscreen.png")
    page.locator("#canvas-inline").click()
    view(page).locator(".threejs-container:not(.fullscreen)").wait_for()
    assert "display-fullscreen" not in (pane.get_attribute("class") or "")


def test_threejs_without_the_allowance_says_which_setting_allows_it(
    served: Served, page: Any
) -> None:
    page.goto(served.url("/?open=strict.show_threejs_scene"))
    notice = page.locator("#canvas .csp-notice")
    notice.wait_for()
    assert '[apps.entries.strict] csp_allow = ["unsafe-eval"]' in notice.inner_text()
    violations = page.evaluate("window.McpHost.current().violations")
    assert violations[0]["blockedURI"] == "eval"


def test_the_view_is_told_what_its_sandbox_applied(served: Served, page: Any) -> None:
    page.goto(served.url("/?open=views.show_probe"))
    seen = report(page, lambda r: "sandbox" in r)
    # Only what was applied: the declared origin (valid), nothing of what was not declared.
    applied = seen["sandbox"]["csp"]
    assert list(applied) == ["connectDomains"]
    assert len(applied["connectDomains"]) == 1
    assert applied["connectDomains"][0].startswith("http://127.0.0.1:")


def test_a_view_over_2_mib_renders_when_its_app_is_allowed_more(served: Served, page: Any) -> None:
    page.goto(served.url("/?open=views.too_big"))
    refusal = page.locator("#canvas .refusal")
    refusal.wait_for()
    assert "[apps.entries.views] max_ui_bytes" in refusal.inner_text()
    page.goto(served.url("/?open=big.too_big"))
    view(page).locator("p").wait_for()
    assert page.locator("#canvas .refusal").count() == 0


def test_fullscreen_round_trip_and_host_context(served: Served, page: Any) -> None:
    page.goto(served.url("/?open=views.show_probe"))
    seen = report(page, lambda r: "availableDisplayModes" in r and r["results"] == 1)
    assert seen["availableDisplayModes"] == ["inline", "fullscreen", "pip"]
    assert seen["displayMode"] == "inline"
    assert seen["toolInfo"] == "show_probe"
    pane = page.locator("#canvas-pane")
    inline_box = page.locator("#canvas iframe").bounding_box()

    # The view asks for full screen: answered with the mode applied, told by host-context-changed,
    # and the frame fills the window.
    view(page).locator("#fullscreen").click()
    seen = report(page, lambda r: r["modes"] == ["fullscreen"] and r["displayMode"] == "fullscreen")
    assert "display-fullscreen" in pane.get_attribute("class")
    box = page.locator("#canvas iframe").bounding_box()
    assert box["width"] > inline_box["width"]
    change = next(c for c in seen["changes"] if c.get("displayMode") == "fullscreen")
    assert "height" in change["containerDimensions"]
    screenshot(page, "fullscreen.png")

    # The visible control leaves it.
    page.locator("#canvas-inline").click()
    report(page, lambda r: r["displayMode"] == "inline")
    assert "display-fullscreen" not in (pane.get_attribute("class") or "")
    assert page.locator("#canvas-inline").is_hidden()

    # So does Escape, when the page has the keyboard.
    view(page).locator("#fullscreen").click()
    report(page, lambda r: r["displayMode"] == "fullscreen")
    page.locator("#canvas-title").click()
    page.keyboard.press("Escape")
    report(page, lambda r: r["displayMode"] == "inline")

    # A page resize is a container-size change.
    before = len(report(page, lambda r: True)["changes"])
    page.set_viewport_size({"width": 1000, "height": 800})
    seen = report(page, lambda r: len(r["changes"]) > before)
    assert any("containerDimensions" in c for c in seen["changes"][before:])


def test_host_styles_follow_the_page_s_theme(served: Served, page: Any) -> None:
    page.emulate_media(color_scheme="light")
    page.goto(served.url("/?open=views.show_probe"))
    seen = report(page, lambda r: "styles" in r)
    assert seen["styles"] >= 70  # the spec's standard variables, all of them
    light = page.evaluate(
        "getComputedStyle(document.documentElement)"
        ".getPropertyValue('--color-background-primary').trim()"
    )
    assert seen["background"] == light == "#fff"
    page.emulate_media(color_scheme="dark")
    seen = report(page, lambda r: r.get("theme") == "dark")
    assert seen["background"] == "#1f1f23"  # the page's dark card colour


def test_a_view_lists_its_app_s_resources(served: Served, page: Any) -> None:
    page.goto(served.url("/?open=views.show_probe"))
    report(page, lambda r: r["results"] == 1)
    view(page).locator("#resources").click()
    seen = report(page, lambda r: "resources" in r)
    assert "ui://views/probe.html" in seen["resources"]
    assert seen["templates"] == 0


def test_a_download_is_saved_once_the_person_allows_it(served: Served, page: Any) -> None:
    page.goto(served.url("/?open=views.show_probe"))
    report(page, lambda r: r["results"] == 1)
    view(page).locator("#download").click()
    page.locator("#confirm:not([hidden])").wait_for()
    assert "notes 1.txt (19 bytes)" in page.inner_text("#confirm-text")
    with page.expect_download() as saving:
        page.click("#confirm-yes")
    download = saving.value
    assert download.suggested_filename == "notes 1.txt"
    assert Path(download.path()).read_text() == "hello from the view"
    assert report(page, lambda r: "downloads" in r)["downloads"] == [{}]
    # Refused: nothing is saved, and the view is told.
    view(page).locator("#download").click()
    page.locator("#confirm:not([hidden])").wait_for()
    page.click("#confirm-no")
    seen = report(page, lambda r: len(r.get("downloads", [])) == 2)
    assert seen["downloads"][1] == {"isError": True}


def test_a_view_opened_from_the_chat_knows_its_call_and_border(served: Served, page: Any) -> None:
    page.goto(served.url("/"))
    page.locator("#live.live").wait_for()
    page.click("#chat-new")
    page.fill("#chat-input", '/call views.show_probe {"label": "chat"}')
    page.click("#chat-send")
    seen = report(page, lambda r: r["results"] == 1)
    assert isinstance(seen["toolInfoId"], str)
    assert seen["toolInfoId"]
    # The resource says prefersBorder: false, and the frame has none.
    assert "borderless" in (page.locator("#canvas iframe").get_attribute("class") or "")


def test_the_official_vue_app_round_trips(served: Served, page: Any) -> None:
    """server-basic-vue in the opaque inner frame: its button calls its server and shows the
    answer. (Vue still logs a SecurityError as its reactivity walks the App object down to the
    cross-origin parent Window: the app's own, and harmless to the round trip.)"""
    messages: list[str] = []
    page.on("console", lambda m: messages.append(m.text))
    page.goto(served.url("/?open=vue.get-time"))
    page.wait_for_function("() => (window.McpHost.current() || {}).initialized")
    shown = view(page).locator("code").first
    deadline = time.monotonic() + GUARD_S
    while not shown.inner_text().startswith("20"):  # the tool result's ISO time
        assert time.monotonic() < deadline, (shown.inner_text(), messages)
        time.sleep(0.05)
    first = shown.inner_text()
    time.sleep(0.01)
    view(page).get_by_role("button", name="Get Server Time").click()
    while shown.inner_text() == first:
        assert time.monotonic() < deadline, (first, messages)
        time.sleep(0.05)
    assert shown.inner_text() > first


def test_the_official_pdf_viewer_renders_a_local_pdf_with_its_limit_raised(
    served: Served, page: Any
) -> None:
    url = (served.root / "paper.pdf").resolve().as_uri()
    page.goto(served.url(f"/?open=pdf.display_pdf&args={quote(json.dumps({'url': url}))}"))
    page.wait_for_function("() => (window.McpHost.current() || {}).initialized")
    canvas = view(page).locator("canvas").first
    canvas.wait_for()
    deadline = time.monotonic() + GUARD_S
    while colours(canvas.screenshot()) < 3:  # the page's text drawn, not a blank sheet
        assert time.monotonic() < deadline, page.evaluate("window.McpHost.current().violations")
        time.sleep(0.2)
    assert page.evaluate("window.McpHost.current().violations") == []
    screenshot(page, "pdf.png")
    # Its full-screen button, and the page's control back.
    view(page).locator("#fullscreen-btn").click()
    page.locator("#canvas-pane.display-fullscreen").wait_for()
    page.locator("#canvas-inline").click()
    page.locator("#canvas-pane:not(.display-fullscreen)").wait_for()


def test_the_official_system_monitor_keeps_polling_once_allowed_while_open(
    served: Served, page: Any
) -> None:
    page.goto(served.url("/?open=monitor.get-system-info"))
    page.wait_for_function("() => (window.McpHost.current() || {}).initialized")
    approval = page.locator("#approval:not([hidden])")
    if not view(page).locator("#poll-toggle-btn.active").count():
        view(page).locator("#poll-toggle-btn").click()
    approval.wait_for()
    assert "poll-system-stats" in page.inner_text("#approval-text")
    page.click("#approval-open")
    # Polled every 2 s: each answer stamps the time; no question again while the view is open.
    status = view(page).locator("#status-text")
    seen: set[str] = set()
    deadline = time.monotonic() + GUARD_S
    while len(seen) < 3:
        text = status.inner_text()
        if len(text) == 8 and text.count(":") == 2:
            seen.add(text)
        assert time.monotonic() < deadline, (seen, text)
        assert approval.count() == 0
        time.sleep(0.2)


def test_picture_in_picture_and_what_a_resource_declares(served: Served, page: Any) -> None:
    page.goto(served.url("/?open=views.show_probe"))
    report(page, lambda r: r["results"] == 1)
    view(page).locator("#pip").click()
    seen = report(page, lambda r: r["displayMode"] == "pip")
    assert seen["modes"] == ["pip"]
    assert "display-pip" in (page.locator("#canvas-pane").get_attribute("class") or "")
    assert page.inner_text("#canvas-inline") == "Back to the page"
    page.locator("#canvas-inline").click()
    report(page, lambda r: r["displayMode"] == "inline")

    # A resource that declares its modes narrows the host's (inline is always there), and a
    # mode it did not declare is answered with the mode the view stays in.
    page.goto(served.url("/?open=big.show_probe"))
    seen = report(page, lambda r: r["results"] == 1)
    assert seen["availableDisplayModes"] == ["inline", "fullscreen"]
    view(page).locator("#pip").click()
    seen = report(page, lambda r: r["modes"] == ["inline"])
    assert seen["displayMode"] == "inline"


def test_a_ui_tool_for_the_model_only_opens_its_view_from_the_chat(
    served: Served, page: Any
) -> None:
    page.goto(served.url("/"))
    page.locator("#live.live").wait_for()
    page.click("#chat-new")
    page.fill("#chat-input", '/call views.show_for_model {"label": "model"}')
    page.click("#chat-send")
    seen = report(page, lambda r: r["results"] == 1)
    assert seen["result"] == {"label": "model", "shown": True}
    assert seen["toolInfo"] == "show_for_model"


def test_a_ui_tool_for_the_model_only_opens_its_view_from_the_app_list(
    served: Served, page: Any
) -> None:
    """ "Open view": its opening call, the person's, passes the view door once."""
    page.goto(served.url("/?app=views"))
    page.locator("#live.live").wait_for()
    page.click('#tools-visible button.open-view[data-tool="show_for_model"]')
    seen = report(page, lambda r: r["results"] == 1)
    assert seen["result"] == {"label": "", "shown": True}
    assert seen["toolInfo"] == "show_for_model"


def test_the_vendored_bridge_is_revalidated_not_sent_again(served: Served) -> None:
    url = served.url("/static/app-bridge.js")
    first = httpx2.get(url, verify=client_tls(), timeout=GUARD_S)
    assert first.status_code == 200
    assert first.text.startswith("// Generated by scripts/vendor-app-bridge.sh")
    again = httpx2.get(
        url, headers={"if-none-match": first.headers["etag"]}, verify=client_tls(), timeout=GUARD_S
    )
    assert again.status_code == 304
    assert again.content == b""


def test_a_resource_s_listed_meta_is_the_fallback(served: Served, page: Any) -> None:
    """Its resources/read content has no _meta.ui; its resources/list entry declares the CSP."""
    page.goto(served.url("/?open=views.show_listed_meta"))
    seen = report(page, lambda r: "sandbox" in r)
    assert list(seen["sandbox"]["csp"]) == ["connectDomains"]


def test_a_view_opens_in_the_mode_its_resource_prefers(served: Served, page: Any) -> None:
    """`_meta["openai/ui"].preferredDisplayMode`: the view opens in full screen."""
    page.goto(served.url("/?open=pref.show_probe"))
    seen = report(page, lambda r: r["results"] == 1)
    assert seen["displayMode"] == "fullscreen"
    assert "display-fullscreen" in (page.locator("#canvas-pane").get_attribute("class") or "")
    page.locator("#canvas-inline").click()
    report(page, lambda r: r["displayMode"] == "inline")
