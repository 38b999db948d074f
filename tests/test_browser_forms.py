"""Rich forms (OpenAI form elicitation) in the control page, in headless Chromium against a real
`mcpapps run` hosting an app built with the OpenAI extensions SDK (tests/apps/forms_app.py):
a form asked during a chat turn's tool call is shown with its pattern, option descriptions,
thumbnails (https: and data:, a fallback for the rest), suggested values (one, and several with
an entry of the person's own), and resource selection (single, explicit, implicit); a bad
answer is refused at its field and the form stays open; the answer reaches the app. A form with
an input type we do not support never appears, and the page itself shows no thumbnail from an
http: or javascript: address."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support import chromium
from tests.support.controlpage import (  # the page fixture, as the page's own tests use
    Served,
    page,
    screenshot,
    view,
)
from tests.support.forms import forms_manifest
from tests.support.helpers import free_port_pair

__all__ = ["page"]  # the fixture, used by name (the browser is conftest.py's)

DOT_PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    chromium.require()
    root = tmp_path_factory.mktemp("forms")
    port = free_port_pair()
    folder = root / "apps" / "forms"
    folder.mkdir(parents=True)
    (folder / "openclaw.mcpapp.json").write_text(json.dumps(forms_manifest("forms")))
    (root / "config.toml").write_text(
        f'[sandbox]\nport = {port + 1}\n[apps]\ndiscovery_paths = ["./apps"]\n'
        '[apps.entries.forms]\napproval = "never"\n'  # the view's call runs without asking
    )
    supervisor = Served(root, port)
    supervisor.start()
    yield supervisor
    supervisor.stop()


def start_turn(page: Any, served: Served, message: str) -> None:
    page.goto(served.url("/"))
    page.locator("#live.live").wait_for()
    page.locator('#apps li[data-app-id="forms"] .state-Running').wait_for()
    page.fill("#chat-input", message)
    page.click("#chat-send")


def tool_result(page: Any) -> str:
    page.locator("#chat-send:not([disabled])").wait_for()
    return str(page.locator("#chat-log details.tool pre").last.text_content())


def test_a_rich_form_is_shown_whole_and_answered_from_the_chat(served: Served, page: Any) -> None:
    # The https: thumbnail is served by the browser's own route (no network here): it loads,
    # so the page's policy lets https: images in.
    page.route(
        "https://example.com/**",
        lambda route: route.fulfill(status=200, content_type="image/png", body=DOT_PNG),
    )
    start_turn(page, served, "/call forms.order_parts {}")
    ask = page.locator("#chat-log .ask").last
    ask.wait_for()
    assert "forms asks (forms.order_parts)" in ask.inner_text()

    # A pattern, and a suggested value taken with a click.
    code = ask.locator("input[name=code]")
    assert code.get_attribute("pattern") == "^[A-Z]{3}-[0-9]{2}$"
    assert "^[A-Z]{3}-[0-9]{2}$" in ask.locator("[data-field=code] .rich-pattern").inner_text()

    # Options with descriptions and thumbnails; one without a thumbnail gets the fallback.
    finish = ask.locator("fieldset[data-field=finish]")
    zinc = finish.locator(".rich-option[data-value=zinc]")
    assert zinc.locator(".rich-option-description").inner_text() == "Grey, keeps rust away"
    assert zinc.locator("img.rich-thumb").get_attribute("src").startswith("data:image/png;base64,")
    black = finish.locator(".rich-option[data-value=black] img.rich-thumb")
    assert black.get_attribute("src") == "https://example.com/black.png"
    page.wait_for_function(
        "(img) => img.complete && img.naturalWidth > 0", arg=black.element_handle()
    )
    assert finish.locator(".rich-option[data-value=plain] .rich-thumb-fallback").count() == 1
    finish.locator(".rich-option[data-value=black] input").check()

    # Suggested array values, and one of the person's own.
    tags = ask.locator("fieldset[data-field=tags]")
    tags.locator(".rich-option[data-value=urgent] input").check()
    assert (
        tags.locator(".rich-option[data-value=gift] .rich-option-description").inner_text()
        == "Wrapped"
    )
    tags.locator("input[name=tags-entry]").fill("custom-tag")
    tags.locator("button.rich-add-button").click()
    assert tags.locator(".rich-own-value").get_attribute("data-value") == "custom-tag"

    # Resources: one of the options; explicit (the app's default ticked); implicit (all in).
    part = ask.locator("fieldset[data-field=part]")
    bolt = part.locator(".rich-option[data-value='cad://parts/hex-bolt']")
    assert bolt.locator("img.rich-thumb").count() == 1
    assert bolt.locator(".rich-option-title").inner_text() == "M6 hex bolt"
    part.locator(".rich-option[data-value='cad://parts/spring'] input").check()
    extras = ask.locator("fieldset[data-field=extras]")
    assert extras.locator(".rich-option[data-value='cad://parts/washer'] input").is_checked()
    extras.locator(".rich-option[data-value='cad://parts/hex-bolt'] input").check()
    kit = ask.locator("fieldset[data-field=kit]")
    assert kit.locator(".rich-option").count() == 2
    kit.locator(".rich-option[data-value='cad://parts/washer'] button[data-action=remove]").click()
    assert kit.locator(".rich-option.removed").get_attribute("data-value") == "cad://parts/washer"

    # A code that breaks the pattern is refused, naming the field; the form stays open.
    code.fill("abc")
    ask.locator("button[data-action=accept]").click()
    ask.locator(".ask-status.error").wait_for()
    assert "code: 'abc' does not match" in ask.locator(".ask-status").inner_text()
    ask.locator("[data-field=code] button[data-suggestion='ABC-12']").click()
    assert code.input_value() == "ABC-12"
    screenshot(page, "rich-form.png")
    ask.locator("button[data-action=accept]").click()
    ask.locator(".ask-status", has_text="answered: accept").wait_for()

    result = tool_result(page)
    assert result.startswith("accepted "), result
    got = json.loads(result.removeprefix("accepted "))
    assert got == {
        "code": "ABC-12",
        "finish": "black",
        "tags": ["urgent", "custom-tag"],
        "part": "cad://parts/spring",
        "extras": ["cad://parts/hex-bolt", "cad://parts/washer"],  # in the options' order
        "kit": ["cad://parts/hex-bolt"],
    }


def test_a_form_with_an_unknown_input_type_is_never_shown(served: Served, page: Any) -> None:
    start_turn(page, served, "/call forms.unknown_input {}")
    result = tool_result(page)
    assert "this host cannot show the form" in result
    assert "input type 'color'" in result
    assert page.locator("#chat-log .ask").count() == 0


def test_the_page_shows_no_thumbnail_from_an_unsafe_address(served: Served, page: Any) -> None:
    page.goto(served.url("/"))
    shown = page.evaluate(
        """async () => {
            const { safeImage } = await import("/static/js/richform.js");
            return [
                "https://example.com/a.png",
                "data:image/png;base64,iVBORw0KGgo=",
                "http://example.com/a.png",
                "javascript:alert(1)",
                "data:text/html;base64,PHNjcmlwdD4=",
                "/static/a.png",
            ].map((src) => safeImage({ src }));
        }"""
    )
    assert shown == [
        "https://example.com/a.png",
        "data:image/png;base64,iVBORw0KGgo=",
        None,
        None,
        None,
        None,
    ]


def test_a_view_s_call_asks_with_a_rich_form_in_the_chat(served: Served, page: Any) -> None:
    """The view calls the tool; the app's rich form comes back on the view's call and is shown
    in the chat pane, whole; the answer goes back to the app, and the view gets the result."""
    page.goto(served.url("/?open=forms.order_view"))
    view(page).locator("#order:not([disabled])").click()
    ask = page.locator("#chat-log .ask").last
    ask.locator("fieldset[data-field=kit]").wait_for()  # drawn by richform.js
    ask.locator("[data-field=code] button[data-suggestion='ABC-12']").click()
    ask.locator("fieldset[data-field=finish] .rich-option[data-value=plain] input").check()
    ask.locator(
        "fieldset[data-field=part] .rich-option[data-value='cad://parts/washer'] input"
    ).check()
    ask.locator("button[data-action=accept]").click()
    result = view(page).locator("#result", has_text="accepted")
    result.wait_for()
    got = json.loads(result.inner_text().removeprefix("accepted "))
    assert (got["code"], got["finish"], got["part"]) == ("ABC-12", "plain", "cad://parts/washer")
    assert got["kit"] == ["cad://parts/hex-bolt", "cad://parts/washer"]  # all in, none removed
