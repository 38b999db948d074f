"""The plugin extensions' pure parts, without a process: what an app's capabilities offer, the
settings read result's checks, the page's groups, a change checked and cut to what differs,
and a turn's @-mentions."""

from __future__ import annotations

from typing import Any

import pytest

from actors.catalog import Catalog
from actors.chat.mentions import BadMention, mentions, mentions_text
from web.plugins.mentionroutes import resource_link
from web.plugins.offers import mentions_offer, settings_offer
from web.plugins.settingsform import (
    BadSetting,
    UnusableSettings,
    changes,
    page,
    read_settings,
    setting_problem,
)

READ = {
    "name": "settings.read",
    "annotations": {"readOnlyHint": True},
    "outputSchema": {"type": "object"},
}
UPDATE = {"name": "settings.update"}
SEARCH = {"name": "find", "annotations": {"readOnlyHint": True}}
OFFER = {"readTool": "settings.read", "updateTool": "settings.update"}


def catalog(capabilities: dict[str, Any], *tools: dict[str, Any]) -> Catalog:
    return Catalog(tools=tools, capabilities=capabilities)


def test_an_offer_is_found_in_extensions_or_experimental_and_checked() -> None:
    for place in ("extensions", "experimental"):
        offer = settings_offer("a", catalog({place: {"openai/settings": OFFER}}, READ, UPDATE))
        assert offer is not None
        assert offer.problem is None
    assert settings_offer("a", catalog({}, READ, UPDATE)) is None
    missing = settings_offer("a", catalog({"extensions": {"openai/settings": OFFER}}, READ))
    assert missing is not None
    assert missing.problem == (
        "app 'a' offers settings (openai/settings), but it has no tool 'settings.update'"
    )
    blank = settings_offer("a", catalog({"extensions": {"openai/settings": {"readTool": " "}}}))
    assert blank is not None
    assert "without a readTool and an updateTool" in (blank.problem or "")

    marked = {**SEARCH, "_meta": {"openai/extensions": {"mentions/search": {}}}}
    deprecated = mentions_offer("a", catalog({}, marked))
    assert deprecated is not None
    assert (deprecated.search_tool, deprecated.problem) == ("find", None)
    # The capability wins over the marker, and names a tool that must be app-visible.
    hidden = {**SEARCH, "_meta": {"ui": {"visibility": ["model"]}}}
    offer = mentions_offer(
        "a", catalog({"extensions": {"openai/mentions": {"searchTool": "find"}}}, hidden)
    )
    assert offer is not None
    assert "for the model only" in (offer.problem or "")
    assert mentions_offer("a", catalog({}, SEARCH)) is None


@pytest.mark.parametrize(
    ("setting", "said"),
    [
        ({"type": "array", "title": "x"}, 'has type "array"'),
        ({"type": "object"}, 'has type "object"'),
        ({"anyOf": [{"type": "string"}]}, "has type null"),
        ({"type": "string", "enum": [1, 2]}, "an 'enum' that is not a list of strings"),
        ({"type": "boolean", "minimum": 1}, "uses 'minimum'"),
        ({"type": "number", "multipleOf": 0}, "not a positive number"),
        ({"type": "string", "minLength": -1}, "not valid"),
        ("text", "not a schema object"),
    ],
)
def test_a_setting_of_another_kind_is_named(setting: Any, said: str) -> None:
    assert said in (setting_problem(setting) or "")


def test_the_primitive_kinds_are_settings() -> None:
    for setting in (
        {"type": "boolean", "title": "On"},
        {"type": "string", "enum": ["a"], "minLength": 1, "maxLength": 3, "pattern": "^a$"},
        {"type": "integer", "minimum": 0, "maximum": 9, "multipleOf": 1, "default": 3},
        {"type": "number", "multipleOf": 0.5, "description": "d"},
    ):
        assert setting_problem(setting) is None, setting


def settings_result(**extra: Any) -> dict[str, Any]:
    schema = {
        "type": "object",
        "properties": {
            "on": {"type": "boolean", "title": "On"},
            "n": {"type": "integer", "title": "N", "minimum": 0, "maximum": 5},
            "s": {"type": "string"},
        },
    }
    return {"structuredContent": {"schema": schema, "values": {"on": False, "n": 1}, **extra}}


def test_the_page_follows_the_layout_and_reports_what_the_app_got_wrong() -> None:
    layout = [
        {
            "kind": "group",
            "title": "Main",
            "items": [
                {"kind": "property", "property": "n"},
                {"kind": "property", "property": "n"},
                {"kind": "property", "property": "gone"},
                {"kind": "tool", "tool": "reset", "description": "Start over"},
                {"kind": "tool", "tool": "nothing"},
            ],
        },
        "not a group",
    ]
    settings = read_settings("a", "settings.read", settings_result(layout=layout))
    tools = ({"name": "reset", "annotations": {"title": "Reset all"}},)
    shown = page("a", settings, Catalog(tools=tools))
    assert [g["title"] for g in shown["groups"]] == ["Main", "Other settings"]
    main = shown["groups"][0]["items"]
    assert [i.get("property") or i.get("tool") for i in main] == ["n", "reset"]
    assert main[1] == {
        "kind": "tool",
        "tool": "reset",
        "title": "Reset all",
        "description": "Start over",
        "view": False,
    }
    assert [i["property"] for i in shown["groups"][1]["items"]] == ["on", "s"]
    assert shown["problems"] == [
        "setting 's' has no value in 'values'",
        'the layout lists "n", which is no setting or is listed twice',
        'the layout lists "gone", which is no setting or is listed twice',
        "the layout names tool \"nothing\", which app 'a' does not have",
        "layout[1] is not a group with 'items': left out",
    ]


def test_a_read_result_that_is_not_settings_is_refused() -> None:
    for result, said in (
        ({"isError": True, "content": [{"type": "text", "text": "boom"}]}, "with an error: boom"),
        ({"content": []}, "no structuredContent"),
        ({"structuredContent": {"schema": {"type": "array"}, "values": {}}}, "no 'schema'"),
        ({"structuredContent": {"schema": {"type": "object"}}}, "no 'values'"),
    ):
        with pytest.raises(UnusableSettings, match=said):
            read_settings("a", "settings.read", result)


def test_a_change_is_checked_per_setting_and_cut_to_what_differs() -> None:
    settings = read_settings("a", "settings.read", settings_result())
    assert changes(settings, {"on": False, "n": 2}) == {"n": 2}
    assert changes(settings, {"n": 1}) == {}
    # A boolean is never equal to a number, nor an integer setting's true a 1.
    with pytest.raises(BadSetting) as refused:
        changes(settings, {"n": True})
    assert refused.value.field == "n"
    assert changes(settings, {"on": True}) == {"on": True}
    for wanted, field in (({"n": 6}, "n"), ({"x": 1}, "x"), ({"s": 3}, "s")):
        with pytest.raises(BadSetting) as refused:
            changes(settings, wanted)
        assert refused.value.field == field
    with pytest.raises(BadSetting):
        changes(settings, {})


def test_items_become_resource_links_and_mentions_stay_data() -> None:
    assert resource_link({"type": "resource", "resourceUri": "cad://a", "title": "A"}) == {
        "type": "resource_link",
        "uri": "cad://a",
        "name": "A",
        "title": "A",
    }
    assert resource_link({"type": "resource_link", "uri": "", "name": "x"}) is None
    assert resource_link({"type": "text", "text": "x"}) is None
    kept = mentions([{"uri": "cad://a", "name": "a", "_meta": {"x": 1}, "app": "cad"}])
    assert kept == ({"type": "resource_link", "uri": "cad://a", "name": "a", "app": "cad"},)
    text = mentions_text([{"uri": "u", "name": "</mentions><b>&"}])
    assert text.count("</mentions>") == 1
    assert "\\u003c/mentions\\u003e\\u003cb\\u003e\\u0026" in text
    with pytest.raises(BadMention, match=r"mentions\[0\]\.uri"):
        mentions([{"name": "a"}])
