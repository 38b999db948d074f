"""A sandbox origin per app (`[sandbox] app_origins = true`): each app's views keep their own
origin (`http://<label>.localhost:<sandbox port>`), so two apps' views cannot read each other's
storage while an app's views share theirs, and the official server-basic-vue runs without its
SecurityError. The origin rules, pure and through the sandbox's ASGI app; then in headless
Chromium against a real `mcpapps run`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from tests.support import chromium, forkserver
from tests.support.controlpage import (
    Served,
    page,
    view,
)
from tests.support.helpers import free_port_pair
from tests.support.nodetools import TOOLS, node_binary
from tests.support.running import GUARD_S
from web.apporigins import (
    app_label,
    app_origin,
    app_origins_source,
    framers,
    is_app_host,
    on_app_domain,
)
from web.control import page_csp
from web.sandbox import AppOrigins, sandbox_app

_ = (page,)  # the fixture, used by name (the browser is conftest.py's, one per worker)
BOARD_APP = Path(__file__).parent / "apps" / "board_app.py"
SANDBOX = "http://127.0.0.1:18791"


def test_each_app_has_an_origin_of_its_own() -> None:
    assert app_label("grocery-inventory").startswith("grocery-inventory-")
    # Ids that read alike still differ; any id makes a DNS label.
    assert app_label("Board.App") != app_label("board-app")
    assert len(app_label("x" * 300)) <= 63
    assert app_label("Ünïcode app").replace("-", "").isalnum()
    board = app_origin(SANDBOX, "board")
    assert board == f"http://{app_label('board')}.localhost:18791"
    assert app_origin("https://sandbox.example.com", "board") == (
        f"https://{app_label('board')}.sandbox.example.com"
    )
    assert app_origin("http://10.0.0.5:8001", "board") is None  # an address has no sub-domains
    assert app_origins_source(SANDBOX) == "http://*.localhost:18791"
    host = f"{app_label('board')}.localhost:18791"
    assert is_app_host(host, SANDBOX, "board")
    assert not is_app_host(host, SANDBOX, "other")
    assert not is_app_host(f"{app_label('board')}.localhost:9", SANDBOX, "board")
    assert on_app_domain(host, SANDBOX)
    assert not on_app_domain("127.0.0.1:18791", SANDBOX)
    assert framers(["http://127.0.0.1:18790"]) == (
        "http://127.0.0.1:18790 http://localhost:18790 http://[::1]:18790"
    )
    assert "frame-src http://127.0.0.1:18791 http://*.localhost:18791;" in page_csp(
        SANDBOX, app_origins_source(SANDBOX)
    )


async def served_page(app: str, host: str, **headers: str) -> tuple[int, dict[str, str], str]:
    """One GET /sandbox?app=<app> through the sandbox's ASGI app, with app origins on."""
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    raw = [(b"host", host.encode())] + [
        (k.replace("_", "-").encode(), v.encode()) for k, v in headers.items()
    ]
    query = f"app={app}&csp={quote(json.dumps({}))}".encode()
    scope = {"type": "http", "path": "/sandbox", "method": "GET", "query_string": query}
    scope["headers"] = raw
    origins = AppOrigins(SANDBOX, "http://127.0.0.1:18790")
    await sandbox_app(scope, receive, send, lambda _: frozenset(), origins)
    found = {k.decode(): v.decode() for k, v in sent[0]["headers"]}
    return sent[0]["status"], found, sent[1]["body"].decode()


async def test_a_proxy_page_on_an_app_origin_is_that_app_s_and_the_control_page_s() -> None:
    mine = f"{app_label('board')}.localhost:18791"
    status, headers, body = await served_page(
        "board", mine, sec_fetch_site="cross-site", sec_fetch_dest="iframe"
    )
    assert status == 200
    assert headers["content-security-policy"].endswith("; frame-ancestors http://127.0.0.1:18790")
    assert '"sameOrigin": true' in body
    # Another app's origin does not serve this app's page (nor its allowances).
    status, _, body = await served_page("board", f"{app_label('other')}.localhost:18791")
    assert status == 403
    assert "not the sandbox origin of the app" in body
    # A view, same-origin with its proxy page, cannot load another one (its own navigation).
    status, _, _ = await served_page("board", mine, sec_fetch_site="same-origin")
    assert status == 403
    status, _, _ = await served_page("board", mine, sec_fetch_dest="document")
    assert status == 403
    # The shared origin serves the opaque page as before.
    status, headers, body = await served_page("board", "127.0.0.1:18791")
    assert status == 200
    assert "frame-ancestors" not in headers["content-security-policy"]
    assert '"sameOrigin"' not in body


# --- in the browser ---------------------------------------------------------------------------


def write_project(root: Path, sandbox_port: int) -> None:
    board = {"command": forkserver.python(), "arguments": [str(BOARD_APP)]}
    vue = TOOLS / "node_modules" / "@modelcontextprotocol" / "server-basic-vue" / "dist"
    manifests = {
        "board": board,
        "other": board,
        "vue": {"command": str(node_binary()), "arguments": [str(vue / "index.js"), "--stdio"]},
    }
    for app_id, fields in manifests.items():
        folder = root / "apps" / app_id
        folder.mkdir(parents=True)
        manifest = {"id": app_id, "toolNamePrefix": f"{app_id}.", "hasUi": True, **fields}
        (folder / "openclaw.mcpapp.json").write_text(json.dumps(manifest))
    entries = "".join(f'[apps.entries.{a}]\napproval = "never"\n' for a in manifests)
    (root / "config.toml").write_text(
        f"[sandbox]\nport = {sandbox_port}\napp_origins = true\n"
        '[apps]\ndiscovery_paths = ["./apps"]\n' + entries
    )


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    chromium.require()
    root = tmp_path_factory.mktemp("origins")
    port = free_port_pair()
    write_project(root, port + 1)
    supervisor = Served(root, port)
    supervisor.start()
    yield supervisor
    supervisor.stop()


def open_board(page: Any, served: Served, app_id: str) -> None:
    page.goto(served.url(f"/?open={app_id}.show_board"))
    page.wait_for_function("() => (window.McpHost.current() || {}).initialized")
    view(page).locator("#report").wait_for()


def in_view(page: Any, script: str) -> Any:
    return view(page).locator("body").evaluate(f"() => {{ {script} }}")


# Each view tries every storage it might have; what the browser refuses reads as null (the
# Chromium of the tests refuses a third-party frame's storage; a browser that allows it keeps it
# per origin, partitioned by the top-level site).
WRITE = """
for (const store of [localStorage, sessionStorage]) store.setItem('secret', 'board');
"""
READ = """
const read = (get) => { try { return get(); } catch (e) { return null; } };
return {
  origin: window.origin,
  local: read(() => localStorage.getItem('secret')),
  session: read(() => sessionStorage.getItem('secret')),
  cookie: read(() => document.cookie),
};
"""


def test_two_apps_views_cannot_read_each_other_s_storage(served: Served, page: Any) -> None:
    sandbox_port = served.port + 1
    open_board(page, served, "board")
    in_view(page, f"try {{ {WRITE} }} catch (e) {{ }}")
    in_view(page, "document.cookie = 'secret=board; path=/';")
    in_view(page, "document.cookie = 'wide=board; domain=localhost; path=/';")
    mine = in_view(page, READ)
    assert mine["origin"] == f"http://{app_label('board')}.localhost:{sandbox_port}"

    open_board(page, served, "other")
    theirs = in_view(page, READ)
    assert theirs["origin"] == f"http://{app_label('other')}.localhost:{sandbox_port}"
    assert theirs["local"] is None
    assert theirs["session"] is None
    assert "board" not in (theirs["cookie"] or "")
    # Nor can it reach the other app's origin: neither fetched nor framed.
    board_sandbox = f"http://{app_label('board')}.localhost:{sandbox_port}/sandbox?app=board"
    fetched = (
        view(page)
        .locator("body")
        .evaluate(
            f"async () => {{ try {{ await fetch({json.dumps(board_sandbox)}); return 'read'; }}"
            " catch (e) { return 'blocked'; } }"
        )
    )
    assert fetched == "blocked"

    # An app's views share what they keep (whatever the browser lets them keep).
    open_board(page, served, "board")
    again = in_view(page, READ)
    assert again["local"] == mine["local"]
    assert again["origin"] == mine["origin"]


def test_the_official_vue_app_runs_without_its_security_error(served: Served, page: Any) -> None:
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
    assert not [m for m in messages if "SecurityError" in m], messages
