"""A view opened as the chat's call starts, in headless Chromium, with the board test app
(tests/apps/board_app.py, whose view reports what the host sends it and registers a tool):
`tool-cancelled` when the turn is cancelled or the call fails; `tool-input-partial` while the
openai engine streams a UI tool's arguments (the fake chat-completions server); and the tools a
view registers, offered to its chat's model while it is open, called through the page and gone
once it closes, never offered to another chat session (the direct engine).

Synchronous (Playwright's sync API); the supervisor runs as a subprocess (tests/test_browser.py).
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import chromium, forkserver
from tests.support.controlpage import (
    Served,
    page,
    view,
)
from tests.support.helpers import free_port, free_port_pair
from tests.support.running import GUARD_S

_ = (page,)  # the fixture, used by name (the browser is conftest.py's, one per worker)
BOARD_APP = Path(__file__).parent / "apps" / "board_app.py"
FAKE_OPENAI = Path(__file__).parent / "support" / "fake_openai.py"


def write_project(root: Path, sandbox_port: int, agent: str = "") -> None:
    folder = root / "apps" / "board"
    folder.mkdir(parents=True)
    manifest = {
        "id": "board",
        "toolNamePrefix": "board.",
        "hasUi": True,
        "command": forkserver.python(),
        "arguments": [str(BOARD_APP)],
    }
    (folder / "openclaw.mcpapp.json").write_text(json.dumps(manifest))
    (root / "config.toml").write_text(
        f"[sandbox]\nport = {sandbox_port}\n"
        '[apps]\ndiscovery_paths = ["./apps"]\n'
        '[apps.entries.board]\napproval = "never"\n' + agent
    )


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    chromium.require()
    root = tmp_path_factory.mktemp("live")
    port = free_port_pair()
    write_project(root, port + 1)
    supervisor = Served(root, port)
    supervisor.start()
    yield supervisor
    supervisor.stop()


def report(page: Any, until: Any) -> dict[str, Any]:
    """The board view's report once `until(report)` holds."""
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


def start(page: Any, served: Served) -> None:
    page.goto(served.url("/?app=board"))
    page.locator("#live.live").wait_for()
    page.locator('#tools-visible li[data-tool="slow_board"]').wait_for()  # the tool table
    page.click("#chat-new")


def say(page: Any, text: str) -> None:
    page.locator("#chat-send:not([disabled])").wait_for()
    page.fill("#chat-input", text)
    page.click("#chat-send")


def call_result(page: Any, text: str) -> str:
    """The result of the tool call `text` asks for, as the chat log shows it."""
    blocks = page.locator("#chat-log details.tool")
    before = blocks.count()
    say(page, text)
    block = blocks.nth(before)
    block.locator("summary .outcome").wait_for()
    return block.locator("pre").last.text_content() or ""


def test_a_cancelled_turn_cancels_its_view_s_call(served: Served, page: Any) -> None:
    start(page, served)
    say(page, '/call board.slow_board {"label": "waiting"}')
    # The view opens as the call starts, with its input, and no result yet.
    seen = report(page, lambda r: r["inputs"] == [{"label": "waiting"}])
    assert seen["results"] == 0
    assert seen["cancelled"] is None
    page.click("#chat-cancel")
    seen = report(page, lambda r: r["cancelled"] is not None)
    assert "cancelled" in seen["cancelled"]
    assert seen["results"] == 0
    assert seen["seen"][-1] == "ui/notifications/tool-cancelled"


def test_a_failed_call_cancels_its_view_s_call(served: Served, page: Any) -> None:
    start(page, served)
    say(page, '/call board.show_board {"label": {"not": "a string"}}')
    seen = report(page, lambda r: r["cancelled"] is not None)
    assert seen["results"] == 0
    assert "label" in seen["cancelled"]


def test_a_view_s_tools_reach_its_chat_while_it_is_open(served: Served, page: Any) -> None:
    start(page, served)
    say(page, '/call board.show_board {"label": "mine"}')
    report(page, lambda r: r["results"] == 1)
    page.wait_for_function("() => window.McpHost.current() && window.McpHost.current().initialized")
    # Listed to the chat's model, under a name that says whose it is...
    say(page, "/tools")
    page.locator("#chat-log .msg.assistant", has_text="view.board.pick_color").wait_for()
    # ... and called in the view, its answer back to the turn.
    called = call_result(page, '/call view.board.pick_color {"color": "teal"}')
    assert called == "the board is teal"
    seen = report(page, lambda r: len(r["calls"]) == 1)
    assert seen["calls"] == [{"name": "pick_color", "arguments": {"color": "teal"}}]

    # Another chat session never sees it, nor reaches it.
    page.click("#chat-new")
    say(page, "/tools")
    listed = page.locator("#chat-log .msg.assistant").last
    listed.wait_for()
    page.locator("#chat-send:not([disabled])").wait_for()
    assert "view.board" not in listed.inner_text()
    refused = call_result(page, '/call view.board.pick_color {"color": "red"}')
    assert "no view this chat has open offers" in refused
    assert len(report(page, lambda r: True)["calls"]) == 1

    # Once the view closes, its tools are gone from its own chat too.
    page.click("#canvas-close")
    page.wait_for_function("() => !window.McpHost.current()")
    session = page.evaluate("localStorage.getItem('mcpapps.chat.session')")
    assert session
    gone = call_result(page, '/call view.board.pick_color {"color": "blue"}')
    assert "no view this chat has open offers" in gone


def test_a_ui_tool_s_arguments_reach_its_view_as_they_stream(browser: Any, tmp_path: Path) -> None:
    script = tmp_path / "replies.json"
    arguments = json.dumps({"label": "streamed in pieces, as models write them"})
    script.write_text(
        json.dumps(
            [
                {"tool_calls": [{"name": "board_show_board", "arguments": arguments, "id": "c1"}]},
                {"text": ["Shown."]},
            ]
        )
    )
    model_port = free_port()
    model = subprocess.Popen(
        [forkserver.python(), str(FAKE_OPENAI), "--port", str(model_port), "--script", str(script)]
    )
    port = free_port_pair()
    agent = f'[agent]\nengine = "openai"\nbase_url = "http://127.0.0.1:{model_port}/v1"\n'
    write_project(tmp_path, port + 1, agent + 'model = "fake-model"\n')
    supervisor = Served(tmp_path, port)
    supervisor.start()
    try:
        context = browser.new_context(viewport={"width": 1400, "height": 900})
        context.set_default_timeout(GUARD_S * 1000)
        page = context.new_page()
        start(page, supervisor)
        say(page, "show the board")
        seen = report(page, lambda r: r["results"] == 1)
        whole = {"label": "streamed in pieces, as models write them"}
        assert seen["inputs"] == [whole]
        assert seen["partials"], seen
        assert all(whole["label"].startswith(p.get("label", "")) for p in seen["partials"])
        order = seen["seen"]
        assert order.index("ui/notifications/tool-input-partial") < order.index(
            "ui/notifications/tool-input"
        )
        context.close()
    finally:
        supervisor.stop()
        model.terminate()
        model.wait(GUARD_S)
