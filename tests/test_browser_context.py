"""The OpenAI model-context and message extensions in the control page, in headless Chromium
against a real `mcpapps run` hosting a small app whose view speaks the view protocol by hand
(tests/apps/context_app.py): the host capabilities it is told, a context that becomes a chip
in the composer and is replaced by the next update, a chip removed and the view told, the
context kept across a reload of the page and given back to the reopened view, the next turn
carrying it to the engine, a refused thumbnail, and `ui/message` as a draft and as a turn."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from actors.tls import client_tls
from actors.views.modelcontext import MODEL_CONTEXT_MARK
from tests.support import chromium, forkserver
from tests.support.controlpage import (  # the page fixture, as the page's own tests use
    Served,
    app_item,
    in_view,
    page,
    screenshot,
    view,
)
from tests.support.helpers import free_port_pair
from tests.support.png import ONE_PIXEL
from tests.support.running import GUARD_S

__all__ = ["page"]  # the fixture, used by name (the browser is conftest.py's)

CONTEXT_APP = Path(__file__).parent / "apps" / "context_app.py"
TITLED = {
    "type": "text",
    "text": "Selected: M6 hex bolt",
    "_meta": {
        "openai/title": "Hex bolt",
        "openai/thumbnail": {"src": f"data:image/png;base64,{ONE_PIXEL}"},
    },
}
HIDDEN = {"type": "text", "text": "part id 42", "annotations": {"audience": ["assistant"]}}
LINK = {"type": "resource_link", "uri": "cad://parts/washer", "name": "washer"}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    chromium.require()
    root = tmp_path_factory.mktemp("context")
    port = free_port_pair()
    folder = root / "apps" / "ctx"
    folder.mkdir(parents=True)
    manifest = {
        "id": "ctx",
        "command": forkserver.python(),
        "arguments": [str(CONTEXT_APP)],
        "toolNamePrefix": "ctx.",
        "hasUi": True,
    }
    (folder / "openclaw.mcpapp.json").write_text(json.dumps(manifest))
    (root / "config.toml").write_text(
        f'[sandbox]\nport = {port + 1}\n[apps]\ndiscovery_paths = ["./apps"]\n'
        '[apps.entries.ctx]\napproval = "never"\n'
    )
    supervisor = Served(root, port)
    supervisor.start()
    yield supervisor
    supervisor.stop()


def report(page: Any, until: str) -> dict[str, Any]:
    """What the probe view saw, once it has `until`."""
    shown = view(page).locator("#report")
    deadline = time.monotonic() + GUARD_S
    while True:
        text = shown.inner_text()
        if text.startswith("{"):
            data = json.loads(text)
            if until in data:
                return data
        assert time.monotonic() < deadline, text
        time.sleep(0.05)


def ask(page: Any, name: str, method: str, params: dict[str, Any]) -> Any:
    """The view sends `method`; what it was answered (its result, or {error})."""
    in_view(page, f"await ask({json.dumps(name)}, {json.dumps(method)}, {json.dumps(params)});")
    return report(page, "answers")["answers"][name]


def open_from_chat(page: Any, served: Served) -> None:
    page.goto(served.url("/"))
    app_item(page, "ctx").locator(".state-Running").wait_for()
    page.click("#chat-new")
    page.fill("#chat-input", "/call ctx.show_part {}")
    page.click("#chat-send")
    report(page, "ready")


def session_of(page: Any) -> str:
    return str(page.evaluate("localStorage.getItem('mcpapps.chat.session')"))


def chips(served: Served, session: str) -> list[dict[str, Any]]:
    response = httpx2.get(
        served.url("/apps/model-context"),
        params={"sessionId": session},
        verify=client_tls(),
        timeout=GUARD_S,
    )
    return list(response.json()["contexts"])


def test_the_host_says_exactly_what_it_supports(served: Served, page: Any) -> None:
    page.goto(served.url("/?open=ctx.show_part"))
    seen = report(page, "ready")
    capabilities = seen["capabilities"]
    assert capabilities["experimental"] == {"openai/modelContext": {}, "openai/message": {}}
    assert capabilities["updateModelContext"] == {
        "text": {},
        "image": {},
        "resourceLink": {},
        "resource": {},
        "structuredContent": {},
    }
    assert capabilities["message"] == {"text": {}, "image": {}, "resourceLink": {}, "resource": {}}
    assert seen["initial"] is None  # nothing attached yet


def test_an_update_is_a_chip_replaced_by_the_next_and_removed_with_the_view_told(
    served: Served, page: Any
) -> None:
    open_from_chat(page, served)
    first = ask(page, "first", "ui/update-model-context", {"content": [TITLED, HIDDEN]})
    first_id = first["_meta"]["openai/modelContext"]["updateId"]
    chip = page.locator("#chat-context .chip-context")
    chip.wait_for()
    assert chip.get_attribute("data-update-id") == first_id
    assert chip.inner_text().startswith("Hex bolt")  # its title; the hidden block has no chip
    assert "part id 42" not in page.inner_text("#chat-context")
    assert chip.locator("img.chip-thumb").count() == 1
    screenshot(page, "model-context-chip.png")

    second = ask(page, "second", "ui/update-model-context", {"content": [LINK]})
    second_id = second["_meta"]["openai/modelContext"]["updateId"]
    assert second_id != first_id
    page.locator(f'#chat-context [data-update-id="{second_id}"]').wait_for()
    assert page.locator("#chat-context .chip-context").count() == 1  # replaced, not added
    assert chip.inner_text().startswith("washer")
    assert [c["updateId"] for c in chips(served, session_of(page))] == [second_id]

    chip.locator(".chip-remove").click()
    page.locator("#chat-context .chip-context").wait_for(state="detached")
    deadline = time.monotonic() + GUARD_S
    while report(page, "changes")["changes"][-1:] != [None]:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert chips(served, session_of(page)) == []


def test_the_context_outlives_a_reload_and_the_next_turn_carries_it(
    served: Served, page: Any
) -> None:
    open_from_chat(page, served)
    answer = ask(page, "ctx", "ui/update-model-context", {"content": [TITLED, HIDDEN]})
    update_id = answer["_meta"]["openai/modelContext"]["updateId"]
    page.locator("#chat-context .chip-context").wait_for()

    # A reload: the chat's view comes back (restored) with its context, and so does the chip.
    page.reload()
    restored = report(page, "ready")
    assert restored["initial"]["updateId"] == update_id
    assert restored["initial"]["content"] == [TITLED, HIDDEN]
    page.locator(f'#chat-context [data-update-id="{update_id}"]').wait_for()

    page.fill("#chat-input", "which part is this?")
    page.click("#chat-send")
    page.locator("#chat-log .msg.assistant").last.wait_for()
    page.locator("#chat-context .chip-context").wait_for(state="detached")
    saved = httpx2.get(
        served.url(f"/apps/chat/{session_of(page)}"), verify=client_tls(), timeout=GUARD_S
    ).json()
    said = [m["content"] for m in saved["messages"] if m["role"] == "user"][-1]
    assert said.startswith(MODEL_CONTEXT_MARK)
    assert "Selected: M6 hex bolt" in said
    assert "part id 42" in said  # not shown to the person, read by the model
    assert said.endswith("which part is this?")
    # The view is told its context is no longer attached.
    deadline = time.monotonic() + GUARD_S
    while report(page, "changes")["changes"][-1:] != [None]:
        assert time.monotonic() < deadline
        time.sleep(0.05)


@pytest.mark.parametrize("src", ["http://example.com/bolt.png", "javascript:alert(1)"])
def test_a_thumbnail_that_is_not_https_or_data_is_refused(
    served: Served, page: Any, src: str
) -> None:
    page.goto(served.url("/?open=ctx.show_part"))
    report(page, "ready")
    block = {"type": "text", "text": "x", "_meta": {"openai/thumbnail": {"src": src}}}
    answer = ask(page, "bad", "ui/update-model-context", {"content": [block]})
    assert answer["error"]["code"] == -32602
    assert (
        f"must be an https: URL or a data: image; '{src}' is refused" in answer["error"]["message"]
    )
    message = ask(page, "said", "ui/message", {"role": "user", "content": [block]})
    assert message["error"]["code"] == -32602
    assert "is refused" in message["error"]["message"]
    assert page.locator("#chat-context .chip").count() == 0
    assert page.locator("#confirm:not([hidden])").count() == 0  # never put to the person


def test_a_message_with_send_false_is_a_draft_in_the_composer(served: Served, page: Any) -> None:
    page.goto(served.url("/?open=ctx.show_part"))
    report(page, "ready")
    page.fill("#chat-input", "About this:")
    params = {
        "role": "user",
        "content": [{"type": "text", "text": "Help me design a bracket."}, LINK],
        "_meta": {"openai/message": {"send": False}},
    }
    assert ask(page, "draft", "ui/message", params) == {}
    assert page.input_value("#chat-input") == "About this: Help me design a bracket."
    draft = page.locator("#chat-context .chip-draft")
    assert draft.inner_text().startswith("washer")
    assert page.locator("#chat-log .msg.user").count() == 0  # nothing was sent
    assert page.locator("#confirm:not([hidden])").count() == 0
    screenshot(page, "message-draft.png")

    page.click("#chat-send")  # the person sends it
    page.locator("#chat-log .msg.assistant").wait_for()
    saved = httpx2.get(
        served.url(f"/apps/chat/{session_of(page)}"), verify=client_tls(), timeout=GUARD_S
    ).json()
    said = next(m["content"] for m in saved["messages"] if m["role"] == "user")
    assert said.startswith(MODEL_CONTEXT_MARK)
    assert "cad://parts/washer" in said
    assert said.endswith("About this: Help me design a bracket.")
    assert page.locator("#chat-context .chip").count() == 0


def test_a_message_to_a_new_chat_is_sent_once_the_person_allows_it(
    served: Served, page: Any
) -> None:
    open_from_chat(page, served)
    before = session_of(page)
    params = {
        "role": "user",
        "content": [{"type": "text", "text": "Start over with a washer."}],
        "_meta": {"openai/message": {"target": "new"}},
    }
    in_view(page, f"ask('new', 'ui/message', {json.dumps(params)});")
    page.locator("#confirm:not([hidden])").wait_for()
    assert "in a new chat" in page.inner_text("#confirm-text")
    page.click("#confirm-yes")
    assert report(page, "answers")["answers"].get("new") in ({}, None)
    page.locator("#chat-log .msg.assistant").wait_for()
    assert session_of(page) != before
    assert page.locator("#chat-log .msg.user").all_inner_texts() == ["Start over with a washer."]
    bad = {"role": "user", "content": [LINK], "_meta": {"openai/message": {"target": "elsewhere"}}}
    assert ask(page, "bad", "ui/message", bad)["error"]["code"] == -32602


def test_a_view_outside_a_chat_attaches_and_the_chips_alone_are_sent(
    served: Served, page: Any
) -> None:
    page.goto(served.url("/?open=ctx.show_part"))
    report(page, "ready")
    ask(page, "ctx", "ui/update-model-context", {"content": [LINK, HIDDEN]})
    page.locator("#chat-context .chip-context").wait_for()
    page.click("#chat-send")  # nothing typed: the chip alone
    assistant = page.locator("#chat-log .msg.assistant")
    assistant.wait_for()
    assert assistant.inner_text() == "Noted the context attached by ctx."
    assert page.locator("#chat-context .chip").count() == 0
    saved = httpx2.get(
        served.url(f"/apps/chat/{session_of(page)}"), verify=client_tls(), timeout=GUARD_S
    ).json()
    said = next(m["content"] for m in saved["messages"] if m["role"] == "user")
    assert "cad://parts/washer" in said
    assert "part id 42" in said

    # Such a view takes what it attached with it when it closes.
    ask(page, "again", "ui/update-model-context", {"content": [LINK]})
    page.locator("#chat-context .chip-context").wait_for()
    page.click("#canvas-close")
    page.locator("#chat-context .chip-context").wait_for(state="detached")
