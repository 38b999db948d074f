"""The plugin extensions in the control page, in headless Chromium against a real `mcpapps run`
hosting apps built with the OpenAI extensions SDK (tests/apps/extensions_app.py): an app's
settings page (a value changed and read back from the app, a bad value refused naming the
setting, a tool action, an unsupported schema refused), an @-mention chosen in the composer and
carried by the turn, and "Set up" starting a chat with the app's setup skill."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from actors.chat.mentions import MENTIONS_MARK
from actors.tls import client_tls
from tests.support import chromium
from tests.support.controlpage import (  # the page fixture, as the page's own tests use
    Served,
    app_item,
    page,
    screenshot,
)
from tests.support.extensions import extensions_manifest
from tests.support.helpers import free_port_pair
from tests.support.running import GUARD_S

__all__ = ["page"]  # the fixture, used by name (the browser is conftest.py's)

SKILL = "# Set up the parts library\nAsk which units the person works in.\n"


def write_project(root: Path, sandbox_port: int) -> None:
    manifests = {
        "ext": extensions_manifest("ext", onboardingSkill="skills/setup/SKILL.md"),
        "bad-mentions": extensions_manifest("bad-mentions", "--hostile", "mentions-not-read-only"),
        "bad-settings": extensions_manifest(
            "bad-settings", "--hostile", "settings-unsupported-type"
        ),
    }
    for app_id, manifest in manifests.items():
        folder = root / "apps" / app_id
        folder.mkdir(parents=True)
        (folder / "openclaw.mcpapp.json").write_text(json.dumps(manifest))
    (root / "apps" / "ext" / "skills" / "setup").mkdir(parents=True)
    (root / "apps" / "ext" / "skills" / "setup" / "SKILL.md").write_text(SKILL)
    (root / "config.toml").write_text(
        f'[sandbox]\nport = {sandbox_port}\n[apps]\ndiscovery_paths = ["./apps"]\n'
    )


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    chromium.require()
    root = tmp_path_factory.mktemp("plugins")
    port = free_port_pair()
    write_project(root, port + 1)
    supervisor = Served(root, port)
    supervisor.start()
    yield supervisor
    supervisor.stop()


def ready(page: Any, served: Served, path: str = "/") -> None:
    page.goto(served.url(path))
    for app_id in ("ext", "bad-mentions", "bad-settings"):
        app_item(page, app_id).locator(".state-Running").wait_for()


def app_values(served: Served) -> dict[str, Any]:
    """What the app itself says its settings are."""
    response = httpx2.post(
        served.url("/admin/call"),
        json={"name": "ext.current_settings", "arguments": {}},
        verify=client_tls(),
        timeout=GUARD_S,
    )
    return response.json()["result"]["structuredContent"]


def saved_user_messages(served: Served, page: Any) -> list[str]:
    session = page.evaluate("localStorage.getItem('mcpapps.chat.session')")
    saved = httpx2.get(
        served.url(f"/apps/chat/{session}"), verify=client_tls(), timeout=GUARD_S
    ).json()
    return [m["content"] for m in saved["messages"] if m["role"] == "user"]


def test_the_settings_page_changes_a_value_and_refuses_a_bad_one(served: Served, page: Any) -> None:
    ready(page, served)
    app_item(page, "ext").locator("[data-command=settings]").click()
    form = page.locator("#settings-form")
    form.wait_for()
    assert "settings=ext" in page.url  # a link to this page
    legends = form.locator("legend").all_inner_texts()
    assert legends == ["Display", "Library", "Other settings"]
    assert form.locator("select[data-setting=units]").input_value() == "in"
    assert form.locator("input[data-setting=showGrid]").get_attribute("type") == "checkbox"
    zoom = form.locator("input[data-setting=zoom]")
    assert zoom.get_attribute("type") == "number"
    assert (zoom.get_attribute("min"), zoom.get_attribute("max")) == ("1", "10")
    assert form.locator("input[data-setting=label]").get_attribute("pattern") == "^[a-z]+$"

    zoom.fill("7")
    form.locator("input[data-setting=showGrid]").check()
    page.click("#settings-save")
    page.locator("#settings-status", has_text="Saved").wait_for()
    assert page.inner_text("#settings-status") == "Saved: showGrid, zoom."
    assert app_values(served)["zoom"] == 7
    assert app_values(served)["showGrid"] is True
    screenshot(page, "settings-page.png")

    zoom.fill("11")
    page.click("#settings-save")
    error = form.locator("[data-error-for=zoom]")
    error.wait_for()
    assert "'zoom' (Zoom) cannot be 11" in error.inner_text()
    assert app_values(served)["zoom"] == 7  # the app never saw it

    form.locator("button[data-tool=reset_cache]").click()
    page.locator("[data-outcome-for=reset_cache].ok").wait_for()
    assert page.inner_text("[data-outcome-for=reset_cache]") == "cache cleared (5 parts)"
    # A UI tool's action opens its view in the canvas, beside the settings.
    form.locator("button[data-tool=library]").click()
    page.locator("#canvas iframe").wait_for()
    assert page.locator("#settings-form").is_visible()


def test_a_settings_schema_with_an_unsupported_type_is_refused(served: Served, page: Any) -> None:
    ready(page, served, "/?settings=bad-settings")
    refusal = page.locator("#settings-refusal")
    refusal.wait_for()
    assert "'when'" in refusal.inner_text()
    assert 'type "array"' in refusal.inner_text()
    assert page.locator("#settings-form").count() == 0  # nothing shown in part


def test_an_at_mention_is_chosen_and_carried_by_the_turn(served: Served, page: Any) -> None:
    ready(page, served)
    page.locator("#chat-input").press_sequentially("which @nu", delay=20)
    items = page.locator("#mention-list [data-app=ext] .mention-item")
    items.first.wait_for()
    assert items.all_inner_texts() == ["Hex-Nut", "Wing-Nut"]
    skipped = page.locator("#mention-list .mention-skipped[data-app=bad-mentions]")
    assert "not marked read-only" in skipped.inner_text()
    screenshot(page, "mention-search.png")
    items.first.click()
    chip = page.locator("#chat-mentions .chip")
    assert chip.inner_text().startswith("@Hex-Nut")
    assert page.input_value("#chat-input") == "which "
    page.click("#chat-send")
    page.locator("#chat-log .msg.assistant").wait_for()
    assert page.locator("#chat-mentions .chip").count() == 0  # sent with the turn
    said = saved_user_messages(served, page)[-1]
    assert said.startswith(MENTIONS_MARK)
    assert '"uri": "cad://parts/hex-nut"' in said
    assert '"app": "ext"' in said
    assert said.endswith("which")

    # Enter takes the first suggestion rather than sending "@wing" as text.
    page.locator("#chat-input").press_sequentially("and @wing", delay=20)
    page.locator("#mention-list .mention-item").first.wait_for()
    page.locator("#chat-input").press("Enter")
    assert page.locator("#chat-mentions .chip").inner_text().startswith("@Wing-Nut")
    assert page.input_value("#chat-input") == "and "


def test_set_up_starts_a_chat_with_the_app_s_skill(served: Served, page: Any) -> None:
    ready(page, served)
    assert app_item(page, "bad-mentions").locator("[data-command=set-up]").count() == 0
    app_item(page, "ext").locator("[data-command=set-up]").click()
    page.locator("#chat-log .msg.user", has_text="Set up ext").wait_for()
    page.locator("#chat-send:not([disabled])").wait_for()
    [first] = saved_user_messages(served, page)
    assert first.startswith("Set up the app 'ext'")
    assert SKILL in first
